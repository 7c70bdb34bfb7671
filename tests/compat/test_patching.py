"""The patch journal on real torch attributes: exact undo (identity), rollback at every position, threads."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

from npu_inductor_compat.patching import (
    ABSENT,
    ActivationFailed,
    Change,
    Journal,
    Patch,
    PatchError,
    PatchTargetMissing,
    constant,
)

STATIC = "torch._dynamo.device_interface:DeviceInterface.get_raw_stream"
CLASSMETHOD = "torch._inductor.codecache:CudaKernelParamCache.set"
GPU_TYPES = "torch._inductor.utils:GPU_TYPES"
# a module-level dict on every torch line (DEVICE_TO_ATEN, used before, is gone in 2.15)
DTYPE_TO_CPP = "torch._inductor.codegen.cpp_utils:DTYPE_TO_CPP"


def record(patch_id: str, *changes: Change, **kw: Any) -> Patch:
    return Patch(id=patch_id, why="test", upstream="none", remove_when="never", changes=tuple(changes), **kw)


def wrap(old: Any) -> Any:
    def replacement(*args: Any, **kwargs: Any) -> Any:
        return old(*args, **kwargs)

    replacement.__wrapped__ = old  # type: ignore[attr-defined]
    return replacement


def snapshot() -> dict[str, Any]:
    from torch._dynamo.device_interface import DeviceInterface
    from torch._inductor import utils
    from torch._inductor.codecache import CudaKernelParamCache
    from torch._inductor.codegen import cpp_utils

    return {
        "static": DeviceInterface.__dict__["get_raw_stream"],
        "classmethod": CudaKernelParamCache.__dict__["set"],
        "gpu_types": list(utils.GPU_TYPES),
        "gpu_types_obj": utils.GPU_TYPES,
        "dict-item": dict(cpp_utils.DTYPE_TO_CPP),
        "dict_obj": cpp_utils.DTYPE_TO_CPP,
        "new_attr": "npu_compat_test_attr" in vars(utils),
    }


def assert_same(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert after["static"] is before["static"]
    assert after["classmethod"] is before["classmethod"]
    assert after["gpu_types_obj"] is before["gpu_types_obj"] and after["gpu_types"] == before["gpu_types"]
    assert after["dict_obj"] is before["dict_obj"] and after["dict-item"] == before["dict-item"]
    assert after["new_attr"] == before["new_attr"]


def real_patches() -> list[Patch]:
    return [
        record("static", Change(STATIC, wrap)),
        record("classmethod", Change(CLASSMETHOD, wrap)),
        record("gpu-types", Change(GPU_TYPES, constant("npu"), kind="list_item")),
        record(
            "dict-item", Change(DTYPE_TO_CPP, constant("npu_scalar_t"), kind="dict_item", key="npu", must_exist=False)
        ),
        record("new-attr", Change("torch._inductor.utils:npu_compat_test_attr", constant(42), must_exist=False)),
    ]


def test_apply_undo_apply_restores_identical_objects() -> None:
    from torch._dynamo.device_interface import DeviceInterface
    from torch._inductor import utils
    from torch._inductor.codecache import CudaKernelParamCache

    before = snapshot()
    journal = Journal()
    for _ in range(2):
        applied = journal.apply(real_patches())
        assert [p.id for p in applied] == ["static", "classmethod", "gpu-types", "dict-item", "new-attr"]
        # staticmethod/classmethod-ness survives: we replaced the raw function, read through __dict__
        assert not isinstance(DeviceInterface.__dict__["get_raw_stream"], staticmethod)
        assert DeviceInterface.__dict__["get_raw_stream"].__wrapped__ is before["static"]
        assert CudaKernelParamCache.__dict__["set"].__wrapped__ is before["classmethod"]
        assert utils.GPU_TYPES.count("npu") == 1
        assert utils.npu_compat_test_attr == 42  # type: ignore[attr-defined]
        assert journal.undo() == ["new-attr", "dict-item", "gpu-types", "classmethod", "static"]
        assert_same(before, snapshot())
        assert journal.applied() == []


def test_replacement_receives_the_bound_behaviour_of_the_original() -> None:
    """A wrapper built on a classmethod still works when called through the class."""
    from torch._inductor.codecache import CudaKernelParamCache

    journal = Journal()
    seen: list[Any] = []

    def make(old: Any) -> Any:
        def set_(*args: Any) -> None:
            seen.append(args)

        return classmethod(set_) if isinstance(old, classmethod) else set_

    journal.apply([record("cm", Change(CLASSMETHOD, make))])
    try:
        CudaKernelParamCache.set("k", {}, "c", "b")
        assert seen == [(CudaKernelParamCache, "k", {}, "c", "b")]
    finally:
        journal.undo()


def test_apply_is_idempotent_by_id() -> None:
    from torch._inductor import utils

    journal = Journal()
    journal.apply(real_patches())
    try:
        assert journal.apply(real_patches()) == []
        assert utils.GPU_TYPES.count("npu") == 1
        assert len(journal.applied()) == 5
    finally:
        journal.undo()


def test_list_item_already_present_is_left_alone_on_undo() -> None:
    from torch._inductor import utils

    utils.GPU_TYPES.append("npu")  # someone else (torch_npu) made npu GPU-like first
    try:
        journal = Journal()
        journal.apply([record("gpu-types", Change(GPU_TYPES, constant("npu"), kind="list_item"))])
        journal.undo()
        assert utils.GPU_TYPES.count("npu") == 1
    finally:
        utils.GPU_TYPES.remove("npu")


@pytest.mark.parametrize("position", range(6))
@pytest.mark.parametrize("how", ["missing-target", "replacement-raises", "refresh-raises"])
def test_failure_at_each_position_rolls_back_everything(position: int, how: str) -> None:
    before = snapshot()
    patches = real_patches()
    if how == "missing-target":
        bad = record("bad", Change("torch._inductor.utils:no_such_attribute_anywhere", constant(1)))
    elif how == "replacement-raises":
        bad = record("bad", Change(STATIC, lambda old: 1 / 0))
    else:
        bad = record(
            "bad",
            Change("torch._inductor.utils:npu_compat_bad", constant(1), must_exist=False),
            refresh=lambda: (_ for _ in ()).throw(OSError("refresh failed")),
        )
    patches.insert(position, bad)
    journal = Journal()
    with pytest.raises(PatchError) as caught:
        journal.apply(patches)
    assert "'bad'" in str(caught.value)
    assert journal.applied() == []
    assert_same(before, snapshot())
    from torch._inductor import utils

    assert "npu_compat_bad" not in vars(utils)


def test_missing_target_names_patch_and_target() -> None:
    journal = Journal()
    with pytest.raises(PatchTargetMissing, match="patch 'gone'.*torch._inductor.nonexistent_module"):
        journal.apply([record("gone", Change("torch._inductor.nonexistent_module:x", constant(1)))])
    with pytest.raises(PatchTargetMissing, match="patch 'gone2'.*NoSuchClass"):
        journal.apply([record("gone2", Change("torch._inductor.utils:NoSuchClass.attr", constant(1)))])
    with pytest.raises(PatchTargetMissing, match="key 'npu' missing"):
        journal.apply([record("gone3", Change(DTYPE_TO_CPP, constant(1), kind="dict_item", key="npu"))])


def test_non_patch_errors_are_wrapped_with_the_id() -> None:
    journal = Journal()
    with pytest.raises(ActivationFailed, match="patch 'boom' failed: ZeroDivisionError"):
        journal.apply([record("boom", Change(STATIC, lambda old: 1 / 0))])


def test_transition_failure_restores_the_previous_patches_exactly() -> None:
    from torch._dynamo.device_interface import DeviceInterface

    journal = Journal()
    journal.apply([record("static", Change(STATIC, wrap))])
    patched = DeviceInterface.__dict__["get_raw_stream"]
    with pytest.raises(PatchError):
        journal.transition(["static"], [record("bad", Change("torch._inductor.utils:nope", constant(1)))])
    assert DeviceInterface.__dict__["get_raw_stream"] is patched
    assert [p.id for p in journal.applied()] == ["static"]
    journal.undo()


def test_undo_warns_when_someone_else_replaced_the_target(caplog: pytest.LogCaptureFixture) -> None:
    from torch._inductor import utils

    journal = Journal()
    journal.apply([record("attr", Change("torch._inductor.utils:npu_compat_x", constant(1), must_exist=False))])
    utils.npu_compat_x = 2  # type: ignore[attr-defined]
    journal.undo()
    assert "replaced by someone else" in caplog.text
    assert "npu_compat_x" not in vars(utils)


def test_eight_threads_apply_each_patch_once(in_eight_threads: Any) -> None:
    from torch._inductor import utils

    calls: list[str] = []
    lock = threading.Lock()

    def counting(old: Any) -> Any:
        with lock:
            calls.append("x")
        return wrap(old)

    patches = [record("static", Change(STATIC, counting)), *real_patches()[1:]]
    journal = Journal()
    try:
        applied = in_eight_threads(lambda: journal.apply(patches))
        assert sorted(len(newly) for newly in applied) == [0] * 7 + [5]  # one thread applied, seven found it done
        assert calls == ["x"]
        assert utils.GPU_TYPES.count("npu") == 1
        assert len(journal.applied()) == 5
    finally:
        journal.undo()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": ""}, "patch id"),
        ({"id": "has space"}, "patch id"),
        ({"changes": ()}, "changes nothing"),
        ({"why": " "}, "'why'"),
        ({"remove_when": ""}, "'remove_when'"),
    ],
)
def test_bad_records_are_refused(kwargs: dict[str, Any], message: str) -> None:
    base: dict[str, Any] = {
        "id": "ok",
        "why": "w",
        "upstream": "u",
        "remove_when": "r",
        "changes": (Change(STATIC, constant(1)),),
    }
    base.update(kwargs)
    with pytest.raises(ValueError, match=message):
        Patch(**base)


def test_bad_change_target_is_refused() -> None:
    with pytest.raises(ValueError, match="must look like"):
        Change("torch._inductor.utils.GPU_TYPES", constant(1))
    with pytest.raises(ValueError, match="kind"):
        Change(GPU_TYPES, constant(1), kind="set")  # type: ignore[arg-type]


def test_absent_sentinel_is_falsy_and_unique() -> None:
    assert not ABSENT and repr(ABSENT) == "ABSENT" and type(ABSENT)("ABSENT") is ABSENT and len(type(ABSENT)) == 1


def test_a_record_is_refused_without_the_record_it_requires_and_nothing_is_applied() -> None:
    """Unknown is never zero: a launch that reads what another record stores must not be applied alone."""
    before = snapshot()
    store = record("store-metadata", Change(STATIC, wrap))
    launch = record("launch-from-metadata", Change(CLASSMETHOD, wrap), requires=("store-metadata",))
    journal = Journal()
    with pytest.raises(PatchError, match=r"'launch-from-metadata' requires 'store-metadata'.*Disable both or neither"):
        journal.apply([launch])
    assert journal.applied() == []
    assert_same(before, snapshot())
    # satisfied elsewhere (upstream already does it), in the same batch, or applied earlier: accepted
    other = Journal()
    assert [p.id for p in other.apply([launch], satisfied={"store-metadata"})] == ["launch-from-metadata"]
    other.undo()
    journal.apply([launch, store])
    journal.undo()
    journal.apply([store])
    journal.apply([launch])
    assert [p.id for p in journal.applied()] == ["store-metadata", "launch-from-metadata"]
    journal.undo()
    assert_same(before, snapshot())


def test_the_launch_record_requires_the_metadata_record(adapters: Any) -> None:
    from npu_inductor_compat.common.fixes import cpp_wrapper_launch

    launch = cpp_wrapper_launch.cpp_wrapper_workspace_locks(adapters)
    assert launch.requires == (cpp_wrapper_launch.AUTOTUNER_KERNEL_METADATA.id,)
    with pytest.raises(ValueError, match="cannot require itself"):
        record("self", Change(STATIC, wrap), requires=("self",))


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_inside_a_patch_is_rolled_back_and_passes_through_unchanged(interrupt: type) -> None:
    before = snapshot()

    def interrupted(_old: Any) -> Any:
        raise interrupt()

    journal = Journal()
    with pytest.raises(interrupt):
        journal.apply([record("first", Change(STATIC, wrap)), record("second", Change(CLASSMETHOD, interrupted))])
    assert journal.applied() == []
    assert_same(before, snapshot())


def test_every_change_kind_is_its_own_edit_class_with_exact_undo_and_redo() -> None:
    """Each kind applies, undoes to the identical previous state, and redoes to the identical new state."""
    import types
    import typing

    from npu_inductor_compat import patching

    assert set(patching.EDITS) == set(typing.get_args(patching.ChangeKind))
    holder = types.SimpleNamespace(attr=object(), items=["a"], table={"k": object()}, registry={})
    module = types.ModuleType("edit_kinds_target")
    module.holder = holder  # type: ignore[attr-defined]
    module.register = lambda key, value: holder.registry.__setitem__(key, value)  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        new_attr, new_item = object(), object()
        changes = {
            "attr": Change("edit_kinds_target:holder.attr", constant(new_attr)),
            "list_item": Change("edit_kinds_target:holder.items", constant("b"), kind="list_item"),
            "dict_item": Change("edit_kinds_target:holder.table", constant(new_item), kind="dict_item", key="k"),
            "registration": Change(
                "edit_kinds_target:register",
                lambda register: register("npu", new_item),
                kind="registration",
                key="npu",
                touches=("edit_kinds_target:holder.registry",),
            ),
        }
        before = (holder.attr, list(holder.items), holder.table["k"], dict(holder.registry))
        for kind, change in changes.items():
            edit = patching._apply_change("kinds", change)
            assert type(edit) is patching.EDITS[kind]
            after = (holder.attr, list(holder.items), holder.table["k"], dict(holder.registry))
            assert edit is not None
            edit.undo()
            restored = (holder.attr, list(holder.items), holder.table["k"], dict(holder.registry))
            assert restored[0] is before[0] and restored[1:] == before[1:] and restored[2] is before[2]
            edit.redo()
            redone = (holder.attr, list(holder.items), holder.table["k"], dict(holder.registry))
            assert redone[0] is after[0] and redone[1:] == after[1:] and redone[2] is after[2]
            edit.undo()
    finally:
        del sys.modules[module.__name__]


def test_a_key_given_by_target_is_resolved_when_applied_and_undone_exactly() -> None:
    """key_at: a dict key that is an object behind an import (torch's higher-order ops), resolved at apply time."""
    import types

    key = object()
    module = types.ModuleType("key_at_target")
    module.key = key  # type: ignore[attr-defined]
    module.table = {key: "old"}  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        change = Change("key_at_target:table", constant("new"), kind="dict_item", key_at="key_at_target:key")
        assert change.describe() == "key_at_target:table[key_at_target:key]"
        journal = Journal()
        journal.apply([record("keyed", change)])
        assert module.table == {key: "new"}  # type: ignore[attr-defined]
        journal.undo()
        assert module.table == {key: "old"}  # type: ignore[attr-defined]
        missing = Change("key_at_target:table", constant("x"), kind="dict_item", key_at="key_at_target:absent")
        with pytest.raises(PatchTargetMissing, match="'gone-key'.*the key target 'key_at_target:absent'"):
            Journal().apply([record("gone-key", missing)])
    finally:
        del sys.modules[module.__name__]
    with pytest.raises(ValueError, match="key_at is for a dict_item or registration change without key"):
        Change("key_at_target:table", constant(1), key_at="key_at_target:key")
    with pytest.raises(ValueError, match="key_at is for"):
        Change("key_at_target:table", constant(1), kind="dict_item", key="k", key_at="key_at_target:key")
