"""`codegen --execute`'s judgement on small crafted values and graphs: tolerances by dtype, NaN and inf places,
shapes, strides and dtypes; values RNG made; each config's verdict; the kernel a mismatch is pinned on."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from npu_inductor_compat.tools.simulated.execution.execute import Execution, _compare, _localise
from npu_inductor_compat.tools.simulated.execution.execute_launch import ConfigRun, Launch, Session, _checks, judge
from npu_inductor_compat.tools.simulated.execution.execute_values import copied, difference, random_nodes


def test_values_within_torch_testing_tolerance_of_their_dtype_agree_and_beyond_it_do_not() -> None:
    want = torch.linspace(1, 2, 64)
    assert difference(want, want * (1 + 1e-7)) is None  # float32: rtol 1.3e-6
    found = difference(want, want * (1 + 1e-4))
    assert found is not None and found["elements"] == 64 and found["max_rel"] == pytest.approx(1e-4, rel=1e-2)
    half = want.to(torch.bfloat16)
    assert difference(half, (half.float() * (1 + 4e-3)).to(torch.bfloat16)) is None  # bfloat16: rtol 1.6e-2


def test_nan_and_inf_must_sit_where_eager_has_them() -> None:
    want = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    assert difference(want, want.clone()) is None
    assert "NaN in 2 other place" in difference(want, torch.tensor([float("nan"), 1.0, float("inf"), -1.0]))["problem"]
    assert "inf in 1 other place" in difference(want, torch.tensor([1.0, float("nan"), float("inf"), 0.0]))["problem"]
    assert difference(want, torch.tensor([1.0, float("nan"), -float("inf"), -float("inf")])) is not None


def test_shape_dtype_and_strides_are_compared_and_size_one_strides_are_free() -> None:
    want = torch.arange(6.0).reshape(2, 3)
    assert "shape (3, 2)" in difference(want, want.t().contiguous())["problem"]
    assert "dtype torch.float64" in difference(want, want.double())["problem"]
    transposed = want.t().contiguous().t()  # same values, column-major
    assert "strides (1, 2)" in difference(want, transposed)["problem"]
    assert difference(want, transposed, strides=False) is None  # a written buffer's values only
    row = torch.arange(3.0).reshape(1, 3)
    assert difference(row, torch.as_strided(row.clone(), (1, 3), (99, 1))) is None
    assert "1 of 3 element(s) differ" in difference(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4]))["problem"]


def test_copies_keep_strides_and_are_detached() -> None:
    leaf = torch.randn(3, 4, requires_grad=True)
    copy = copied(leaf.t())
    assert copy.stride() == leaf.t().stride() and not copy.requires_grad and torch.equal(copy, leaf.t())
    assert copied(3) == 3


def _traced(fn: Any, *args: Any) -> Any:
    from torch.fx.experimental.proxy_tensor import make_fx

    return make_fx(fn)(*args)


def test_values_made_by_rng_and_everything_computed_from_them_are_found() -> None:
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        noisy = x + torch.rand_like(x)
        return x.sin(), noisy.relu()

    graph = _traced(fn, torch.randn(4)).graph
    tainted = random_nodes(graph)
    outputs = next(node for node in graph.nodes if node.op == "output").args[0]
    assert outputs[0].name not in tainted and outputs[1].name in tainted


def test_a_random_output_is_reported_random_never_compared_and_a_wrong_one_is_a_mismatch() -> None:
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x * 2, torch.rand_like(x)

    x = torch.randn(4)
    graph = _traced(fn, x).graph
    eager = [x * 2, torch.rand(4)]
    values = _compare(graph, eager, [x * 2 + 1, torch.rand(4)], [x], [x.clone()], lambda: None)
    assert [value["status"] for value in values] == ["mismatch", "random"]
    assert values[0]["value"].startswith("output 0")


def test_an_input_the_compiled_run_left_different_is_a_mismatch() -> None:
    graph = _traced(lambda x: x.add_(1), torch.zeros(3)).graph
    x = torch.zeros(3)
    values = _compare(graph, [x + 1], [x + 1], [x + 1], [x + 2], lambda: None)
    assert [value["status"] for value in values] == ["match", "mismatch"] and values[1]["value"].startswith("input 0")


class _Config:
    def __init__(self, **kwargs: int) -> None:
        self.kwargs = kwargs


def _launch(kernel: str, written: list[str], session: Session, results: list[Any]) -> Launch:
    """A launch as _launch_every_config records it: config 0's result first, each config's comparisons."""
    launch = Launch(kernel, written)
    first = results[0]
    for number, result in enumerate(results):
        launch.checks.append(_checks(session, _Config(XBLOCK=2**number), result, first if number else None, written))
    return launch


def test_each_config_is_judged_against_eager_where_a_value_stands_for_its_buffer_else_against_config_0() -> None:
    right = torch.ones(4)
    session = Session(references=lambda name, value: right if name == "buf0" else None)
    launches = [
        _launch("k_right", ["buf0"], session, [[right.clone()], [right.clone()]]),
        _launch("k_wrong", ["buf0"], session, [[right * 2], [right * 2]]),
    ]
    judge(launches)  # buf0 is written twice: only its last write is held to eager
    assert [run.summary() for run in launches[0].configs] == [
        {"config": "XBLOCK=1", "status": "match", "against": "nothing"},
        {"config": "XBLOCK=2", "status": "match", "against": "config 0"},
    ]
    wrong = launches[1].configs[0]
    assert (wrong.status, wrong.against, wrong.buffer) == ("mismatch", "eager", "buf0")

    partial = [_launch("k", ["buf7"], session, [[right], [right * 3], "InterpreterError: boom"])]  # no eager value
    judge(partial)
    statuses = [(run.status, run.against) for run in partial[0].configs]
    assert statuses == [("match", "nothing"), ("mismatch", "config 0"), ("error", "")]
    assert partial[0].configs[2].detail == {"type": "InterpreterError", "message": "boom"}


def test_a_mismatch_is_pinned_on_the_first_launch_that_disagrees_with_eager_not_on_those_after_it() -> None:
    def launch(kernel: str, status: str, against: str = "eager") -> Launch:
        return Launch(kernel, ["buf"], [ConfigRun("XBLOCK=8", status, against, "buf")])

    execution = Execution(
        "mismatch",
        launches=[launch("k0", "match"), launch("k1", "mismatch"), launch("k2", "mismatch")],
    )
    _localise(execution, None)
    assert execution.first_wrong is not None and execution.first_wrong["kernel"] == "k1"
    assert execution.kernels()["k2"]["status"] == "mismatch" and execution.kernels()["k0"]["status"] == "match"

    outside = Execution("mismatch", launches=[launch("k0", "match")])
    _localise(outside, None)
    assert outside.first_wrong is None and "outside the Triton kernels" in (outside.localised or "")


def test_libdevice_functions_the_interpreter_lacks_run_as_torch_and_an_inexact_one_is_an_interpreter_limit() -> None:
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    from npu_inductor_compat.tools.simulated.execution.execute_interpreter import InterpreterLimit, MathAsLibdevice

    data = np.linspace(-2, 2, 8, dtype=np.float32)
    value = tl.tensor(TensorHandle(data, tl.float32), tl.block_type(tl.float32, [8]))
    libdevice = MathAsLibdevice(None)
    for name, expected in (("tanh", torch.tanh), ("lgamma", torch.lgamma), ("log1p", torch.log1p)):
        result = getattr(libdevice, name)(value)
        assert result.type.shape == [8] and result.handle.data.dtype == np.float32
        want = expected(torch.from_numpy(data))
        assert torch.allclose(torch.from_numpy(result.handle.data), want, rtol=0, atol=0, equal_nan=True), name
    assert libdevice.isnan(value).handle.data.dtype == np.bool_
    with pytest.raises(InterpreterLimit, match=r"libdevice\.round is an extern function"):
        libdevice.round(value)  # half away from zero, unlike torch.round: no exact equivalent


def test_tl_math_as_triton_ascend_extends_it_has_tanh_and_pow_and_nothing_it_lacks() -> None:
    """torch_npu's kernels call tl_math.tanh (triton.language.math, over which triton-ascend's testing.py sets its
    libdevice's tanh, pow, ...): Triton's own functions stay Triton's, the names triton-ascend adds run as torch's,
    and a name neither has is still an AttributeError."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    from npu_inductor_compat.tools.simulated.execution.execute_interpreter import AscendMath, _bind_libdevice

    scope: dict[str, Any] = {"tl_math": tl.math, "tl": tl}
    _bind_libdevice(scope)
    math = scope["tl_math"]
    assert isinstance(math, AscendMath) and scope["tl"] is tl
    assert math.exp is tl.math.exp
    data = np.linspace(-2, 2, 8, dtype=np.float32)
    value = tl.tensor(TensorHandle(data, tl.float32), tl.block_type(tl.float32, [8]))
    assert torch.equal(torch.from_numpy(math.tanh(value).handle.data), torch.tanh(torch.from_numpy(data)))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_function'"):
        math.no_such_function  # noqa: B018


class _Stream:
    def __init__(self, tty: bool) -> None:
        self.tty, self.text = tty, ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("tty", [False, True])
def test_progress_inside_a_graph_counts_kernels_launches_and_configs_and_is_refreshed_not_flooded(tty: bool) -> None:
    """On a terminal one line refreshed every 2 s and cleared before the graph's verdict; in a log a line at most
    every 10 s; nothing under --quiet."""
    from types import SimpleNamespace

    from npu_inductor_compat.tools.simulated.codegen.codegen_report import REFRESH, Progress

    now = [0.0]
    stream = _Stream(tty)
    progress = Progress(quiet=False, stream=stream, clock=lambda: now[0])
    record = SimpleNamespace(index=3, kernels=["k0", "k1", "k2"])
    for step, kernel in enumerate(["k0", "k1", "k0", "k2"]):
        now[0] = step * (REFRESH[tty] / 2 + 0.1)
        launch = Launch(kernel=kernel, written=[])
        launch.checks = [object()] * 2  # type: ignore[list-item]
        progress.launched(record, launch)
    lines = [line.strip() for line in stream.text.replace("\r", "\n").split("\n") if line.strip()]
    assert lines == [
        f"graph 3 executing: 2/3 kernels, 3 launches, 6 config runs, {now[0] - REFRESH[tty] / 2 - 0.1:.0f} s; k0"
    ], stream.text
    progress.say("graph 3 executed: match")
    assert stream.text.endswith("graph 3 executed: match\n")
    assert ("\r" + " " * 160 + "\r" in stream.text) == tty  # the terminal line is cleared first

    quiet = _Stream(tty)
    Progress(quiet=True, stream=quiet, clock=lambda: 100.0).launched(record, launch)
    assert quiet.text == ""


def test_the_accuracy_rule_s_boundary_a_planted_error_passes_below_the_model_tolerance_and_fails_above_it() -> None:
    """Outside torch.testing's tolerance a value still matches if it passes Inductor's accuracy check against fp64,
    at the tolerance PyTorch's benchmarks gate models with (1e-2 training, 1e-3 inference). The boundary, pinned: a
    kernel 0.5% off passes in a training graph and fails in an inference one; 3% off fails in both."""
    from npu_inductor_compat.tools.simulated.execution.execute_reference import accurate

    truth = torch.linspace(0.5, 2.0, 4096, dtype=torch.float64).exp()
    eager = truth.float()
    assert difference(eager, eager * 1.005) is not None  # outside torch.testing's tolerance: the rule decides
    assert accurate(eager, eager * 1.005, truth, 1e-2) and not accurate(eager, eager * 1.005, truth, 1e-3)
    assert not accurate(eager, eager * 1.03, truth, 1e-2) and not accurate(eager, eager * 1.03, truth, 1e-3)


def test_a_failed_template_launch_without_autotune_constants_is_reported_not_raised_into_the_script() -> None:
    """A flex template is launched with its one config, whose constants are in its source: its config text is
    empty. Reporting its error (the graph's line, the problems list) raised KeyError into the user's script, which
    ended there (found on torch_npu 2.7.1.post11's flex template, examples/corpus/flex_sliding_window.py)."""
    from types import SimpleNamespace

    from npu_inductor_compat.tools.simulated.codegen.codegen_report import Progress
    from npu_inductor_compat.tools.simulated.execution.execute_report import problems

    run = ConfigRun(config="", status="error", detail={"type": "InterpreterError", "message": "OutOfBounds(...)"})
    launch = Launch(kernel="triton_tem_fused_0", written=["buf0"], configs=[run])
    execution = Execution("error", launches=[launch], first_wrong={"kernel": launch.kernel, **run.summary()})
    stream = _Stream(False)
    Progress(quiet=False, stream=stream, clock=lambda: 0.0).executed(SimpleNamespace(index=0, execution=execution))
    assert "first wrong kernel: triton_tem_fused_0 (its one config, constants in its source): InterpreterError" in (
        stream.text
    )
    (line,) = problems([{"index": 0, "execution": execution.summary()}])
    assert line.startswith("graph 0: kernel triton_tem_fused_0 (its one config, constants in its source): error:")
