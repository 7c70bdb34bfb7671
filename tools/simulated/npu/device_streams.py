"""torch.npu's streams and events on the simulated NPU: one synchronous stream per device, nothing to switch."""

# Stream and Event derive from torch.Stream / torch.Event (what Dynamo captures), but their constructors return
# plain torch.Stream / torch.Event objects on the npu device: torch checks the exact type of the other event in
# Event.elapsed_time (torch >= 2.9), so instances of a Python subclass could not be timed against each other.

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from npu_inductor_compat.tools.simulated.npu import device_state
from npu_inductor_compat.tools.simulated.npu.device_api import index_of
from npu_inductor_compat.tools.simulated.npu.device_state import DEVICE

__all__ = ["API", "Event", "Stream", "current_stream", "default_stream", "set_stream", "stream"]


class Stream(torch.Stream):  # type: ignore[misc]
    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> torch.Stream:  # type: ignore[misc]
        device_state.ensure()
        if "stream_id" in kwargs:  # rebuilt from (stream_id, device_index, device_type)
            return torch.Stream(priority=priority, **kwargs)
        return torch.Stream(device=torch.device(DEVICE, index_of(device)), priority=priority)


class Event(torch.Event):  # type: ignore[misc]
    def __new__(  # type: ignore[misc]
        cls,
        device: Any = None,
        enable_timing: bool = False,
        blocking: bool = False,
        interprocess: bool = False,
    ) -> torch.Event:
        device_state.ensure()
        return torch.Event(
            device=torch.device(DEVICE, index_of(device)),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )


class _NpuStream(torch.Stream):  # type: ignore[misc]
    """What torch.npu.current_stream() answers: a stream with torch_npu's ``npu_stream``, the raw handle
    (torch_npu/npu/streams.py Stream, from THNPStream's npu_stream in torch_npu/csrc/npu/Stream.cpp), which
    torch_npu's own wrappers launch on (torch_npu/_inductor/utils.py get_current_raw_stream)."""

    @property
    def npu_stream(self) -> int:
        from npu_inductor_compat.tools.simulated.npu.device_api import _get_current_raw_stream

        return _get_current_raw_stream(self.device_index)


def current_stream(device: Any = None) -> torch.Stream:
    device_state.ensure()
    return _NpuStream(device=torch.device(DEVICE, index_of(device)))


def default_stream(device: Any = None) -> torch.Stream:
    return current_stream(device)


def set_stream(stream: Any) -> None:
    """There is one stream: nothing to switch."""


def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
    """There is one stream: nothing to switch."""


@contextlib.contextmanager
def stream(stream: Any) -> Iterator[Any]:
    yield stream


# What torch.npu gets from this module (device.py builds torch.npu), each under its own name.
API = (Stream, Event, current_stream, default_stream, set_stream, _set_stream_by_id, stream)
