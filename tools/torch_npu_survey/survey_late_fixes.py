"""Survey checks for the late torch_npu records (common/fixes/torch_npu_unfixed.py, torch_npu_load_order.py, tiling,
constant-load, store, long-rows, pinned numels): whether a torch_npu release already carries each fix.
Each returns (carried, evidence); FIX_DETECTORS lists them."""

from __future__ import annotations

import ast

from packaging.version import Version

from npu_inductor_compat.common.fixes.torch_npu_constant_load import broadcasts_constant_load
from npu_inductor_compat.common.fixes.torch_npu_store import persistent_reductions_left_out
from npu_inductor_compat.common.fixes.torch_npu_template_libdevice import imports_torchs_libdevice
from npu_inductor_compat.common.fixes.torch_npu_tiling import low_dims_tiled_whatever_the_reductions
from npu_inductor_compat.tools.torch_npu_survey.survey_sources import (
    INDEX_KERNEL_FILE,
    LOWERING_FILE,
    NPU_HEURISTICS_FILE,
    SPLIT_TILING_FILE,
    TILE_GENERATOR_FILE,
    Sources,
    class_method,
    index_kernel_method,
    module_function,
    module_scope,
)

STRICT_SUM_TORCH = Version("2.14")  # torch's sum lowering passes make_reduction strict_sum from 2.14.0 on
# torch's CUDA combined scheduling answers can_fuse_reduction_epilogue from _nv_universal_gemm_scheduling from 2.14.0
EPILOGUE_TORCH = Version("2.14")
COMBINED_SCHEDULING_FILE = "torch_npu/_inductor/codegen/npu_combined_scheduling.py"


def masked_skips_size_symbols(sources: Sources) -> tuple[bool, str]:
    tree = sources.tree(INDEX_KERNEL_FILE)
    if tree is None:
        return (True, f"no {INDEX_KERNEL_FILE}")
    found = None
    for node in module_scope(tree.body):
        if isinstance(node, ast.ClassDef) and node.name == "NPUTritonKernelOverrides":
            found = next(
                (item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "masked"), None
            )
    if found is None:
        return (True, "no masked() of torch_npu's: torch's own, which ands no subblock axis masks")
    loops = [node for node in ast.walk(found) if isinstance(node, ast.For) and "_mask" in ast.unparse(node)]
    if not loops:
        return (True, "masked() ands no per-axis masks of the subblock")
    # the size-symbol test: a comparison or call on the axis name with the constant "s" (sub_axis[0] != "s")
    skips = any(isinstance(part, ast.Constant) and part.value == "s" for loop in loops for part in ast.walk(loop))
    if skips:
        return (True, "masked() skips names starting with 's' (size symbols) when it ands the axis masks")
    return (False, "masked() ands '<name>_mask' for every symbol of the subblock's index, size symbols too")


def make_reduction_takes_strict_sum(sources: Sources) -> tuple[bool, str]:
    found = module_function(sources, LOWERING_FILE, "make_reduction")
    if found is None:
        return (True, f"no make_reduction in {LOWERING_FILE}: torch's own stays")
    names = {arg.arg for arg in (*found.args.args, *found.args.kwonlyargs)}
    if "strict_sum" in names or found.args.kwarg is not None:
        return (True, "torch_npu's make_reduction takes strict_sum")
    if sources.torch is not None and Version(sources.torch) < STRICT_SUM_TORCH:
        return (True, f"its make_reduction takes no strict_sum, which torch {sources.torch} never passes")
    return (False, f"its make_reduction takes no strict_sum, which torch {sources.torch}'s sum lowering passes")


def load_permutes_in_its_buffer(sources: Sources) -> tuple[bool, str]:
    """Whether NPUIndexTritonKernel.load generates a load's permute (``need_permute``) into the buffer it chose for
    the load (carried) or always into ``self.loads`` (the bug: a load under a computed mask goes to compute)."""
    load = index_kernel_method(sources, "load")
    if not isinstance(load, ast.FunctionDef):
        return (True, load or "no NPUIndexTritonKernel.load of torch_npu's")
    branches = [
        node for node in ast.walk(load) if isinstance(node, ast.If) and "need_permute" in ast.unparse(node.test)
    ]
    buffers = {
        ast.unparse(call.args[0])
        for branch in branches
        for statement in branch.body
        for call in ast.walk(statement)
        if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("cse.generate") and call.args
    }
    if not buffers:
        return (True, "load() permutes no loaded value")
    if buffers == {"self.loads"}:
        return (False, "load() generates a load's permute into self.loads, wherever the load itself went")
    return (True, f"load() generates a load's permute into {', '.join(sorted(buffers))}")


def tiles_by_the_reductions(sources: Sources) -> tuple[bool, str]:
    """Whether SplitTiling.select_tiling_axis tests the kernel's reductions before it tiles a low dim (carried) or
    tiles it whatever they are (the bug: batch norm's channel axis tiled beside its two reduction axes)."""
    select = class_method(sources, SPLIT_TILING_FILE, "SplitTiling", "select_tiling_axis")
    if not isinstance(select, ast.FunctionDef):
        return (True, select or "no SplitTiling.select_tiling_axis of torch_npu's")
    if low_dims_tiled_whatever_the_reductions(select):
        return (False, "select_tiling_axis tiles every low dim, whatever the kernel's reduction axes")
    return (True, "select_tiling_axis tests the kernel's reductions before it tiles a low dim")


def reshapes_constant_loads(sources: Sources) -> tuple[bool, str]:
    """Whether NPUIndexTritonKernel.load gives a constant-index load its size-1 dimensions with tl.reshape (carried)
    or tl.broadcast_to (the bug: with two tiling axes triton refuses the rank change)."""
    load = index_kernel_method(sources, "load")
    if not isinstance(load, ast.FunctionDef):
        return (True, load or "no NPUIndexTritonKernel.load of torch_npu's")
    if broadcasts_constant_load(load):
        return (False, "load() broadcasts a constant-index load to the kernel's rank (tl.broadcast_to)")
    return (True, "load() reshapes a constant-index load to the kernel's rank")


def stores_every_two_axis_reduction_alike(sources: Sources) -> tuple[bool, str]:
    """Whether NPUIndexTritonKernel.store and store_reduction write the ``+ tl.arange(0,1)`` store for every kernel
    that reduces over two axes (carried) or leave persistent reductions out of it (the bug: a scalar pointer)."""
    for method in ("store", "store_reduction"):
        found = index_kernel_method(sources, method)
        if not isinstance(found, ast.FunctionDef):
            return (True, found or f"no NPUIndexTritonKernel.{method} of torch_npu's")
        if persistent_reductions_left_out(found):
            return (False, f"{method}() leaves persistent reductions out of its tl.arange(0,1) store")
    return (True, "store() and store_reduction() write the tl.arange(0,1) store for every two-axis reduction")


def persistent_reductions_masked(sources: Sources) -> tuple[bool, str]:
    """Whether NPUIndexTritonKernel.filter_masks keeps a persistent reduction's axis mask (carried: it reads no
    ``persistent_reduction``) or skips that axis (the bug, with a dynamic length: loads past each row)."""
    found = index_kernel_method(sources, "filter_masks")
    if not isinstance(found, ast.FunctionDef):
        return (True, found or "no NPUIndexTritonKernel.filter_masks of torch_npu's")
    skips = any(isinstance(node, ast.Attribute) and node.attr == "persistent_reduction" for node in ast.walk(found))
    if skips:
        return (False, "filter_masks drops the axis mask of a persistent reduction (is_persistent_reduction_axis)")
    return (True, "filter_masks keeps every tiled axis's mask, a persistent reduction's too")


def keeps_tiles_without_a_tile(sources: Sources) -> tuple[bool, str]:
    """Whether npu_triton_heuristics.py's triton_config_npu_index, when its tile generator gives no config, keeps one
    with sub-block sizes (carried) or with the split-axis blocks only (the bug: the kernel cannot compile)."""
    found = module_function(sources, NPU_HEURISTICS_FILE, "triton_config_npu_index")
    if found is None:
        return (True, f"no triton_config_npu_index in {NPU_HEURISTICS_FILE}: its heuristics use another generator")
    fallbacks = [
        node
        for node in ast.walk(found)
        if isinstance(node, ast.If) and ast.unparse(node.test).replace(" ", "") == "notconfigs"
    ]
    if not fallbacks:
        return (True, "triton_config_npu_index keeps no config of its own when the generator gives none")
    if any("BLOCK_SUB" in ast.unparse(ast.Module(body=node.body, type_ignores=[])) for node in fallbacks):
        return (True, "its config kept when the generator gives none has sub-block sizes")
    return (False, "its config kept when the generator gives none has the split-axis blocks only")


def keeps_numels_symbolic(sources: Sources) -> tuple[bool, str]:
    """Whether NPUIndexTritonKernel.initialize_range_tree keeps a kernel's symbolic numels (carried) or substitutes
    the size hints into them (the bug: ``.subs(...var_to_val...)``, a dynamic graph's kernels fixed at one size)."""
    found = index_kernel_method(sources, "initialize_range_tree")
    if not isinstance(found, ast.FunctionDef):
        return (True, found or "no NPUIndexTritonKernel.initialize_range_tree of torch_npu's")
    substituted = [
        node
        for node in ast.walk(found)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "subs"
        and "var_to_val" in ast.unparse(node)
    ]
    if substituted:
        return (False, f"initialize_range_tree() substitutes the hints: {ast.unparse(substituted[0])}")
    return (True, "initialize_range_tree() keeps the numels as they are")


def keeps_a_split_past_the_cores(sources: Sources) -> tuple[bool, str]:
    """Whether TileGenerator.calcu_last_split_blocks keeps at least one split for its axis (carried) or divides by
    ``num_vector_core // splits`` unguarded (the bug: zero past the cores)."""
    found = class_method(sources, TILE_GENERATOR_FILE, "TileGenerator", "calcu_last_split_blocks")
    if not isinstance(found, ast.FunctionDef):
        return (True, found or "no TileGenerator.calcu_last_split_blocks of torch_npu's")
    shares = [
        node
        for node in ast.walk(found)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and "num_vector_core" in ast.unparse(node)
    ]
    guarded = [node for node in ast.walk(found) if isinstance(node, ast.Call) and ast.unparse(node.func) == "max"]
    if shares and not guarded:
        return (False, f"calcu_last_split_blocks divides by {ast.unparse(shares[0])}, zero past the cores")
    return (True, "calcu_last_split_blocks keeps at least one split for its axis")


def sets_what_the_epilogue_question_reads(sources: Sources) -> tuple[bool, str]:
    """Whether NPUCombinedScheduling.__init__ sets what torch 2.14's inherited can_fuse_reduction_epilogue reads
    (carried), or runs only BaseScheduling.__init__ (the bug: an AttributeError at the first template epilogue)."""
    init = class_method(sources, COMBINED_SCHEDULING_FILE, "NPUCombinedScheduling", "__init__")
    if not isinstance(init, ast.FunctionDef):
        return (True, init or "NPUCombinedScheduling defines no __init__ of its own")
    text = ast.unparse(init)
    if "_nv_universal_gemm_scheduling" in text or "super().__init__" in text:
        return (True, "NPUCombinedScheduling.__init__ sets what torch's combined scheduling reads")
    if sources.torch is not None and Version(sources.torch) < EPILOGUE_TORCH:
        return (True, f"its __init__ skips torch's, but torch {sources.torch} asks no reduction-epilogue question")
    return (False, f"its __init__ runs BaseScheduling's only, and torch {sources.torch}'s method reads what it skips")


def takes_no_op_out_of_inductor(sources: Sources) -> tuple[bool, str]:
    """Whether no module of torch_npu's Inductor deletes entries of Inductor's ``decompositions`` or ``lowerings``
    (or calls ``remove_decompositions``): an op it takes out goes to torch's implicit fallback, which raises under
    CI=true when torch has a decomposition for it (the bug)."""
    sites = []
    for name in sources.py_files("torch_npu/_inductor/"):
        tree = sources.tree(name)
        for node in ast.walk(tree) if tree is not None else ():
            removes = (
                isinstance(node, ast.Delete)
                and any(
                    isinstance(target, ast.Subscript)
                    and ast.unparse(target.value).split(".")[-1] in ("decompositions", "lowerings")
                    for target in node.targets
                )
            ) or (isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "remove_decompositions")
            if removes and isinstance(node, ast.stmt | ast.expr):
                sites.append(f"{name.removeprefix('torch_npu/_inductor/')}:{node.lineno}")
    if not sites:
        return (True, "no module of torch_npu's Inductor takes an op out of Inductor's decompositions or lowerings")
    return (False, f"ops taken out of Inductor's decompositions or lowerings at {', '.join(sites[:4])}")


def templates_import_its_libdevice(sources: Sources) -> tuple[bool, str]:
    """Whether the release's template kernels import the libdevice its own kernels import (carried), or its index
    kernel writes a header of its own (gen_triton_ext_imports, libdevice from torch_npu) while templates keep
    torch's, whose libdevice triton-ascend leaves as stubs (the bug)."""
    header = index_kernel_method(sources, "gen_triton_ext_imports")
    if not isinstance(header, ast.FunctionDef):
        return (True, "its index kernel has no header of its own: its templates' header is the one it writes")
    texts = [node.value for node in ast.walk(header) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    imports = [line for text in texts for line in text.splitlines() if "import libdevice" in line]
    if not imports or all(imports_torchs_libdevice(line) for line in imports):
        return (True, "its index kernels' header imports torch's libdevice too")
    return (False, "its index kernels import libdevice from torch_npu; its templates keep torch's header")
