// The emulated ACL runtime, continued: aclgraph capture and events (built into the same libascendcl.so).
//  - capture begun on a stream (aclmdlRICaptureBegin): its work is captured, not run, until aclmdlRICaptureEnd from the
//    same thread; aclmdlRICaptureGetInfo reports it, as it reports a capture the test sets (emulated_acl_set_capturing);
//  - events (aclrtCreateEventWithFlag, aclrtRecordEvent): complete once every record queued on them has run;
//    aclrtSynchronizeEvent runs the streams they are queued on.
// Built with EMULATED_ACL_WITHOUT_CAPTURE it has no capture functions at all, as a CANN from before aclgraph capture.
#include "emulated_acl_state.h"

#include <string>
#include <thread>
#include <utility>

namespace emulated_acl_internal __attribute__((visibility("hidden"))) {

// aclgraph capture modes (acl_rt.h aclmdlRICaptureMode; torch_npu/npu/graphs.py, capture_error_mode: "global" errors
// on unsafe actions in other threads, "thread_local" only in the capturing thread, "relaxed" never), the calling
// thread's own mode swapped by aclmdlRICaptureThreadExchangeMode. An unsafe call (pinned memory allocated or freed, a
// device or an event synchronised) is refused with ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT unless this thread is
// relaxed, when another thread captures in global mode or this thread captures in any mode but relaxed.
thread_local aclmdlRICaptureMode thread_mode = ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;

aclError capture_forbids(const char* function) {
  if (thread_mode == ACL_MODEL_RI_CAPTURE_MODE_RELAXED) return ACL_SUCCESS;
  for (const auto& [key, stream] : state().streams) {
    if (!stream.begun) continue;
    const bool mine = stream.captured_by == std::this_thread::get_id();
    const bool forbids = mine ? stream.begun_mode != ACL_MODEL_RI_CAPTURE_MODE_RELAXED
                              : stream.begun_mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;
    if (forbids) {
      recent_error = std::string("EE9999: [emulated ACL] ") + function + " is not allowed while " +
                     (mine ? "this thread" : "another thread") + " captures a stream into an aclgraph";
      return ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT;
    }
  }
  return ACL_SUCCESS;
}

}  // namespace emulated_acl_internal

using namespace emulated_acl_internal;

#ifndef EMULATED_ACL_WITHOUT_CAPTURE  // a CANN before aclgraph capture: no such functions at all
aclError aclmdlRICaptureGetInfo(aclrtStream stream, aclmdlRICaptureStatus* status, aclmdlRI* modelRI) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError error = enter("aclmdlRICaptureGetInfo")) return error;
  Stream* found = stream_of(stream);
  if (found == nullptr || status == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
  const bool active = found->capturing || found->begun;
  *status = active ? ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE : ACL_MODEL_RI_CAPTURE_STATUS_NONE;
  if (modelRI != nullptr) *modelRI = nullptr;
  return ACL_SUCCESS;
}

aclError aclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError error = enter("aclmdlRICaptureBegin")) return error;
  Stream* found = stream_of(stream);
  if (found == nullptr || found->begun) return ACL_ERROR_RT_PARAM_INVALID;
  found->begun = true;
  found->captured_by = std::this_thread::get_id();
  found->begun_mode = mode;
  return ACL_SUCCESS;
}

aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI* modelRI) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError error = enter("aclmdlRICaptureEnd")) return error;
  Stream* found = stream_of(stream);
  if (found == nullptr || !found->begun) return ACL_ERROR_RT_STREAM_NOT_CAPTURED;
  if (found->captured_by != std::this_thread::get_id()) return ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD;
  found->begun = false;
  if (modelRI != nullptr) *modelRI = nullptr;
  return ACL_SUCCESS;
}

aclError aclmdlRICaptureThreadExchangeMode(aclmdlRICaptureMode* mode) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError error = enter("aclmdlRICaptureThreadExchangeMode")) return error;
  if (mode == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
  std::swap(*mode, thread_mode);
  return ACL_SUCCESS;
}
#endif

aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtCreateEventWithFlag")) return status;
  (void)flag;
  *event = new Event();
  return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtRecordEvent")) return status;
  if (event == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
  Op op;
  op.kind = "record";
  op.event = static_cast<Event*>(event);
  Stream* found = stream_of(stream);
  const aclError queued = queue(stream, std::move(op));
  if (queued == ACL_SUCCESS && found != nullptr && !found->begun) static_cast<Event*>(event)->pending += 1;
  return queued;
}

// Waits until the event's records have run: here, runs the streams they are queued on.
aclError aclrtSynchronizeEvent(aclrtEvent event) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtSynchronizeEvent")) return status;
  if (aclError status = capture_forbids("aclrtSynchronizeEvent")) return status;
  auto* waited = static_cast<Event*>(event);
  if (waited == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
  for (auto& [key, stream] : state().streams) {
    if (waited->pending == 0) break;
    for (const Op& op : stream.queued) {
      if (op.event == waited) {
        run_stream(stream);
        break;
      }
    }
  }
  return ACL_SUCCESS;
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  std::lock_guard<std::recursive_mutex> hold(state().lock);
  if (aclError status = enter("aclrtDestroyEvent")) return status;
  if (event == nullptr) return ACL_ERROR_RT_PARAM_INVALID;
  if (static_cast<Event*>(event)->pending != 0) {
    state().hazards.push_back("aclrtDestroyEvent of an event with records still queued");
  }
  return ACL_SUCCESS;  // kept: a queued record may still name it
}
