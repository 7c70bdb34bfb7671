"""Run a graph's complete NPU C++ wrapper for real on the simulated NPU, against the emulated ACL (a fresh process)."""

# Usage: python run_wrapper.py PLAN.json  (prints one JSON line). The environment carries the build options the
# package uses for device "npu" (NPU_INDUCTOR_COMPAT_TORCH_NPU_HOME, ASCEND_HOME_PATH; see build.py).
# Inductor's CPU-ISA probe verdicts are the machine's, kept by the tool (isa_verdicts.py) as codegen --execute does.
# Every process generates its code afresh (no FX graph, AOTAutograd or autotune cache: the scenario hooks see each
# kernel), while what Inductor keys by content (the wrapper's .so, by its source and build command) is reused from
# TORCHINDUCTOR_CACHE_DIR, which the harness shares within a test session.
#
# Inductor generates the C++ wrapper for ``graph`` (``cpp_wrapper=True``, dynamic shapes), compiles it and links it
# with the package's build options against libtorch_npu / libascendcl, loads it and calls it with real input tensors.
# The emulated ACL records each launch; with "execute" the emulated device runs each kernel from its packed arguments
# in Triton's interpreter (executed_run.py), else it dirties the memory the launch was given. Each kernel gets the
# launch metadata of one scenario, in the order Inductor saves them.
#
# PLAN: {"scenarios": [metadata, ...], "cores": {device: [ai, vector]}, "record": bool, "execute": n, "phases":
# [{"device": d, "sizes": [n or "over_limit", ...], "env": {...}, "fail": [ACL function or null, ...], "plant":
# bool, "memory": bytes}, ...]}. A phase with a new device, env or plant compiles afresh; "memory" is the device memory
# the emulated ACL hands out during the phase (none: no limit); each size is called once per entry of
# "fail", with that ACL function failing; "execute" runs the kernels of calls whose input has at most n elements;
# "plant" (with "execute") generates each launch with a defect (executed_run.PLANTS). For each call the output
# records the size, device, input and output data pointers and which launches it made, for an executed call whether
# each output matched eager and what the device found; for each failing call the error message. After each call
# every task queue is emptied and the device synchronised, as
# torch.npu.synchronize() does (the stub libtorch_npu's emulated_torch_npu_synchronize_device).
#
# With "graph": "mm" the graph is a Triton kernel, a torch_npu matmul (torch_npu's C shim) and another Triton kernel,
# called "calls" times on device 0, with the task queue's consumer held until the call has returned if "hold_queue" is
# set (a consumer thread not yet scheduled), or with the product's queued work held after it took its workspace until
# the call has returned if "gate_mm" is set; on stream "stream" of device 0 (default 0: its default stream; the
# calling thread selects it, as torch.npu.set_stream does). Its kernels take "scenarios" in turn. "capturing" makes the
# stream report an aclgraph capture, "soc" names the SoC aclrtGetSocName reports (default Ascend910B1).
#
# "launch": "direct" generates the launch as this package did before it used the task queue (straight onto the
# stream from the calling thread, its scratch from the per-stream block there); "launch": "before-queue" the whole
# launch of that time: also with a lock image looked up and copied under two locks. Both show what the tests catch.
#
# With "graph": "threads" the four-kernel graph runs on "threads" host threads at once on device 0, each calling it
# "iterations" times with its own sizes ("sizes": one list per thread), then the device is synchronised; the output
# gives the calls made, the errors, the hazards and the ACL call counts (no per-call records). With "pause" set, the
# first thread starts alone and its first workspace request, once served, waits until another is served (2 s at
# most); the other threads start once it waits.

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import sys
from typing import Any

# cpp_wrapper without the caches that would skip codegen (force_disable_caches would also give every compile a fresh
# folder, rebuilding the same wrapper .so in each process: ~10 s each)
CPP_WRAPPER_AFRESH = {
    "cpp_wrapper": True,
    "fx_graph_cache": False,
    "fx_graph_remote_cache": False,
    "autotune_local_cache": False,
    "autotune_remote_cache": False,
    "bundled_autotune_remote_cache": False,
}


def graph(x: Any) -> Any:
    """Four kernels: a pointwise one, a reduction over rows of 8, a pointwise one over half the input and a
    reduction over rows of 16 (sizes must be multiples of 16)."""
    return (
        x.sin() + 1.0,
        x.view(-1, 8).cos().sum(1),
        (x[::2] * 3.0 + x[1::2]).relu(),
        x.view(-1, 16).exp().amax(1),
    )


def mm_graph(x: Any, w: Any) -> Any:
    """A pointwise kernel, the product (an extern torch_npu op between two kernels), a pointwise kernel."""
    return ((x.sin() + 1.0) @ w).cos()


def direct_launch() -> None:
    """The launch as generated before the task queue: the same statements, run on the calling thread."""
    from npu_inductor_compat.common.device import npu_cpp_wrapper

    queued = npu_cpp_wrapper.render_launch

    def render(*args: Any, **kwargs: Any) -> str:
        lines = queued(*args, **kwargs).splitlines()
        start = lines.index("auto npu_launch_ = [=]() -> int {")
        body = [line[2:] for line in lines[start + 1 : -3]]  # less "return 0;", "};" and the RunOpApiV2 call
        assert lines[-1].startswith("at_npu::native::OpCommand::RunOpApiV2("), lines[-1]
        launch = "\n".join(lines[:start] + body)  # its scratch from the per-stream block, as that launch took it
        return launch.replace(", npu_caller_, npu_kernel_)", ", std::thread::id(), npu_kernel_)")

    npu_cpp_wrapper.render_launch = render


def launch_before_the_queue() -> None:
    """The whole launch as generated before the task queue: direct (its scratch from the per-stream block on the
    calling thread), and with each lock image looked up under the images' lock and copied after it was released."""
    from npu_inductor_compat.common.device import npu_cpp_wrapper

    direct_launch()
    runtime = npu_cpp_wrapper.runtime_source

    together = (
        "  std::lock_guard<std::mutex> hold(lock_images_guard());\n"
        "  LockImage& image = lock_image(layout, ordered_init, device, kernel);\n"
    )
    split = (  # the copy's event goes to a copy of the entry: nothing tells an eviction the image is read
        "  LockImage detached;\n"
        "  detached.host = [&] {\n"
        "    std::lock_guard<std::mutex> hold(lock_images_guard());\n"
        "    return lock_image(layout, ordered_init, device, kernel).host;\n"
        "  }();\n"
        "  LockImage& image = detached;\n"
    )

    def runtime_source() -> str:
        source = runtime()
        assert together in source, "copy_lock_image changed: update launch_before_the_queue"
        return source.replace(together, split)

    npu_cpp_wrapper.runtime_source = runtime_source


def keep_saved_params() -> None:
    """Keep every kernel's saved params and its autotuner (Inductor forgets them once the wrapper is generated): the
    tool's record for codegen --execute, in its SAVED."""
    from npu_inductor_compat.patching import Journal
    from npu_inductor_compat.tools.simulated.execution.cpp_device import SAVED_RECORD

    Journal().apply([SAVED_RECORD])


def remember(kernels: dict[str, dict[str, Any]], assigned: dict[str, int]) -> None:
    """Each kernel's scenario, block size and launch arguments (name and Triton type), from its saved params."""
    from npu_inductor_compat.tools.simulated.execution.cpp_device import SAVED

    for name, scenario in assigned.items():
        params = SAVED.params.get(name)
        if params and name not in kernels:
            meta = params["triton_meta"]
            arguments = [arg for arg in params["call_args"] if arg not in meta["constants"]]
            kernels[name] = {
                "scenario": scenario,
                "config": {key: value for key, value in params["config"].items() if isinstance(value, int)},
                "args": [[arg, meta["signature"][arg]] for arg in arguments],
            }


def scenario_of(scenarios: list[dict[str, Any]], assigned: dict[str, int]) -> Any:
    """kernel -> its scenario's metadata: the kernels in the order they are first compiled take the scenarios in turn
    (``assigned`` records which)."""

    def metadata_for(kernel: str) -> dict[str, Any]:
        if kernel not in assigned:
            assigned[kernel] = len(assigned) % len(scenarios)
        return dict(scenarios[assigned[kernel]])

    return metadata_for


def over_the_launch_limit(kernels: dict[str, dict[str, Any]]) -> int:
    """An input size for which the first (pointwise) kernel's grid has 65536 blocks."""
    first = next(iter(kernels.values()))
    return 65536 * int(first["config"]["XBLOCK"])


def main() -> None:
    with open(sys.argv[1]) as file:
        plan = json.load(file)
    if plan.get("execute"):  # Triton decides at import whether its functions are interpreted
        os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    from executed_run import Executed

    from npu_inductor_compat.activation import activate
    from npu_inductor_compat.common.composition import providers
    from npu_inductor_compat.patching import Journal
    from npu_inductor_compat.tools.simulated.codegen.kernel_params import simulated_metadata
    from npu_inductor_compat.tools.simulated.execution.isa_verdicts import ISA_VERDICTS_RECORD
    from npu_inductor_compat.tools.simulated.npu import device

    acl = ctypes.CDLL(os.path.join(os.environ["ASCEND_HOME_PATH"], "lib64", "libascendcl.so"))
    npu = ctypes.CDLL(os.path.join(os.environ["NPU_INDUCTOR_COMPAT_TORCH_NPU_HOME"], "lib", "libtorch_npu.so"))
    npu.emulated_torch_npu_hold_queue.argtypes = [ctypes.c_int32, ctypes.c_int]
    npu.emulated_torch_npu_set_stream.argtypes = [ctypes.c_int32, ctypes.c_int32]
    npu.emulated_torch_npu_last_error.restype = ctypes.c_char_p
    npu.emulated_torch_npu_gate_mm.argtypes = [ctypes.c_int]

    def synchronize() -> None:
        if npu.emulated_torch_npu_synchronize_device() != 0:
            raise RuntimeError(npu.emulated_torch_npu_last_error().decode())

    acl.emulated_acl_report.restype = ctypes.c_char_p
    acl.emulated_acl_fail.argtypes = [ctypes.c_char_p]
    acl.emulated_acl_set_cores.argtypes = [ctypes.c_int32, ctypes.c_int64, ctypes.c_int64]
    acl.emulated_acl_set_soc_name.argtypes = [ctypes.c_char_p]
    for index, (ai, vector) in plan["cores"].items():
        acl.emulated_acl_set_cores(int(index), ai, vector)
    record = plan.get("record", True)  # off: no launch records, no per-call bookkeeping (benchmarks)
    acl.emulated_acl_record_launches(int(record))

    functorch_config.enable_autograd_cache = False  # its hit would skip Inductor's codegen too
    Journal().apply([ISA_VERDICTS_RECORD])  # the machine's verdicts, as codegen --execute keeps them
    device.setup()
    providers.set_provider(device.PROVIDER)
    activate()
    keep_saved_params()
    if plan.get("launch") == "direct":
        direct_launch()
    elif plan.get("launch") == "before-queue":
        launch_before_the_queue()
    if plan.get("graph") == "mm":
        print(json.dumps(run_mm(plan, acl, npu, synchronize)))
        return
    if plan.get("graph") == "threads":
        print(json.dumps(run_threads(plan, acl, npu, synchronize)))
        return
    assigned: dict[str, int] = {}
    metadata_for = scenario_of(plan["scenarios"], assigned)
    executed = Executed(acl, metadata_for, assigned, plan["execute"]) if plan.get("execute") else None

    calls: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    kernels: dict[str, dict[str, Any]] = {}
    compiled, compiled_for = None, None
    with inductor_config.patch(CPP_WRAPPER_AFRESH), simulated_metadata(metadata_for):
        for phase in plan["phases"]:
            os.environ.update(phase.get("env", {}))
            key = (phase["device"], json.dumps(phase.get("env", {}), sort_keys=True), phase.get("plant"))
            if key != compiled_for:
                torch._dynamo.reset()
                compiled, compiled_for = torch.compile(graph, dynamic=True), key
            plant = bool(phase.get("plant")) and executed is not None
            acl.emulated_acl_set_memory_limit(ctypes.c_int64(phase.get("memory", 0)))
            for size in phase["sizes"]:
                n = size if isinstance(size, int) else over_the_launch_limit(kernels)
                x = torch.randn(n).to(f"npu:{phase['device']}")
                if not record:
                    compiled(x)
                    synchronize()
                    continue
                for function in phase.get("fail", [None]):
                    acl.emulated_acl_fail((function or "").encode())
                    before = json.loads(acl.emulated_acl_report())
                    first, hazards = len(before["launches"]), len(before["hazards"])
                    if executed:
                        executed.select(n)
                    try:
                        with executed.planted(plant) if executed else contextlib.nullcontext():
                            outputs = compiled(x)
                    except Exception as err:  # the wrapper's C++ error, as Python sees it
                        errors.append({"n": n, "fail": function, "type": type(err).__name__, "message": str(err)})
                        outputs = None
                    finally:
                        acl.emulated_acl_fail(b"")
                    try:
                        synchronize()
                    except RuntimeError as err:
                        errors.append({"n": n, "fail": function, "type": type(err).__name__, "message": str(err)})
                        outputs = None
                    launched = json.loads(acl.emulated_acl_report())["launches"]
                    last = len(launched)
                    remember(kernels, assigned)
                    if outputs is not None:
                        calls.append(
                            {
                                "n": n,
                                "device": phase["device"],
                                "x": x.data_ptr(),
                                "outputs": [out.data_ptr() for out in outputs],
                                "launches": [first, last],
                                # the report starts again after a planted phase: its launches are kept here
                                **({"planted_launches": launched[first:last]} if plant else {}),
                                **(executed.compare(x, outputs, graph, hazards) if executed else {}),
                            }
                        )
                    del outputs
            if phase.get("plant"):  # its findings are in its calls' records; the report starts again after it
                acl.emulated_acl_reset()
    report = json.loads(acl.emulated_acl_report())
    print(json.dumps({"kernels": kernels, "calls": calls, "errors": errors, "report": report}))


def run_mm(plan: dict[str, Any], acl: Any, npu: Any, synchronize: Any) -> dict[str, Any]:
    """The product graph "calls" times; per call what reached the stream in which order, hazards and errors."""
    import torch
    import torch._inductor.config as inductor_config

    from npu_inductor_compat.tools.simulated.codegen.kernel_params import simulated_metadata

    calls = []
    acl.emulated_acl_set_soc_name(plan.get("soc", "Ascend910B1").encode())
    with (
        inductor_config.patch(CPP_WRAPPER_AFRESH),
        simulated_metadata(scenario_of(plan["scenarios"], {})),
    ):
        compiled = torch.compile(mm_graph)
        x, w = torch.randn(16, 32).to("npu:0"), torch.randn(32, 16).to("npu:0")
        npu.emulated_torch_npu_set_stream(0, plan.get("stream", 0))
        for _ in range(plan.get("calls", 1)):
            acl.emulated_acl_reset()
            if plan.get("hold_queue"):
                npu.emulated_torch_npu_hold_queue(0, 1)
            acl.emulated_acl_fail(plan.get("fail", "").encode())
            acl.emulated_acl_set_capturing(0, int(plan.get("capturing", False)))
            npu.emulated_torch_npu_gate_mm(int(plan.get("gate_mm", False)))
            errors = []
            for at, step in (("call", lambda: compiled(x, w)), ("synchronize", synchronize)):
                try:
                    step()
                except RuntimeError as err:  # where a failure surfaces: at the call, or at the next drain
                    errors.append({"at": at, "message": str(err)})
                npu.emulated_torch_npu_gate_mm(0)  # the call has returned: the product's work goes on
            acl.emulated_acl_fail(b"")
            acl.emulated_acl_set_capturing(0, 0)
            npu.emulated_torch_npu_hold_queue(0, 0)
            report = json.loads(acl.emulated_acl_report())
            calls.append(
                {"order": report["order"], "hazards": report["hazards"], "errors": errors, "acl": report["calls"]}
            )
    return {"calls": calls}


def run_threads(plan: dict[str, Any], acl: Any, npu: Any, synchronize: Any) -> dict[str, Any]:
    """The graph on several host threads at once (compiled once, before the threads start)."""
    import threading
    import time

    import torch
    import torch._inductor.config as inductor_config

    from npu_inductor_compat.tools.simulated.codegen.kernel_params import simulated_metadata

    assigned: dict[str, int] = {}
    metadata_for = scenario_of(plan["scenarios"], assigned)

    calls, errors = [0], []
    guard = threading.Lock()
    start = threading.Barrier(plan["threads"])
    with inductor_config.patch(CPP_WRAPPER_AFRESH), simulated_metadata(metadata_for):
        compiled = torch.compile(graph, dynamic=True)
        compiled(torch.randn(48).to("npu:0"))  # compiled here: the threads only call it
        compiled(torch.randn(64).to("npu:0"))
        synchronize()
        acl.emulated_acl_reset()
        inputs = [[torch.randn(n).to("npu:0") for n in sizes] for sizes in plan["sizes"]]

        pause = plan.get("pause", False)
        if pause:
            npu.emulated_torch_npu_pause_next_workspace()

        def work(mine: list[Any]) -> None:
            if not pause:
                start.wait()
            elif mine is not inputs[0]:  # the first thread's request is held: now the others
                deadline = time.monotonic() + 30
                while not npu.emulated_torch_npu_workspace_paused() and time.monotonic() < deadline:
                    time.sleep(0.001)
                if plan.get("empty_cache") and npu.emulated_torch_npu_empty_cache(0) != 0:
                    with guard:
                        errors.append(npu.emulated_torch_npu_last_error().decode())
            for _ in range(plan["iterations"]):
                for x in mine:
                    try:
                        expected = x.view(-1, 16).exp().amax(1)
                        outputs = compiled(x)
                        # the graph's last output, computed on the host: the wrapper ran every kernel for this x
                        # (the kernels themselves do not run here, so only its shape is comparable)
                        assert outputs[3].shape == expected.shape
                    except Exception as err:  # reported, not raised: the other thread goes on
                        with guard:
                            errors.append(f"{type(err).__name__}: {err}")
                        return
                    with guard:
                        calls[0] += 1

        threads = [threading.Thread(target=work, args=(mine,)) for mine in inputs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        try:
            synchronize()
        except RuntimeError as err:
            errors.append(str(err))
    report = json.loads(acl.emulated_acl_report())
    return {"calls": calls[0], "errors": errors, "hazards": report["hazards"], "acl": report["calls"]}


if __name__ == "__main__":
    main()
