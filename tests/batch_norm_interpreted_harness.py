"""Batch norm's kernels from torch_npu's released codegen in Triton's interpreter against torch: the statistics of the
forward (examples/torch_npu_batch_norm.py) and the per-channel sums of a channels-last backward."""

# Shared by the tests of the records that make those kernels compile (test_torch_npu_tiling.py,
# test_torch_npu_store.py): TRITON_INTERPRET=1 runs the real triton.language on CPU tensors, with each config
# torch_npu's heuristics gave the kernel; the launch comes from the wrapper torch_npu wrote
# (torch_npu_codegen_harness.py).

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch_npu_codegen_harness as harness  # registered by conftest.py

CHANNELS_LAST = harness.BATCH_NORM.with_name("torch_npu_channels_last_batch_norm.py")


def two_reduction_kernels(out: Path, summary: dict[str, Any]) -> dict[str, str]:
    return {
        name: source
        for graph in (0, 1)
        for name, source in harness.kernel_sources(out, summary, graph).items()
        if "'numof_reduction_axis': 2" in source
    }


# The child scripts' common part: the kernel launched with each config (``outputs`` zeroed first, each among
# ``arguments``) and, per config, the launch's error or for each output the expected statistic of its shape closest to
# it and how far; and the checks of one such result: every output within ``tolerance`` of one of ``count``
# statistics, all covered, or each of a different one.
CLOSEST_PER_CONFIG = r"""

def closest_per_config(arguments, outputs, expected):
    results = []
    for config in configs:
        for out in outputs:
            out.zero_()
        error = launched(config, arguments)
        if error is not None:
            results.append({"config": config, "error": error})
            continue
        closest = [
            min(((out - want).abs().max().item(), i) for i, want in enumerate(expected) if want.shape == out.shape)
            for out in outputs
        ]
        results.append({"config": config, "error": None, "closest": closest})
    return results
"""


def each_output_one_statistic(result: dict[str, Any], tolerance: float, count: int) -> bool:
    return (
        result["error"] is None
        and all(error <= tolerance for error, _ in result["closest"])
        and sorted(statistic for _, statistic in result["closest"]) == list(range(count))
    )


def each_output_its_own_statistic(result: dict[str, Any], tolerance: float) -> bool:
    statistics = [statistic for _, statistic in result.get("closest", [])]
    return (
        result["error"] is None
        and bool(statistics)
        and all(error <= tolerance for error, _ in result["closest"])
        and len(set(statistics)) == len(statistics)
    )


# The batch-norm statistics kernel of the forward graph in Triton's interpreter, with each config torch_npu gave it.
# Its inputs from the wrapper's launch line: the convolution's output (its one buffer input) and the running mean and
# variance (the module's buffers, lifted by dynamo as primals in that order); every output pointer gets a zeroed
# tensor. Its outputs are the batch mean, 1/sqrt(var + eps) and the updated running statistics, in an order of
# torch_npu's choosing: each must be one of them, all four covered.
FORWARD_STATISTICS = (
    CLOSEST_PER_CONFIG
    + r"""

torch.manual_seed(0)
y = torch.randn(2, 8, 8, 8)
running_mean, running_var = torch.randn(8), torch.rand(8) + 0.5
expected = [
    y.mean((0, 2, 3)),
    running_mean * 0.9 + y.mean((0, 2, 3)) * 0.1,
    (y.var((0, 2, 3), unbiased=False) + 1e-5).rsqrt(),
    running_var * 0.9 + y.var((0, 2, 3), unbiased=True) * 0.1,
]
running = iter([running_mean, running_var])
arguments, outputs = [], []
for param, value in zip(launch["params"], launch["pointers"]):
    if param.startswith("in_ptr"):
        arguments.append(next(running) if value.startswith("primals_") else y)
    else:
        outputs.append(torch.zeros(8))
        arguments.append(outputs[-1])
print(json.dumps({"results": closest_per_config(arguments, outputs, expected)}))
"""
)


def interpreted(script: str, out: Path, summary: dict[str, Any], graph: int, name: str) -> list[dict[str, Any]]:
    """``script`` (one of the two above) run on kernel ``name`` of ``graph`` with every config the kernel check
    lowered for it (each must have lowered)."""
    checked = summary["graphs"][graph]["kernel_check"][name]
    assert checked and all(result["ok"] for result in checked), (name, checked)
    source = harness.kernel_sources(out, summary, graph)[name]
    wrapper = (out / summary["graphs"][graph]["files"]["wrapper"]).read_text()
    configs = [result["config"] for result in checked]
    results: list[dict[str, Any]] = harness.interpret(script, source, wrapper, name, configs)["results"]
    return results


def forward_statistics_right(out: Path, summary: dict[str, Any], two_axes: dict[str, str]) -> None:
    """The forward graph's first kernel among ``two_axes`` in the interpreter, with every config it lowered for: each
    output one of the four statistics, to float32 rounding, and none left out."""
    name = next(name for name in harness.kernel_sources(out, summary, 0) if name in two_axes)
    results = interpreted(FORWARD_STATISTICS, out, summary, 0, name)
    assert len(results) == len(summary["graphs"][0]["kernel_check"][name]) >= 1
    for result in results:
        assert each_output_one_statistic(result, 1e-5, 4), result


# The batch-norm backward kernel of the channels-last script in Triton's interpreter, with each config torch_npu gave
# it. Its inputs from the wrapper's launch line: the gradient (tangents_*, contiguous), the input (the 4-d primals_*,
# channels-last in memory), the weight where the kernel takes it (the 1-d primals_*) and two per-channel buffers, the
# batch mean and 1/std in an order this script does not know: it runs both orders. Its outputs, per channel: the
# gradient's sum, its sum against (x - mean) and that times 1/std (the weight's gradient); where torch_npu fuses it
# (2.11.0.post3, 2.12.0.post3), the input's gradient too, in the buffer the wrapper allocates for it. Each output must
# be a different one of them.
CHANNELS_LAST_BACKWARD = (
    CLOSEST_PER_CONFIG
    + r"""

torch.manual_seed(0)
x = torch.randn(2, 8, 4, 4).contiguous(memory_format=torch.channels_last)
grad = torch.randn(2, 8, 4, 4)
mean = x.mean((0, 2, 3))
invstd = (x.var((0, 2, 3), unbiased=False) + 1e-5).rsqrt()
weight = torch.rand(8) + 0.5
per_channel = lambda t: t[None, :, None, None]
centred = (grad * (x - per_channel(mean))).sum((0, 2, 3))
centred_part = (x - per_channel(mean)) * per_channel(centred / 32 * invstd**2)
input_grad = (grad - per_channel(grad.sum((0, 2, 3)) / 32) - centred_part) * per_channel(invstd * weight)
expected = [grad.sum((0, 2, 3)), centred, centred * invstd, input_grad.contiguous()]
results = []
for order in ([mean, invstd], [invstd, mean]):
    channel, arguments, outputs = iter(order), [], []
    for param, value in zip(launch["params"], launch["pointers"]):
        shape = launch["shapes"].get(value, [8])
        if param.startswith("in_ptr"):
            if value.startswith("tangents"):
                arguments.append(grad)
            elif value.startswith("primals"):
                arguments.append(x if len(shape) == 4 else weight)
            else:
                arguments.append(next(channel))
        else:
            outputs.append(torch.zeros(shape))
            arguments.append(outputs[-1])
    results += closest_per_config(arguments, outputs, expected)
print(json.dumps({"results": results}))
"""
)


def channels_last_backward_right(out: Path, summary: dict[str, Any]) -> str:
    """The backward graph's kernel that reduces over two axes in the interpreter, with every config it lowered for
    and both orders of its per-channel inputs: every config right with one order (each output a different one of
    the expected results, to float32 rounding). Returns its source."""
    kernels = harness.kernel_sources(out, summary, 1)
    name = next(name for name, source in kernels.items() if "'numof_reduction_axis': 2" in source)
    results = interpreted(CHANNELS_LAST_BACKWARD, out, summary, 1, name)
    configs = len(summary["graphs"][1]["kernel_check"][name])
    assert len(results) == 2 * configs
    matched = [result for result in results if each_output_its_own_statistic(result, 1e-4)]
    assert len(matched) == configs, results
    return kernels[name]


# torch 2.13 and 2.14 tile the channels-last script's pointwise copies in two dimensions, which the index kernel of
# torch_npu 2.13.0 and 2.14.0 cannot split (_split_iteration_ranges raises CantSplit): torch_npu's own fallback takes
# those kernels to its no_linear kernel, and the run exits 1 naming them (docs/torch-npu-reports.md)
COPIES_NOT_SPLIT = ("2.13.0", "2.14.0")


def channels_last_run_checked(release: str, run: Any) -> None:
    """The channels-last script's run with both batch-norm records: every config of every kernel lowers, and no
    kernel falls back but, on a release of COPIES_NOT_SPLIT, its pointwise copies for CantSplit."""
    check, fallbacks = run.summary["kernel_check"], run.summary["torch_npu_wheel"]["fallbacks"]
    assert run.problems == [] and check["error"] is None and check["rejected"] == 0, (check, run.stderr[-3000:])
    if release not in COPIES_NOT_SPLIT:
        assert run.returncode == 0 and fallbacks == [], run.stderr[-3000:]
        return
    assert run.returncode == 1 and fallbacks, run.stderr[-3000:]
    for fallback in fallbacks:
        assert fallback["fallback"] == "linear -> no_linear" and "CantSplit" in fallback["error"], fallback
        assert all(kernel.startswith("triton_poi_") for kernel in fallback["kernels"]), fallback
    # their no_linear kernels' SIMT-only configs have no linalg stage (triton-ascend compiles them with CANN)
    simt = [
        result
        for graph in run.summary["graphs"]
        for results in graph["kernel_check"].values()
        for result in results
        if result["config"].get("compile_mode") == "simt_only"
    ]
    assert simt and all(result["stage"] == "ttir-passes" and "CANN" in result["note"] for result in simt), simt[:3]
