"""torch.npu's seed and RNG-state functions on the simulated NPU: they act on the CPU default generator."""

# The CPU fallback runs random kernels on CPU with the CPU default generator, which the extension's hooks also
# report as the npu default generator: torch.npu.manual_seed seeds the CPU generator.

from __future__ import annotations

from typing import Any

import torch

from npu_inductor_compat.tools.simulated.npu.device_api import index_of
from npu_inductor_compat.tools.simulated.npu.device_state import DEVICE, DEVICE_COUNT

__all__ = [
    "API",
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_rng_state",
    "set_rng_state_all",
]


def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> int:
    return int(torch.default_generator.seed())


def seed_all() -> int:
    return seed()


def initial_seed() -> int:
    return int(torch.default_generator.initial_seed())


def get_rng_state(device: Any = DEVICE) -> torch.Tensor:
    index_of(device)
    return torch.default_generator.get_state()


def set_rng_state(new_state: torch.Tensor, device: Any = DEVICE) -> None:
    index_of(device)
    torch.default_generator.set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(DEVICE_COUNT)]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# What torch.npu gets from this module (device.py builds torch.npu), each under its own name.
API = (
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    initial_seed,
    get_rng_state,
    set_rng_state,
    get_rng_state_all,
    set_rng_state_all,
)
