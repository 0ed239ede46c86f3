#include "agent/collectors/gpu_time/uprobe_stack_collector.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

#include "agent/collectors/per_cpu_counters.h"
#include "agent/unwind/unwind_bpf_maps.h"
#include "agent/unwind/bpf_features.h"
#include "uprobe_stack.skel.h"

namespace warpscope {
namespace {

int HandleStack(void* ctx, void* data, size_t size) {
  if (size < sizeof(ws_uprobe_stack_event)) return 0;
  auto* on_stack = static_cast<std::function<void(const ws_uprobe_stack_event&)>*>(ctx);
  if (*on_stack) (*on_stack)(*static_cast<const ws_uprobe_stack_event*>(data));
  return 0;
}

}  // namespace

UprobeStackCollector::~UprobeStackCollector() {
  for (auto& [handle, link] : links_) bpf_link__destroy(link);
  ring_buffer__free(stacks_);
  uprobe_stack_bpf__destroy(skel_);
}

StatusOr<std::unique_ptr<UprobeStackCollector>> UprobeStackCollector::Create(uint32_t sample_every,
                                                                             const UnwindMapSizes& unwind) {
  return Load(sample_every, &unwind, nullptr);
}

StatusOr<std::unique_ptr<UprobeStackCollector>> UprobeStackCollector::CreateSharing(uint32_t sample_every,
                                                                                    const UnwindMapFds& shared) {
  return Load(sample_every, nullptr, &shared);
}

StatusOr<std::unique_ptr<UprobeStackCollector>> UprobeStackCollector::Load(uint32_t sample_every,
                                                                           const UnwindMapSizes* sizes,
                                                                           const UnwindMapFds* shared) {
  std::unique_ptr<UprobeStackCollector> c(new UprobeStackCollector());
  c->skel_ = uprobe_stack_bpf__open();
  if (!c->skel_) return ErrnoError(errno, "opening the uprobe_stack BPF object");
  c->skel_->rodata->sample_every = sample_every == 0 ? 1 : sample_every;
  if (shared != nullptr) {
    if (int err = UnwindMapsOf(c->skel_).Reuse(*shared); err) {
      return ErrnoError(-err, "sharing the unwinder maps with the uprobe_stack program");
    }
  } else {
    UnwindMapsOf(c->skel_).SetSizes(*sizes);
  }
  SelectWalkProgram(c->skel_->progs.ws_uprobe_walk_loop, c->skel_->progs.ws_uprobe_walk_tail);
  if (int err = uprobe_stack_bpf__load(c->skel_); err) return ErrnoError(-err, "loading the uprobe_stack BPF program");
  if (int err = InstallWalkProgram(c->skel_->maps.uprobe_progs, c->skel_->progs.ws_uprobe_walk_loop,
                                   c->skel_->progs.ws_uprobe_walk_tail);
      err) {
    return ErrnoError(-err, "installing the uprobe stack walk program");
  }
  c->stacks_ = ring_buffer__new(bpf_map__fd(c->skel_->maps.uprobe_stacks), HandleStack, &c->on_stack_, nullptr);
  if (!c->stacks_) return ErrnoError(errno, "creating the uprobe stack ring buffer");
  return c;
}

StatusOr<uint64_t> UprobeStackCollector::AttachFromAnyThread(uint32_t pid, const std::string& binary,
                                                             const std::string& symbol, uint64_t role) {
  // One program per role (no BPF cookie: kernels before 5.15 have none).
  bpf_program* program = nullptr;
  switch (role) {
    case WS_UPROBE_ROLE_STACK: program = skel_->progs.ws_uprobe_stack; break;
    case WS_UPROBE_ROLE_AUTOGRAD_ENTRY: program = skel_->progs.ws_uprobe_autograd_entry; break;
    default: return InvalidArgumentError("no entry probe program for role " + std::to_string(role));
  }
  LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = symbol.c_str());
  return AttachProgram(program, pid, binary, symbol, opts);
}

StatusOr<uint64_t> UprobeStackCollector::AttachReturnFromAnyThread(uint32_t pid, const std::string& binary,
                                                                   const std::string& symbol, uint64_t role) {
  if (role != WS_UPROBE_ROLE_AUTOGRAD_RETURN) {
    return InvalidArgumentError("no return probe program for role " + std::to_string(role));
  }
  LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = true, .func_name = symbol.c_str());
  return AttachProgram(skel_->progs.ws_uretprobe_mark, pid, binary, symbol, opts);
}

StatusOr<uint64_t> UprobeStackCollector::AttachProgram(bpf_program* program, uint32_t pid, const std::string& binary,
                                                       const std::string& symbol, const bpf_uprobe_opts& opts) {
  bpf_link* link =
      bpf_program__attach_uprobe_opts(program, pid == 0 ? -1 : static_cast<int>(pid), binary.c_str(), 0, &opts);
  if (!link) {
    const int e = errno;
    return ErrnoError(e, "attaching a uprobe to " + symbol + " in " + binary);
  }
  std::lock_guard lock(links_mu_);
  const uint64_t handle = next_handle_++;
  links_.emplace(handle, link);
  return handle;
}

Status UprobeStackCollector::DetachFromAnyThread(uint64_t handle) {
  bpf_link* link = nullptr;
  {
    std::lock_guard lock(links_mu_);
    auto it = links_.find(handle);
    if (it == links_.end()) return NotFoundError("no uprobe " + std::to_string(handle) + " attached");
    link = it->second;
    links_.erase(it);
  }
  const int err = bpf_link__destroy(link);
  if (err != 0) return ErrnoError(-err, "detaching uprobe " + std::to_string(handle));
  return Status::Ok();
}

Status UprobeStackCollector::Consume(const std::function<void(const ws_uprobe_stack_event&)>& on_stack) {
  on_stack_ = on_stack;
  const int n = ring_buffer__consume(stacks_);
  on_stack_ = nullptr;
  if (n < 0 && n != -EINTR) return ErrnoError(-n, "reading uprobe stacks");
  return Status::Ok();
}

Status UprobeStackCollector::Poll(std::chrono::milliseconds timeout,
                                  const std::function<void(const ws_uprobe_stack_event&)>& on_stack) {
  on_stack_ = on_stack;
  const int n = ring_buffer__poll(stacks_, static_cast<int>(timeout.count()));
  on_stack_ = nullptr;
  if (n < 0 && n != -EINTR) return ErrnoError(-n, "polling uprobe stacks");
  return Status::Ok();
}

UnwindMapFds UprobeStackCollector::unwind_map_fds() const { return UnwindMapsOf(skel_).Fds(); }

UprobeStackStats UprobeStackCollector::ReadStats() const {
  UprobeStackStats stats;
  SumPerCpuCounters(skel_->maps.uprobe_stats, WS_UPROBE_STAT_MAX, stats.values);
  return stats;
}

}  // namespace warpscope
