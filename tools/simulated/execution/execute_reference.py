"""What `codegen --execute` compares against: eager values of the FX nodes buffers hold, and, where torch.testing's
tolerance fails, Inductor's own accuracy check against an fp64 run of the same graph (its dtype arguments too)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from npu_inductor_compat.tools.simulated.execution.execute_values import copied, random_nodes


def tolerance(kind: str) -> float:
    """The tolerance torch's own accuracy runs give a model (benchmarks/dynamo/huggingface.py and timm_models.py
    get_tolerance_and_cosine_flag): 1e-2 for a training step (its forward and backward graphs), 1e-3 for inference."""
    return 1e-3 if kind == "inference" else 1e-2


def rule(tol: float) -> str:
    return f"Inductor's accuracy check (torch._dynamo.utils.same, fp64 reference, tol {tol:g})"


def accurate(expected: Any, actual: Any, fp64: Any, tol: float) -> bool:
    """Whether ``actual`` passes Inductor's accuracy check against ``expected``: within ``tol`` of it, or as close
    to the fp64 value as the check asks, its RMSE at most 2x (3x for 16-bit floats or small tensors) eager's RMSE
    plus tol/10 (torch/_dynamo/utils.py same)."""
    from torch._dynamo.utils import same

    def quiet(*args: Any, **kwargs: Any) -> None:
        return None

    return bool(same(expected, actual, fp64_ref=fp64, tol=tol, equal_nan=True, log_error=quiet))


def in_fp64(module: Any, inputs: list[Any]) -> tuple[Any, list[Any]]:
    """A copy of ``module`` and the inputs as torch's accuracy minifier makes them for an fp64 reference
    (torch._dynamo.debug_utils.cast_to_fp64: floating inputs and dtype arguments in float64)."""
    from torch._dynamo.debug_utils import cast_to_fp64

    model, values = cast_to_fp64(copy.deepcopy(module), [copied(value) for value in inputs])
    return model, list(values)


def tolerant(base: Any) -> Any:
    """An fx.Interpreter class over ``base`` for an fp64 run: an op that refuses float64 (torch_npu's fused
    attention takes fp16/bf16 only) runs in the dtypes the graph gives its inputs (their meta "val"), its result
    is taken back to float64."""
    import torch
    import torch.fx

    class Tolerant(base):  # type: ignore[misc, valid-type]
        def run_node(self, node: Any) -> Any:
            try:
                return super().run_node(node)
            except Exception:
                if node.op != "call_function":
                    raise
            args, kwargs = self.fetch_args_kwargs_from_env(node)
            dtypes = {arg.name: getattr(arg.meta.get("val"), "dtype", None) for arg in node.all_input_nodes}
            cast = [
                value.to(dtypes[arg.name])
                if isinstance(value, torch.Tensor) and isinstance(arg, torch.fx.Node) and dtypes.get(arg.name)
                else value
                for arg, value in zip(node.args, args, strict=True)
            ]
            result = node.target(*cast, **kwargs)
            return torch.utils._pytree.tree_map(
                lambda value: (
                    value.double() if isinstance(value, torch.Tensor) and value.is_floating_point() else value
                ),
                result,
            )

    return Tolerant


class References:
    """The eager values of the FX nodes the kernels' buffers hold (``origins``: buffer -> node of ``lowered``), and
    their fp64 values, computed the first time one is asked for; each run on its own copy of ``inputs`` (the graph's
    inputs as they were before any run), which stay as they are."""

    def __init__(self, lowered: Any, origins: dict[str, str], inputs: list[Any]) -> None:
        self._lowered, self._origins, self._inputs = lowered, origins, inputs
        self._wanted = set(origins.values())
        self._random = random_nodes(lowered.graph)
        self.reason: str | None = None  # why there are no eager values
        self._eager = self._run(lowered, [copied(value) for value in inputs])
        self._fp64: dict[str, Any] | None = None

    def _run(self, module: Any, inputs: list[Any]) -> dict[str, Any]:
        import torch
        import torch.fx

        values: dict[str, Any] = {}
        wanted, random = self._wanted, self._random

        class Recording(tolerant(torch.fx.Interpreter)):  # type: ignore[misc]
            def run_node(self, node: Any) -> Any:
                result = super().run_node(node)
                if node.name in wanted and node.name not in random:
                    values[node.name] = result
                return result

        try:
            with torch.no_grad():
                Recording(module).run(*inputs)
        except Exception as err:
            self.reason = f"the lowered FX graph does not run eagerly ({type(err).__name__}: {str(err)[:200]})"
            values.clear()
        return values

    def _find(self, values: dict[str, Any], name: str, like: Any, *, same_dtype: bool) -> Any:
        import torch

        value = values.get(self._origins.get(name, ""))
        if not isinstance(value, torch.Tensor) or not isinstance(like, torch.Tensor) or value.shape != like.shape:
            return None
        return value if value.dtype == like.dtype or not same_dtype else None

    def eager(self, name: str, like: Any) -> Any:
        """The eager value of buffer ``name`` (shaped and typed as ``like``), or None."""
        return self._find(self._eager, name, like, same_dtype=True)

    def fp64(self, name: str, like: Any) -> Any:
        """Its fp64 value, or None."""
        if self.eager(name, like) is None:
            return None
        if self._fp64 is None:
            reason = self.reason
            try:
                model, values = in_fp64(self._lowered, self._inputs)
                self._fp64 = self._run(model, values)
            except Exception:  # no fp64 reference: torch.testing's tolerance stands alone
                self._fp64 = {}
            self.reason = reason
        return self._find(self._fp64, name, like, same_dtype=False)


def fp64_outputs(eager: Any, inputs: list[Any]) -> Callable[[], tuple[list[Any], list[Any]] | None]:
    """The graph's outputs and inputs after an fp64 run, computed the first time they are asked for; None when the
    graph does not run in fp64."""
    done: dict[str, Any] = {}

    def run() -> tuple[list[Any], list[Any]] | None:
        import torch
        import torch.fx

        if "result" not in done:
            try:
                model, values = in_fp64(eager, inputs)
                with torch.no_grad():
                    outputs = tolerant(torch.fx.Interpreter)(model).run(*values)
                done["result"] = (list(outputs) if isinstance(outputs, list | tuple) else [outputs], values)
            except Exception:
                done["result"] = None
        result: tuple[list[Any], list[Any]] | None = done["result"]
        return result

    return run
