// The unwinder's maps inside any skeleton that includes
// bpf/include/ws_unwind.h: sized before load, handed to UnwindTableLoader after.
#pragma once

#include <bpf/libbpf.h>

#include <utility>

#include "agent/unwind/unwind_map_sizing.h"
#include "agent/unwind/unwind_table_loader.h"

namespace warpscope {

struct UnwindBpfMaps {
  bpf_map* entries;
  bpf_map* pages;
  bpf_map* exec_mappings;
  bpf_map* proc_info;
  bpf_map* py_procs;

  // Before load.
  void SetSizes(const UnwindMapSizes& sizes) const {
    bpf_map__set_max_entries(entries, sizes.entries);
    bpf_map__set_max_entries(pages, sizes.pages);
    bpf_map__set_max_entries(exec_mappings, sizes.exec_mappings);
    bpf_map__set_max_entries(proc_info, sizes.processes);
    bpf_map__set_max_entries(py_procs, sizes.processes);
  }
  // Before load, instead of SetSizes: use another skeleton's unwinder maps
  // (already loaded and filled by its UnwindTableLoader), so two programs
  // unwind from one copy of the tables. Returns -errno of the first failure.
  int Reuse(const UnwindMapFds& fds) const {
    const std::pair<bpf_map*, int> pairs[] = {
        {entries, fds.entries}, {pages, fds.pages}, {exec_mappings, fds.exec_mappings},
        {proc_info, fds.proc_info}, {py_procs, fds.py_procs}};
    for (const auto& [map, fd] : pairs) {
      if (int err = bpf_map__reuse_fd(map, fd); err) return err;
    }
    return 0;
  }
  // After load.
  UnwindMapFds Fds() const {
    return {bpf_map__fd(entries), bpf_map__fd(pages), bpf_map__fd(exec_mappings), bpf_map__fd(proc_info),
            bpf_map__fd(py_procs)};
  }
};

template <typename Skeleton>
UnwindBpfMaps UnwindMapsOf(Skeleton* skel) {
  return {skel->maps.unwind_entries, skel->maps.unwind_pages, skel->maps.exec_mappings, skel->maps.proc_info,
          skel->maps.py_procs};
}

}  // namespace warpscope
