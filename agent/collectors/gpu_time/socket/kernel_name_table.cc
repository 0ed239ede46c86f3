#include "agent/collectors/gpu_time/socket/kernel_name_table.h"

#include <algorithm>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace warpscope {
namespace {

using Name = std::shared_ptr<const InternedKernelName>;

size_t Cost(const InternedKernelName& n) {
  return n.text.system_name.size() + n.text.name.size() + KernelNameTable::kNameOverheadBytes;
}

const Name& Placeholder(uint64_t key, const char* display) {
  // Leaked on purpose: shared by every thread until the process exits.
  auto* name = new InternedKernelName{key, {display, display}};
  return *new Name(name, [](const InternedKernelName*) {});
}

}  // namespace

struct KernelNameTable::State {
  explicit State(size_t budget_bytes) : budget(budget_bytes), names_limit(budget_bytes - budget_bytes / 8) {}

  struct Slot {
    const InternedKernelName* entry = nullptr;  // identifies the entry the slot is for
    std::weak_ptr<const InternedKernelName> weak;
    std::list<Name>::iterator warm;
    bool is_warm = false;
  };

  // Moves a name found alive to the warm list's front.
  void TouchLocked(Slot& slot, const Name& name) {
    if (slot.is_warm) {
      warm_names.splice(warm_names.begin(), warm_names, slot.warm);
    } else {
      warm_names.push_front(name);
      slot.warm = warm_names.begin();
      slot.is_warm = true;
    }
  }

  // Makes room for `bytes` more: true when they fit now. Otherwise moves warm
  // names, oldest first, into `released` until those only the table holds
  // would cover the shortfall (the caller lets go of them without the lock,
  // since their deleters take it, and tries again); false when none is left.
  bool RoomLocked(size_t bytes, size_t limit, std::vector<Name>* released) {
    if (bytes <= limit && charged <= limit - bytes) return true;
    if (bytes > limit || warm_names.empty()) return false;
    const size_t shortfall = charged + bytes - limit;
    size_t freeing = 0;
    while (!warm_names.empty() && freeing < shortfall) {
      Name& oldest = warm_names.back();
      if (oldest.use_count() == 1) {
        freeing += Cost(*oldest);
        ++evicted;
      }
      if (auto it = by_name.find(oldest->text.system_name); it != by_name.end() && it->second.entry == oldest.get()) {
        it->second.is_warm = false;
      }
      released->push_back(std::move(oldest));
      warm_names.pop_back();
    }
    return false;
  }

  void ChargeLocked(size_t bytes) {
    charged += bytes;
    peak = std::max(peak, charged);
  }

  const size_t budget;
  const size_t names_limit;  // names stop here; the rest is for callers' charges
  mutable std::mutex mu;
  size_t charged = 0;  // guarded by mu
  size_t peak = 0;     // guarded by mu
  // Keys view the entry's own system_name; a slot lives exactly as long as
  // its entry (erased by the entry's deleter, or replaced by a new entry for
  // the same text once the old one can no longer be locked).
  std::unordered_map<std::string_view, Slot> by_name;  // guarded by mu
  std::list<Name> warm_names;                          // guarded by mu; newest first
  uint64_t next_key = 1;                               // guarded by mu
  uint64_t interned = 0, refused = 0, evicted = 0;     // guarded by mu
};

// Runs on whatever thread drops a name's last reference.
struct KernelNameTable::Deleter {
  std::shared_ptr<State> state;
  void operator()(const InternedKernelName* name) const {
    {
      std::lock_guard<std::mutex> lock(state->mu);
      if (auto it = state->by_name.find(name->text.system_name);
          it != state->by_name.end() && it->second.entry == name) {
        state->by_name.erase(it);
      }
      state->charged -= Cost(*name);
    }
    delete name;
  }
};

KernelNameTable::KernelNameTable(size_t budget_bytes, DisplayName display)
    : display_(std::move(display)), state_(std::make_shared<State>(budget_bytes)) {}

KernelNameTable::~KernelNameTable() {
  // Names others still hold stay valid; their deleters keep the state alive.
  std::list<Name> warm;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    warm.swap(state_->warm_names);
    for (auto& [text, slot] : state_->by_name) slot.is_warm = false;
  }
}

std::shared_ptr<const InternedKernelName> KernelNameTable::Intern(std::string_view system_name) {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (auto it = s.by_name.find(system_name); it != s.by_name.end()) {
      if (Name alive = it->second.weak.lock()) {
        s.TouchLocked(it->second, alive);
        return alive;
      }
    }
  }
  // Built without the lock: the display form (demangling) can take a while.
  auto entry = std::make_unique<InternedKernelName>();
  entry->text.system_name = std::string(system_name);
  entry->text.name = display_ ? display_(system_name) : entry->text.system_name;
  const size_t cost = Cost(*entry);
  std::vector<Name> released;
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    auto it = s.by_name.find(system_name);
    if (it != s.by_name.end()) {
      if (Name alive = it->second.weak.lock()) {  // interned meanwhile by another thread
        s.TouchLocked(it->second, alive);
        return alive;
      }
    }
    if (s.RoomLocked(cost, s.names_limit, &released)) {
      if (it != s.by_name.end()) s.by_name.erase(it);  // its entry is on its way out
      entry->key = s.next_key++;
      s.ChargeLocked(cost);
      ++s.interned;
      Name name(entry.release(), Deleter{state_});
      State::Slot& slot = s.by_name[name->text.system_name];
      slot.entry = name.get();
      slot.weak = name;
      s.TouchLocked(slot, name);
      return name;
    }
    if (released.empty()) {
      ++s.refused;
      return nullptr;
    }
    lock.unlock();
    released.clear();  // frees those no one else holds; their deleters lock
    lock.lock();
  }
}

bool KernelNameTable::Charge(size_t bytes) {
  State& s = *state_;
  std::vector<Name> released;
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    if (s.RoomLocked(bytes, s.budget, &released)) {
      s.ChargeLocked(bytes);
      return true;
    }
    if (released.empty()) {
      ++s.refused;
      return false;
    }
    lock.unlock();
    released.clear();
    lock.lock();
  }
}

void KernelNameTable::Release(size_t bytes) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->charged -= std::min(bytes, state_->charged);
}

KernelNameTableStats KernelNameTable::stats() const {
  const State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  KernelNameTableStats out;
  out.budget_bytes = s.budget;
  out.bytes = s.charged;
  out.peak_bytes = s.peak;
  out.names = s.by_name.size();
  out.interned = s.interned;
  out.refused = s.refused;
  out.evicted = s.evicted;
  return out;
}

const std::shared_ptr<const InternedKernelName>& KernelNameTable::UnknownName() {
  static const Name& unknown = Placeholder(kUnknownKey, "[unknown kernel]");
  return unknown;
}

const std::shared_ptr<const InternedKernelName>& KernelNameTable::RefusedName() {
  static const Name& refused = Placeholder(kRefusedKey, "[kernel name over the agent's budget]");
  return refused;
}

}  // namespace warpscope
