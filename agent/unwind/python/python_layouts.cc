#include "agent/unwind/python/python_layouts.h"

#include <array>

namespace warpscope {
namespace {

constexpr uint32_t kFrameOwnedByCStack = 3;  // Include/internal/pycore_frame.h, 3.12 and 3.13

PythonLayout Python310() {
  PythonLayout l;
  l.minor = 10;
  ws_py_layout& b = l.bpf;
  b.walk = WS_PY_WALK_ONE_PER_CALL;
  b.runtime_interp_head = 32;
  b.interp_next = 0;
  b.interp_threads_head = 8;  // tstate_head
  b.tstate_next = 8;
  b.tstate_thread_id = 176;
  b.tstate_frame = 24;  // PyFrameObject *frame
  b.cframe_current_frame = -1;
  b.frames_contiguous = 0;  // PyFrameObjects are separate heap objects
  b.frame_window = 24;  // PyFrameObject: f_back 24, f_code 32, f_lasti 96
  b.frame_previous_rel = 0;
  b.frame_code_rel = 8;
  b.frame_instr_rel = 72;
  b.frame_owner_rel = 0;
  b.instr_is_pointer = 0;
  b.code_adaptive = 0;
  b.code_window = 16;  // co_argcount 16, co_flags 36, co_firstlineno 40
  b.code_argcount_rel = 0;
  b.code_flags_rel = 20;
  b.code_firstlineno_rel = 24;
  l.code = {.argcount = 16, .flags = 36, .firstlineno = 40, .name = 112, .qualname = -1, .filename = 104,
            .linetable = 120, .linetable_format = PythonLineTableFormat::kLnotab310};
  l.object.ascii_data = 48;
  l.object.compact_data = 72;
  return l;
}

PythonLayout Python311() {
  PythonLayout l;
  l.minor = 11;
  ws_py_layout& b = l.bpf;
  b.walk = WS_PY_WALK_IS_ENTRY;
  b.runtime_interp_head = 40;
  b.interp_next = 0;
  b.interp_threads_head = 16;
  b.tstate_next = 8;
  b.tstate_thread_id = 152;
  b.tstate_frame = 56;  // _PyCFrame *cframe
  b.cframe_current_frame = 8;
  b.frames_contiguous = 1;  // the thread's data stack
  b.frame_window = 0;  // _PyInterpreterFrame: f_code 32, previous 48, prev_instr 56, is_entry 68
  b.frame_code_rel = 32;
  b.frame_previous_rel = 48;
  b.frame_instr_rel = 56;
  b.frame_owner_rel = 68;  // is_entry
  b.instr_is_pointer = 1;
  b.code_adaptive = 184;
  b.code_window = 48;  // co_flags 48, co_argcount 56, co_firstlineno 72
  b.code_flags_rel = 0;
  b.code_argcount_rel = 8;
  b.code_firstlineno_rel = 24;
  l.code = {.argcount = 56, .flags = 48, .firstlineno = 72, .name = 120, .qualname = 128, .filename = 112,
            .linetable = 136, .linetable_format = PythonLineTableFormat::kLocations311};
  l.object.ascii_data = 48;
  l.object.compact_data = 72;
  return l;
}

// 3.12 and 3.13 share the frame and code-object layout that matters here.
PythonLayout Python312Plus(int minor) {
  PythonLayout l;
  l.minor = minor;
  ws_py_layout& b = l.bpf;
  b.walk = WS_PY_WALK_CSTACK_SHIM;
  b.interp_next = 0;
  b.tstate_next = 8;
  if (minor == 12) {
    b.runtime_interp_head = 40;
    b.interp_threads_head = 72;
    b.tstate_thread_id = 136;
    b.tstate_frame = 56;  // _PyCFrame *cframe
    b.cframe_current_frame = 0;
    b.code_adaptive = 192;
  } else {
    b.runtime_interp_head = 632;
    b.interp_next = 7264;
    b.interp_threads_head = 7344;
    b.tstate_thread_id = 152;
    b.tstate_frame = 72;  // _PyInterpreterFrame *current_frame
    b.cframe_current_frame = -1;
    b.code_adaptive = 200;
  }
  b.frames_contiguous = 1;  // the thread's data stack
  b.frame_window = 0;  // f_code/f_executable 0, previous 8, prev_instr/instr_ptr 56, owner 70
  b.frame_code_rel = 0;
  b.frame_previous_rel = 8;
  b.frame_instr_rel = 56;
  b.frame_owner_rel = 70;
  b.owner_cstack = kFrameOwnedByCStack;
  b.instr_is_pointer = 1;
  b.code_window = 48;  // co_flags 48, co_argcount 52, co_firstlineno 68
  b.code_flags_rel = 0;
  b.code_argcount_rel = 4;
  b.code_firstlineno_rel = 20;
  l.code = {.argcount = 52, .flags = 48, .firstlineno = 68, .name = 120, .qualname = 128, .filename = 112,
            .linetable = 136, .linetable_format = PythonLineTableFormat::kLocations311};
  l.object.ascii_data = 40;
  l.object.compact_data = 56;
  return l;
}

const std::array<PythonLayout, 4>& Layouts() {
  static const std::array<PythonLayout, 4> layouts = {Python310(), Python311(), Python312Plus(12),
                                                      Python312Plus(13)};
  return layouts;
}

}  // namespace

std::string PythonVersion::ToString() const {
  std::string s = std::to_string(major) + "." + std::to_string(minor);
  if (micro >= 0) s += "." + std::to_string(micro);
  return s;
}

const PythonLayout* FindPythonLayout(const PythonVersion& version) {
  if (version.major != 3) return nullptr;
  for (const PythonLayout& l : Layouts()) {
    if (l.minor == version.minor) return &l;
  }
  return nullptr;
}

std::string SupportedPythonVersions() { return "3.10, 3.11, 3.12, 3.13"; }

}  // namespace warpscope
