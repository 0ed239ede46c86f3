#include "agent/unwind/unwind_map_sizing.h"

#include <algorithm>

#include "bpf/intf/python.h"
#include "bpf/intf/unwind.h"

namespace warpscope {

UnwindMapSizes ComputeUnwindMapSizes(uint64_t table_bytes) {
  UnwindMapSizes s;
  const uint64_t rows = std::clamp<uint64_t>(table_bytes / sizeof(ws_unwind_entry), 64ull << 10, 128ull << 20);
  s.entries = static_cast<uint32_t>(rows);
  s.pages = std::max<uint32_t>(4096, s.entries / 64);
  s.exec_mappings = 64u << 10;
  s.processes = 16u << 10;
  constexpr uint64_t kHashElemOverhead = 48;  // the kernel's htab_elem header, roughly
  s.approx_kernel_bytes = uint64_t{s.entries} * sizeof(ws_unwind_entry) +
                          uint64_t{s.pages} * (sizeof(ws_unwind_page_key) + sizeof(ws_unwind_page) + kHashElemOverhead) +
                          uint64_t{s.exec_mappings} * sizeof(ws_exec_mapping) +
                          uint64_t{s.processes} * (4 + sizeof(ws_proc_info) + kHashElemOverhead) +
                          uint64_t{s.processes} * (4 + sizeof(ws_py_proc) + kHashElemOverhead);
  return s;
}

}  // namespace warpscope
