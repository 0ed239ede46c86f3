// KernelNameTable: every CUDA kernel name the agent holds, interned once and
// charged to one byte budget across all connections. The CUDA socket is
// 0666, so kernel names are input from any local user; without one budget a
// user could make the root agent keep gigabytes of them.
//
// What is charged: each distinct name alive (its text as reported, its
// display form, and a fixed overhead), from the moment it is interned until
// its last holder lets go of it (connection dictionaries until the
// connection closes, records on their way to the sampling thread, the
// window's trace), and whatever a caller charges for its own bookkeeping of
// names (CudaSocketServer: one dictionary entry per name id). So the bound
// holds however the names are held, across connections and reconnects.
//
// The table keeps the names it interned warm (one reference each, least
// recently interned first out): a process that reconnects, or whose kernels
// are still being joined after it exited, finds its names again. Warm names
// are what is evicted to make room; when the budget holds only names in use,
// a new name is refused (the caller shows RefusedName()) and counted. Names
// take at most 7/8 of the budget: the rest stays for the callers' charges,
// so a connection whose names are refused can still define their ids.
//
// Threading: thread-safe. Interning and charging happen on the socket thread;
// names are let go of on any thread (the last holder gives the bytes back
// under the table's mutex). Names may outlive the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "model/gpu_trace.h"

namespace warpscope {

struct InternedKernelName {
  // Unique for the table's lifetime, never reused (the GPU-time join keys
  // kernels by it); the placeholders have keys of their own.
  uint64_t key = 0;
  KernelName text;  // system_name: as CUPTI reported it; name: for display
};

struct KernelNameTableStats {
  uint64_t budget_bytes = 0;
  uint64_t bytes = 0;       // charged now: names alive and callers' charges
  uint64_t peak_bytes = 0;  // the most ever charged at once
  uint64_t names = 0;       // distinct names alive now
  uint64_t interned = 0;    // names taken in (not found alive)
  uint64_t refused = 0;     // names or charges refused: the budget held only names in use
  uint64_t evicted = 0;     // warm names no one else held, dropped to make room
};

class KernelNameTable {
 public:
  // The display form of a reported name (e.g. demangled); null: as reported.
  using DisplayName = std::function<std::string(std::string_view system_name)>;

  static constexpr uint64_t kUnknownKey = UINT64_MAX;      // name id 0: the library did not send it
  static constexpr uint64_t kRefusedKey = UINT64_MAX - 1;  // not kept: over the budget
  // Charged per name besides its two texts (the entry, its control block,
  // the table's index and warm-list nodes).
  static constexpr size_t kNameOverheadBytes = 160;

  explicit KernelNameTable(size_t budget_bytes, DisplayName display = nullptr);
  ~KernelNameTable();
  KernelNameTable(const KernelNameTable&) = delete;
  KernelNameTable& operator=(const KernelNameTable&) = delete;

  // The one entry for `system_name` while any holder keeps it; a new one
  // when none does. nullptr when the budget cannot take it even after
  // evicting every warm name no one else holds (counted as refused).
  std::shared_ptr<const InternedKernelName> Intern(std::string_view system_name);
  // Charges `bytes` of the caller's own (evicting warm names like Intern);
  // false, counted as refused, when they do not fit. Release gives them back.
  bool Charge(size_t bytes);
  void Release(size_t bytes);

  KernelNameTableStats stats() const;

  // Shared placeholders, charged to no table: a kernel the library sent
  // without a name ("[unknown kernel]"), and one whose name was refused.
  static const std::shared_ptr<const InternedKernelName>& UnknownName();
  static const std::shared_ptr<const InternedKernelName>& RefusedName();

 private:
  struct State;
  struct Deleter;

  const DisplayName display_;
  const std::shared_ptr<State> state_;  // shared with every name's deleter
};

}  // namespace warpscope
