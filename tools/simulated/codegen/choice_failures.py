"""Why every choice of a template failed: torch's and torch_npu's autotuners log each choice's compile error only at
debug level, then raise a generic NoValidChoicesError; the capture keeps each failure and names the first."""

from __future__ import annotations

from typing import Any

from npu_inductor_compat.patching import Change, Patch, wraps_original

# every step of a Triton template choice's compile runs under it (its benchmark request's precompile, then what
# torch keeps of the launcher: torch 2.13+ reads its n_regs)
PRECOMPILE = "torch._inductor.select_algorithm:TritonTemplateCaller.precompile"
NO_VALID_CHOICES = "NoValidChoicesError"


def _observing(failures_of: Any) -> Any:
    """A template choice's precompile whose exception is kept in the graph being lowered (``failures_of()``: its
    list, or None outside a capture)."""

    def replacement(original: Any) -> Any:
        @wraps_original(original)
        def precompile(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return original(self, *args, **kwargs)
            except Exception as err:
                failures = failures_of()
                if failures is not None:
                    message = f"{type(err).__name__}: {err}".strip()
                    name = getattr(self, "name", None) or getattr(getattr(self, "bmreq", None), "kernel_name", "?")
                    failures.append({"choice": str(name), "error": message})
                raise

        return precompile

    return replacement


def observer(failures_of: Any) -> Patch:
    return Patch(
        id="capture-choice-failures",
        layer="capture",
        why="torch's and torch_npu's select_algorithm catch each template choice's compile error, log it at debug "
        "level, and raise NoValidChoicesError without it when none compiles: keep each so the graph's error names "
        "the first",
        upstream="torch select_algorithm.py AlgorithmSelectorCache (precompile); torch_npu _inductor/"
        "select_algorithm.py 'Compile Fail for no-benchmark choice' (the exception at debug level)",
        remove_when="never: upstream logs the cause below the user's level",
        changes=(Change(PRECOMPILE, _observing(failures_of)),),
    )


def explain(error: dict[str, Any], failures: list[dict[str, str]]) -> None:
    """Give a NoValidChoicesError ``error`` (capture's dict) its cause: the first failed choice of the template it
    names (else the first failure), in the first line of its message and in ``choice_failures``."""
    message = str(error.get("message", ""))
    if NO_VALID_CHOICES not in f"{error.get('type')}: {message}" or not failures:
        return
    template = message.split(" found for ", 1)[1].split(" ", 1)[0] if " found for " in message else ""
    ours = [failure for failure in failures if template and f"_{template}_" in f"_{failure['choice']}_"]
    first = (ours or failures)[0]
    head, _, rest = message.partition("\n")
    cause = first["error"].splitlines()[0] if first["error"] else "(no message)"
    count = len(ours or failures)
    head += f" [{count} choice(s) failed to compile; the first, {first['choice']}: {cause}]"
    error["message"] = f"{head}\n{rest}" if rest else head
    error["choice_failures"] = list(ours or failures)
