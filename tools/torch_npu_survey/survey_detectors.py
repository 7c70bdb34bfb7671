"""What in torch_npu's sources shows that a release carries one of our fixes: one detector per fix id
(`FIX_DETECTORS`; a test fails when a fix record has none), each reading the sources with ``ast`` or regexes."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from npu_inductor_compat.common.torch_npu_names import TORCH_NPU_HOOKS, Hook
from npu_inductor_compat.targets import Target
from npu_inductor_compat.tools.torch_npu_survey import (
    survey_cpp_wrapper_fixes,
    survey_kernel_forms,
    survey_late_fixes,
    survey_split_fixes,
)
from npu_inductor_compat.tools.torch_npu_survey.survey_hooks import Found, lookup
from npu_inductor_compat.tools.torch_npu_survey.survey_sources import Sources, dotted, index_kernel_method, module_scope


@dataclass(frozen=True)
class Finding:
    carried: bool
    evidence: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Detector:
    """What in torch_npu's sources shows that a release carries one of our fixes."""

    fix_id: str
    carried_when: str
    check: Callable[[Sources], Finding]


def _flex_files(sources: Sources) -> list[str]:
    return [name for name in sources.py_files("torch_npu/_inductor/kernel/") if "flex" in name.rsplit("/", 1)[-1]]


_FLEX_LOWERING = re.compile(r"register_lowering\(\s*torch\.ops\.higher_order\.flex_attention\s*[,)]")


def _own_flex_lowering(sources: Sources) -> list[str]:
    return [name for name in _flex_files(sources) if _FLEX_LOWERING.search(sources.text(name) or "")]


def _flex_lowering_kept(sources: Sources) -> Finding:
    """Carried where the release registers its own flex lowering, or makes no fallback of ops off its list (the bug:
    lowering.py _register_npu_inductor_fallbacks turns every lowering not in lowering_op_list.py's GENERATE_LIST into
    a fallback, flex attention's higher-order ops included)."""
    own = _own_flex_lowering(sources)
    if own:
        return Finding(True, f"registers its own flex_attention lowering ({', '.join(own)})")
    listed = sources.text("torch_npu/_inductor/lowering_op_list.py") or ""
    if "flex_attention" in listed:
        return Finding(True, "lowering_op_list.py keeps flex_attention's lowering")
    if "_register_npu_inductor_fallbacks" not in (sources.text("torch_npu/_inductor/lowering.py") or ""):
        return Finding(True, "makes no fallback of lowerings off a list: torch's flex lowering stays")
    return Finding(
        False,
        "lowering.py _register_npu_inductor_fallbacks makes a fallback of every lowering not on its GENERATE_LIST, "
        "flex attention's included, and it registers no flex lowering of its own",
    )


def _decoding_gets_float32_precision(sources: Sources) -> Finding:
    """Carried unless a function in torch_npu's flex module calls torch's create_flex_decoding_kernel without
    naming FLOAT32_PRECISION in code (2.9.0.post9 has the setdefault commented out)."""
    calling = []
    for name in _flex_files(sources):
        tree = sources.tree(name)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(call, ast.Call) and ast.unparse(call.func) == "create_flex_decoding_kernel"
                for call in ast.walk(node)
            ):
                calling.append((name, node))
    if not calling:
        return Finding(True, "its flex code calls no create_flex_decoding_kernel of torch's")
    missing = [
        f"{name} {node.name}"
        for name, node in calling
        if not any(isinstance(item, ast.Constant) and item.value == "FLOAT32_PRECISION" for item in ast.walk(node))
    ]
    if missing:
        return Finding(False, f"{', '.join(missing)} calls torch's decoding kernel without FLOAT32_PRECISION")
    return Finding(True, "it sets FLOAT32_PRECISION before calling torch's decoding kernel")


def _symbolic_grid_functions(tree: ast.Module) -> set[str]:
    names = set()
    for node in module_scope(tree.body):
        if isinstance(node, ast.FunctionDef) and any(dotted(d).endswith("SymbolicGridFn") for d in node.decorator_list):
            names.add(node.name)
        elif isinstance(node, ast.Assign) and dotted(node.value).endswith("SymbolicGridFn"):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _backward_grid_is_symbolic(sources: Sources) -> Finding:
    symbolic: list[str] = []
    plain: list[str] = []
    for name in _flex_files(sources):
        tree = sources.tree(name)
        assert tree is not None
        grids = _symbolic_grid_functions(tree)
        short = name.removeprefix("torch_npu/_inductor/")
        for node in module_scope(tree.body):
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                grid: ast.expr | None = None
                if isinstance(target, ast.Attribute) and target.attr == "grid" and "backward" in dotted(target.value):
                    grid, template = node.value, dotted(target.value)
                elif isinstance(target, ast.Name) and "backward_template" in target.id:
                    template = target.id
                    if isinstance(node.value, ast.Call):
                        grid = next((k.value for k in node.value.keywords if k.arg == "grid"), None)
                if isinstance(grid, ast.Name):
                    (symbolic if grid.id in grids else plain).append(f"{short}: {template} grid {grid.id}")
    if symbolic and not plain:
        return Finding(True, "; ".join(symbolic) + " (@SymbolicGridFn)")
    if plain:
        return Finding(False, "plain (non-SymbolicGridFn) backward grid: " + "; ".join(plain))
    return Finding(False, "no flex backward template grid of its own (upstream's template and grid are used)")


_CUDA_CONFIG = re.compile(r"\b(get_device_capability|cuda\.get_device_properties|_get_nv_config)\b")


def _imports_from_torch_kernel(sources: Sources, names: set[str]) -> list[str]:
    found = []
    for file in _flex_files(sources):
        tree = sources.tree(file)
        assert tree is not None
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch._inductor.kernel"):
                hits = names & {alias.name for alias in node.names}
                found += [f"{file.removeprefix('torch_npu/_inductor/')} imports {node.module}.{h}" for h in hits]
            elif isinstance(node, ast.Attribute) and node.attr in names and dotted(node.value) != "self":
                found.append(f"{file.removeprefix('torch_npu/_inductor/')} uses {dotted(node)}")
    return sorted(set(found))


def _configs_from_device(sources: Sources) -> Finding:
    lowering = _own_flex_lowering(sources)
    if not lowering:
        return Finding(False, "no flex_attention lowering of its own: torch's configs (torch.cuda) are used")
    asks = [
        f"{n.removeprefix('torch_npu/_inductor/')}: {m.group(1)}"
        for n in _flex_files(sources)
        if (m := _CUDA_CONFIG.search(sources.text(n) or ""))
    ]
    asks += _imports_from_torch_kernel(sources, {"_get_default_config_fwd", "_get_default_config_bwd"})
    where = ", ".join(n.removeprefix("torch_npu/_inductor/") for n in lowering)
    if asks:
        return Finding(
            False, f"own flex lowering ({where}) but it asks torch.cuda / torch's configs: {'; '.join(asks)}"
        )
    return Finding(True, f"own flex lowering ({where}) chooses configs without torch.cuda")


def _decoding_split_from_device(sources: Sources) -> Finding:
    lowering = _own_flex_lowering(sources)
    if not lowering:
        return Finding(False, "no flex_attention lowering of its own: torch's flex decoding (get_split_k) is used")
    uses = _imports_from_torch_kernel(sources, {"create_flex_decoding_kernel", "get_split_k"})
    where = ", ".join(n.removeprefix("torch_npu/_inductor/") for n in lowering)
    if uses:
        return Finding(False, f"own flex lowering ({where}) calls torch's flex decoding: {'; '.join(uses)}")
    return Finding(True, f"own flex lowering ({where}) without torch's create_flex_decoding_kernel / get_split_k")


def _two_pass_patched(sources: Sources) -> Finding:
    found = []
    for name in (*sources.py_files("torch_npu/_inductor/"), *sources.py_files("torch_npu/_compat/")):
        if "/ascendc/" in name or "codegen_with_cpp_wrapper" not in (sources.text(name) or ""):
            continue
        tree = sources.tree(name)
        assert tree is not None
        functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Name):
                continue
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr == "codegen_with_cpp_wrapper":
                    function = functions.get(node.value.id)
                    if function is not None and any(
                        isinstance(c, ast.Constant) and c.value == "npu" for c in ast.walk(function)
                    ):
                        found.append(f"{name.removeprefix('torch_npu/')}: {dotted(target)} = {node.value.id}")
    if found:
        return Finding(True, "; ".join(found) + " (handles 'npu')")
    return Finding(False, "no replacement of GraphLowering.codegen_with_cpp_wrapper handling 'npu' (outside ascendc)")


def _hook(hook_id: str) -> Hook:
    return next(hook for hook in TORCH_NPU_HOOKS if hook.id == hook_id)


def _class_for(sources: Sources, hook_id: str) -> tuple[str, ast.ClassDef] | None:
    """The file and class node of the first candidate of a hook whose class is defined in the sources."""
    for candidate in _hook(hook_id).candidates:
        target = Target.parse(candidate, attribute=False)
        found = lookup(sources, target.module, target.qualname.split(".")[0])
        if isinstance(found, Found) and isinstance(found.node, ast.ClassDef):
            return found.where, found.node
    return None


def _saved_param_keys(cls: ast.ClassDef, method: str) -> tuple[list[str], set[str]]:
    """String keys written by ``method`` and the self.methods it calls (transitively, within the class)."""
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    seen, queue, keys = [], [method], set()
    while queue:
        name = queue.pop(0)
        if name in seen or name not in methods:
            continue
        seen.append(name)
        for node in ast.walk(methods[name]):
            if isinstance(node, ast.Dict):
                keys |= {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
                if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                    keys.add(node.slice.value)
            elif isinstance(node, ast.Call) and dotted(node.func).startswith("self."):
                queue.append(dotted(node.func).split(".", 1)[1])
    return seen, keys


def _autotuner_copies_metadata(sources: Sources) -> Finding:
    found = _class_for(sources, "autotuner-save-kernel")
    if found is None:
        return Finding(False, "no NPUCachingAutotuner class")
    file, cls = found
    chain, keys = _saved_param_keys(cls, "save_gpu_kernel")
    if not chain:
        return Finding(False, f"{file}: NPUCachingAutotuner defines no save_gpu_kernel")
    wanted = ("workspace_size", "lock_num", "sync_block_lock_layout", "lock_init_val")
    stored = [key for key in wanted if key in keys]
    where = f"{file.removeprefix('torch_npu/_inductor/')}: {' -> '.join(chain)}"
    if "workspace_size" in keys and ("lock_num" in keys or "sync_block_lock_layout" in keys):
        return Finding(True, f"{where} stores {', '.join(stored)}")
    return Finding(False, f"{where} stores {', '.join(stored) or 'neither workspace_size nor lock_num'}")


def _assigned_non_null(text: str, variable: str) -> bool:
    for match in re.finditer(rf"\b{variable}\s*=(?!=)\s*([^;\n]*)", text):
        if not re.match(r"(NULL|nullptr)\b", match.group(1).strip()):
            return True
    return False


def _cpp_wrapper_workspace_locks(sources: Sources) -> Finding:
    found = _class_for(sources, "cpp-wrapper")
    if found is None:
        return Finding(False, "no NPU C++ wrapper class (CppWrapperNpu)")
    file, _ = found
    text = sources.text(file) or ""
    short = file.removeprefix("torch_npu/_inductor/")
    workspace = "allocate_workspace" in text and _assigned_non_null(text, "workspace_addr")
    locks = _assigned_non_null(text, "sync_block_lock")
    if not (workspace and locks):
        passes_null = re.search(r"workspace_addr\s*=\s*NULL", text) and re.search(r"sync_block_lock\s*=\s*NULL", text)
        missing = [what for what, ok in (("workspace", workspace), ("locks", locks)) if not ok]
        how = "passes NULL workspace and lock pointers" if passes_null else f"allocates no {' or '.join(missing)}"
        return Finding(False, f"{short}: {how}")
    if re.search(r"\baclrtMem(setAsync|cpyAsync)\b", text):
        note = "lock init: stream-ordered, aclrtMemsetAsync/aclrtMemcpyAsync"
    elif re.search(r"\baclrtMemcpy\s*\(", text):
        note = "lock init: blocking aclrtMemcpy"
    else:
        note = "lock init: not found"
    return Finding(True, f"{short}: allocate_workspace for workspace and locks, both passed to the kernel", (note,))


def _ascendc_init(sources: Sources) -> str | None:
    return sources.text("torch_npu/_inductor/ascendc/__init__.py")


def _ascendc_lowering_only(sources: Sources) -> Finding:
    text = _ascendc_init(sources)
    if text is None:
        return Finding(False, "no ascendc package")
    patched = re.search(r"\.is_gpu\s*=(?!=)", text) is not None
    appended = re.search(r"GPU_TYPES\.append\(\s*[\"']npu", text) is not None
    if patched and not appended:
        return Finding(True, "ascendc/__init__.py replaces lowering.is_gpu; 'npu' not appended to GPU_TYPES")
    return Finding(False, f"ascendc/__init__.py: lowering.is_gpu replaced: {patched}, GPU_TYPES appended: {appended}")


def _ascendc_partition_hook(sources: Sources) -> Finding:
    text = _ascendc_init(sources)
    if text is None:
        return Finding(False, "no ascendc package")
    patched = re.search(
        r"patch_fn\(\s*Scheduler\s*,\s*[\"']should_partition[\"']|Scheduler\.should_partition\s*=", text
    )
    if patched and "scheduler_should_partition_override" in text:
        return Finding(True, "ascendc/__init__.py wraps Scheduler.should_partition via the backend's override")
    return Finding(False, "ascendc/__init__.py has no backend should_partition hook")


def _masked_load_keeps_guard(sources: Sources) -> Finding:
    found = index_kernel_method(sources, "filter_masks")
    if isinstance(found, str) or found is None:
        return Finding(True, found or "NPUIndexTritonKernel has no filter_masks of its own")
    reads = [
        node for node in ast.walk(found) if isinstance(node, ast.Attribute) and node.attr == "current_subblock_axis"
    ]
    if not reads:
        return Finding(True, "filter_masks has no subblock-axis filter (it drops no guarding mask)")
    filtered = any(
        isinstance(node, ast.comprehension)
        and node.ifs
        and any(
            isinstance(part, ast.Attribute) and part.attr == "current_subblock_axis" for part in ast.walk(node.iter)
        )
        for node in ast.walk(found)
    )
    if filtered:
        return Finding(True, "filter_masks filters current_subblock_axis before its subset test (size symbols out)")
    return Finding(False, "filter_masks tests the subblock axes as recorded, size symbols included")


def _hint_thresholds(function: ast.FunctionDef) -> set[int]:
    """The thresholds a persistent-reduction heuristic gives ReductionHint.INNER (dict literals keyed by it)."""
    found: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                inner = key is not None and dotted(key).endswith("ReductionHint.INNER")
                if inner and isinstance(value, ast.Constant) and isinstance(value.value, int):
                    found.add(value.value)
    return found


def _persistent_reduction_budget(sources: Sources) -> Finding:
    found = index_kernel_method(sources, "should_use_persistent_reduction")
    if isinstance(found, str) or found is None:
        return Finding(True, found or "NPUIndexTritonKernel leaves persistent reductions to torch's heuristic")
    thresholds = _hint_thresholds(found)
    per_soc = any(
        isinstance(node, ast.Name | ast.Attribute) and dotted(node).endswith("is_ascend950") for node in ast.walk(found)
    )
    if per_soc and min(thresholds, default=4096) <= 1024:
        return Finding(
            True, f"should_use_persistent_reduction: INNER thresholds {sorted(thresholds)}, per SoC (is_ascend950)"
        )
    return Finding(False, f"should_use_persistent_reduction: INNER threshold {sorted(thresholds)} on every SoC")


def _inplace_skips_removed_users(sources: Sources) -> Finding:
    """Our record changes torch's decide_inplace_update; torch_npu would have to replace it (or its nested check)."""
    files = sources.py_files("torch_npu/_inductor")
    names = r"(decide_inplace_update|single_index_in_fused_node)"
    pattern = re.compile(rf"\bdef {names}\b|\.{names}\s*=(?!=)|[\"']{names}[\"']")
    replaced = [name for name in files if pattern.search(sources.text(name) or "")]
    # what spares torch_npu's own lowering on torch 2.7 (_inductor/lowering.py): var_mean without a Welford reduction
    lowering = sources.text("torch_npu/_inductor/lowering.py") or ""
    welford_free = "register_lowering(aten.var_mean)" in lowering and "var_mean_sum_" in lowering
    note = f"var_mean lowered without a Welford reduction (no unused count output): {welford_free}"
    if replaced:
        return Finding(True, f"decide_inplace_update replaced in {', '.join(sorted(replaced))}", (note,))
    return Finding(False, "torch's decide_inplace_update is used as is", (note,))


# CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line's own fix
def _decoding_index_wrapped(sources: Sources) -> Finding:
    """Whether a flex decoding template of torch_npu's own wraps a split's first block index (torch 2.9's form); a
    release with none calls torch's template, which wraps it from torch 2.9 on."""
    unwrapped = re.compile(r"indices_idx = block_n_start // SPARSE_KV_MULTIPLE\s*$", re.M)
    reads = re.compile(r"indices_idx = \(?block_n_start // SPARSE_KV_MULTIPLE")
    own = [name for name in sources.py_files("torch_npu/_inductor/") if reads.search(sources.text(name) or "")]
    if not own:
        return Finding(False, "no flex decoding template of its own: torch's is used (wrapped from torch 2.9 on)")
    bad = [name for name in own if unwrapped.search(sources.text(name) or "")]
    if bad:
        return Finding(False, "its decoding template reads the index unwrapped: " + ", ".join(sorted(bad)))
    return Finding(True, "its decoding template wraps the index: " + ", ".join(sorted(own)))


FIX_DETECTORS: tuple[Detector, ...] = (
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line's own fix
    Detector(
        "flex-backward-symbolic-grid",
        "a flex backward template of torch_npu's gets a @SymbolicGridFn grid (and none a plain one)",
        _backward_grid_is_symbolic,
    ),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line's own fix
    Detector(
        "flex-configs-from-device",
        "torch_npu registers its own flex_attention lowering and no flex module asks torch.cuda or torch's configs",
        _configs_from_device,
    ),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line's own fix
    Detector(
        "flex-decoding-block-index-wrap",
        "a flex decoding template of torch_npu's wraps a split's first block index (none: torch's template is used)",
        _decoding_index_wrapped,
    ),
    Detector(
        "flex-decoding-split-from-device",
        "torch_npu's own flex lowering decodes without torch's create_flex_decoding_kernel / get_split_k",
        _decoding_split_from_device,
    ),
    Detector(
        "autotuner-kernel-metadata",
        "NPUCachingAutotuner.save_gpu_kernel (or what it calls) stores workspace_size and lock_num or "
        "sync_block_lock_layout in the kernel params",
        _autotuner_copies_metadata,
    ),
    Detector(
        "cpp-wrapper-workspace-locks",
        "the NPU C++ wrapper allocates workspace and lock memory and passes both (non-NULL) to the kernel",
        _cpp_wrapper_workspace_locks,
    ),
    Detector(
        "cpp-wrapper-scalar-returns",
        "torch_npu replaces both the fallback-call codegen and codecache.custom_op_wrapper",
        lambda sources: Finding(*survey_cpp_wrapper_fixes.scalar_returns_unnamed(sources)),
    ),
    Detector(
        "cpp-wrapper-optional-list-args",
        "torch_npu replaces CppWrapperCpu.generate_py_arg",
        lambda sources: Finding(*survey_cpp_wrapper_fixes.optional_lists_built(sources)),
    ),
    Detector(
        "triton-cpp-wrapper-two-pass",
        "torch_npu replaces GraphLowering.codegen_with_cpp_wrapper with a function handling 'npu' (not only ascendc)",
        _two_pass_patched,
    ),
    Detector(
        "ascendc-lowering-gpu-like",
        "the ascendc package makes 'npu' GPU-like in lowering.is_gpu without appending it to GPU_TYPES",
        _ascendc_lowering_only,
    ),
    Detector(
        "ascendc-should-partition-hook",
        "the ascendc package wraps Scheduler.should_partition through scheduler_should_partition_override",
        _ascendc_partition_hook,
    ),
    # CAN REMOVE when MIN_SUPPORTED >= (2, 9) [next]: the v2_7_1 line's own fix
    Detector(
        "inplace-skips-removed-users",
        "torch_npu replaces decide_inplace_update (or its nested single_index_in_fused_node check)",
        _inplace_skips_removed_users,
    ),
    Detector(
        "torch-npu-masked-load-size-symbols",
        "NPUIndexTritonKernel.filter_masks filters size symbols out of current_subblock_axis, or has no subblock-axis "
        "filter at all",
        _masked_load_keeps_guard,
    ),
    Detector(
        "torch-npu-persistent-reduction-ub",
        "NPUIndexTritonKernel.should_use_persistent_reduction allows at most 1024 INNER elements off Ascend950 (or "
        "the index kernel has no such heuristic of its own)",
        _persistent_reduction_budget,
    ),
    Detector(
        "torch-npu-dynamic-persistent-reduction",
        "NPUIndexTritonKernel.filter_masks keeps a persistent reduction's axis mask (or torch_npu has no filter_masks)",
        lambda sources: Finding(*survey_late_fixes.persistent_reductions_masked(sources)),
    ),
    Detector(
        "torch-npu-looped-argreduce-index",
        "the kernels import triton_helpers from torch_npu's runtime package, which defines its own max_with_index and "
        "min_with_index (two single-operand reductions)",
        lambda sources: Finding(*survey_kernel_forms.argreduce_reduces_twice(sources)),
    ),
    Detector(
        "npu-variance-two-step",
        "torch_npu's own var_mean lowering (lowering.py var_mean_helper_) never takes the Welford reduction",
        lambda sources: Finding(*survey_kernel_forms.variance_without_welford(sources)),
    ),
    Detector(
        "npu-index-wrap-as-shift",
        "torch_npu's index kernel has its own indirect_indexing, which wraps without where(i < 0, i + n, i)",
        lambda sources: Finding(*survey_kernel_forms.index_wrap_as_shift(sources)),
    ),
    Detector(
        "torch-npu-masked-subblock-size-symbols",
        "NPUTritonKernelOverrides.masked skips size symbols when it ands a masked subblock's axis masks (or "
        "torch_npu keeps torch's masked)",
        lambda sources: Finding(*survey_late_fixes.masked_skips_size_symbols(sources)),
    ),
    Detector(
        "torch-npu-make-reduction-strict-sum",
        "torch_npu's replacement of lowering.make_reduction takes strict_sum (or its torch, before 2.14, passes none)",
        lambda sources: Finding(*survey_late_fixes.make_reduction_takes_strict_sum(sources)),
    ),
    Detector(
        "torch-npu-cant-split-arguments",
        "the index kernel's module raises CantSplit with arguments (or its torch, before 2.12, takes none)",
        lambda sources: Finding(*survey_split_fixes.cant_split_raised_with_arguments(sources)),
    ),
    Detector(
        "torch-npu-split-symbolic-sizes",
        "NPUIndexTritonKernel._split_iteration_ranges compares no group size with a Python operator",
        lambda sources: Finding(*survey_split_fixes.split_compares_statically(sources)),
    ),
    Detector(
        "torch-npu-masked-load-permute-order",
        "NPUIndexTritonKernel.load generates a load's permute into the buffer of the load itself",
        lambda sources: Finding(*survey_late_fixes.load_permutes_in_its_buffer(sources)),
    ),
    Detector(
        "torch-npu-two-reduction-tiling",
        "SplitTiling.select_tiling_axis tiles no low dim of a reduction over two axes without testing for it",
        lambda sources: Finding(*survey_late_fixes.tiles_by_the_reductions(sources)),
    ),
    Detector(
        "torch-npu-constant-load-reshape",
        "NPUIndexTritonKernel.load reshapes a constant-index load to the kernel's rank (no tl.broadcast_to)",
        lambda sources: Finding(*survey_late_fixes.reshapes_constant_loads(sources)),
    ),
    Detector(
        "torch-npu-persistent-reduction-store",
        "NPUIndexTritonKernel.store and store_reduction leave no persistent reduction out of the tl.arange(0,1) store",
        lambda sources: Finding(*survey_late_fixes.stores_every_two_axis_reduction_alike(sources)),
    ),
    Detector(
        "torch-npu-long-rows-tiles",
        "triton_config_npu_index keeps a config with sub-block sizes when its tile generator gives none",
        lambda sources: Finding(*survey_late_fixes.keeps_tiles_without_a_tile(sources)),
    ),
    Detector(
        "torch-npu-flex-lowerings-kept",
        "flex attention keeps a lowering for npu: torch_npu registers its own, or makes no fallback of torch's",
        lambda sources: _flex_lowering_kept(sources),
    ),
    Detector(
        "torch-npu-template-libdevice",
        "template kernels import the libdevice torch_npu's own kernels import (not torch's stubs)",
        lambda sources: Finding(*survey_late_fixes.templates_import_its_libdevice(sources)),
    ),
    Detector(
        "torch-npu-flex-decoding-precision",
        "every flex lowering of torch_npu's that calls torch's create_flex_decoding_kernel sets FLOAT32_PRECISION",
        lambda sources: _decoding_gets_float32_precision(sources),
    ),
    Detector(
        "torch-npu-split-blocks-past-cores",
        "TileGenerator.calcu_last_split_blocks keeps at least one split for its axis past the vector cores",
        lambda sources: Finding(*survey_late_fixes.keeps_a_split_past_the_cores(sources)),
    ),
    Detector(
        "torch-npu-combined-scheduling-epilogue",
        "NPUCombinedScheduling.__init__ sets what torch's inherited can_fuse_reduction_epilogue reads",
        lambda sources: Finding(*survey_late_fixes.sets_what_the_epilogue_question_reads(sources)),
    ),
    Detector(
        "torch-npu-implicit-fallback-under-ci",
        "torch_npu takes no op out of Inductor's decompositions or lowerings (none reaches torch's implicit fallback)",
        lambda sources: Finding(*survey_late_fixes.takes_no_op_out_of_inductor(sources)),
    ),
    Detector(
        "torch-npu-numels-pinned",
        "NPUIndexTritonKernel.initialize_range_tree keeps a kernel's symbolic numels (no size hints substituted)",
        lambda sources: Finding(*survey_late_fixes.keeps_numels_symbolic(sources)),
    ),
)
