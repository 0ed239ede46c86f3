#include "agent/collectors/cpu/profiling_session.h"

#include <malloc.h>

#include <algorithm>

#include "agent/elf/elf_file.h"
#include "base/logging.h"
#include "base/spill_file.h"
#include "base/unix_time.h"

namespace warpscope {

StatusOr<std::unique_ptr<ProfilingSession>> ProfilingSession::Create(const ProfilingSessionOptions& options) {
  CpuSamplerOptions sampler_options;
  sampler_options.frequency_hz = options.frequency_hz;
  sampler_options.pids = options.pids;
  sampler_options.drain_interval = options.drain_interval;
  sampler_options.python_frames = options.python_frames && !options.frame_pointers_only;
  sampler_options.off_cpu = options.off_cpu;
  ASSIGN_OR_RETURN(std::unique_ptr<CpuSampler> sampler, CpuSampler::Create(sampler_options));
  std::unique_ptr<ProfilingSession> session(new ProfilingSession(options, std::move(sampler), sampler_options));
  // Processes are described to the symbolizer and to the BPF unwinder when
  // first seen; targets of --pid before sampling starts, so that every sample
  // of theirs gets a whole stack.
  for (uint32_t pid : options.pids) session->Describe(pid);
  if (!options.pids.empty()) {
    session->learner_->WaitIdle(std::chrono::seconds(30));
    session->ApplyLearned();
  }
  return session;
}

ProfilingSession::ProfilingSession(const ProfilingSessionOptions& options, std::unique_ptr<CpuSampler> sampler,
                                   const CpuSamplerOptions& sampler_options)
    : options_(options),
      period_nanos_(1'000'000'000 / options.frequency_hz),
      python_frames_(sampler_options.python_frames),
      symbolizer_(ProcFs(), "/proc/kallsyms", options.symbol_cache_bytes),
      sampler_(std::move(sampler)),
      unwinder_(sampler_->unwind_map_fds(), sampler_options.unwind_maps, ProcFs(), &symbolizer_.files()),
      python_(sampler_->unwind_map_fds().py_procs, ProcFs(), 4096, &symbolizer_.files()),
      assembler_(&symbolizer_, &python_, nullptr, period_nanos_),
      off_cpu_assembler_(&symbolizer_, &python_, nullptr, 0, ProfileAssembler::Kind::kOffCpu) {
  if (Status s = symbolizer_.Init(); !s.ok()) {
    LOG_WARNING() << "kernel frames will not be symbolized: " << s.message();
  }
  // New binaries are read on the learner's worker; a drain that needs a
  // file's symbols before they came back waits for that file.
  learner_ = std::make_unique<BinaryLearner>(ProcFs());
  symbolizer_.DeferLoads([this](uint32_t, const MemoryMapping& m) {
    return learner_->AwaitSymbols(IdentityOf(m), std::chrono::seconds(2));
  });
  unwinder_.DeferBuilds();
  python_.DeferReads();
}

void ProfilingSession::RequestUnknown(const ProcessInfo& info) {
  std::vector<FileIdentity> seen;
  for (const MemoryMapping& m : info.mappings) {
    if (!m.IsFileBacked()) continue;
    const FileIdentity id = IdentityOf(m);
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
    seen.push_back(id);
    LearnRequest request;
    request.symbols = !symbolizer_.Knows(m);
    request.table = !options_.frame_pointers_only && !unwinder_.Knows(m);
    request.python = python_frames_ && PythonProcesses::IsCandidate(info, m) && !python_.Knows(m);
    if (!request.symbols && !request.table && !request.python) continue;
    if (auto w = waiting_.find(id); w != waiting_.end()) {
      w->second.push_back(info.pid);
      ++pending_[info.pid];
      continue;
    }
    // Opened now, while the process lives; read on the worker.
    StatusOr<std::shared_ptr<ElfFile>> file = symbolizer_.files().OpenUnshared(info.pid, m);
    if (!file.ok()) continue;  // the process is gone
    request.pid = info.pid;
    request.mapping = m;
    request.file = std::move(*file);
    if (!learner_->Submit(std::move(request))) continue;  // queue full: counted; readers fall back
    waiting_[id].push_back(info.pid);
    ++pending_[info.pid];
  }
}

void ProfilingSession::ApplyLearned() {
  std::vector<LearnedBinary> done = learner_->TakeDone();
  if (done.empty()) return;
  std::vector<uint32_t> ready;
  for (LearnedBinary& d : done) {
    if (d.symbols) symbolizer_.Adopt(d.pid, d.mapping, std::move(*d.symbols));
    if (d.table) unwinder_.AdoptTable(d.mapping, d.build_id, std::move(*d.table));
    if (d.python) python_.Adopt(d.mapping, std::move(*d.python));
    auto w = waiting_.find(IdentityOf(d.mapping));
    if (w == waiting_.end()) continue;
    for (uint32_t pid : w->second) {
      auto p = pending_.find(pid);
      if (p != pending_.end() && --p->second == 0) {
        pending_.erase(p);
        ready.push_back(pid);
      }
    }
    waiting_.erase(w);
  }
  for (uint32_t pid : ready) {
    const ProcessInfo* info = symbolizer_.processes().Find(pid);
    if (info == nullptr || info->exited) continue;
    if (Status s = Publish(*info); !s.ok()) LOG_WARNING() << "unwinder: " << s.message();
  }
}

Status ProfilingSession::Publish(const ProcessInfo& info) {
  RequestUnknown(info);
  if (options_.frame_pointers_only) return Status::Ok();
  const uint32_t flags = python_frames_ ? python_.Describe(info) : 0;
  return unwinder_.Describe(info, flags);
}

void ProfilingSession::Describe(uint32_t pid, bool maps_changed) {
  // Every reader of the process's binaries (symbols, unwind tables, CPython
  // detection) shares one open of each file it has not seen yet.
  BinaryFiles::Scope scope(&symbolizer_.files());
  if (maps_changed) {
    symbolizer_.OnMapsChanged(pid);
  } else {
    symbolizer_.OnProcessSeen(pid);
  }
  const ProcessInfo* info = symbolizer_.processes().Find(pid);
  if (info == nullptr || info->exited) return;
  if (Status s = Publish(*info); !s.ok()) LOG_WARNING() << "unwinder: " << s.message();
  symbolizer_.files().CountKnown(info->mappings);
}

void ProfilingSession::DescribeProcess(uint32_t pid) { Describe(pid, /*maps_changed=*/true); }

Status ProfilingSession::Start() {
  RETURN_IF_ERROR(sampler_->Start());
  drain_interval_ = sampler_->map_sizes().drain_interval;
  next_drain_ = Clock::now() + drain_interval_;
  if (options_.stamp_sample_times) {
    // Drain on the Unix clock's second boundaries (or a divisor of them), so
    // each drain holds the samples of one whole bucket.
    last_drain_unix_ = UnixNanosNow();
    const int64_t interval = std::chrono::duration_cast<std::chrono::nanoseconds>(drain_interval_).count();
    if (interval > 0) {
      next_drain_ = Clock::now() + std::chrono::nanoseconds(interval - last_drain_unix_ % interval);
    }
  }
  return Status::Ok();
}

void ProfilingSession::OnEvent(const ws_proc_event& event) {
  switch (event.type) {
    case WS_PROC_SEEN: Describe(event.pid); break;
    case WS_PROC_EXEC: {
      BinaryFiles::Scope scope(&symbolizer_.files());
      symbolizer_.OnExec(event.pid);  // reads the new image's maps
      unwinder_.Forget(event.pid);
      python_.OnExec(event.pid);
      Describe(event.pid);
      break;
    }
    case WS_PROC_EXIT:
      pending_.erase(event.pid);
      symbolizer_.OnExit(event.pid);
      unwinder_.Forget(event.pid);
      python_.OnExit(event.pid);
      break;
    case WS_PROC_PY_STACK: {
      RawStack stack;
      if (sampler_->LookupStack(event.buffer, event.stack_hash, &stack)) {
        python_.Prefetch(event.pid, stack.frames.data(), stack.frames.size());
      }
      break;
    }
    default: break;
  }
  if (observer_) observer_(event);
}

Status ProfilingSession::Drain(bool final_drain) {
  ApplyLearned();
  CpuSampleBatch batch;
  symbolizer_.BeginEpoch();
  RETURN_IF_ERROR(final_drain ? sampler_->DrainAll(&batch) : sampler_->Drain(&batch));
  if (options_.stamp_sample_times) {
    // The samples were taken since the previous drain: they belong to the
    // second holding the middle of that span (a short drain at an upload
    // window's end lands in the right second too).
    const int64_t now = UnixNanosNow();
    const int64_t middle = last_drain_unix_ + (now - last_drain_unix_) / 2;
    const int64_t second = middle - middle % kSampleTimeResolutionNanos;
    assembler_.SetSampleTime(second);
    // A wait counts in the second it ended in, like a sample in the second
    // it was taken in.
    if (options_.off_cpu.enabled) off_cpu_assembler_.SetSampleTime(second);
    last_drain_unix_ = now;
  }
  assembler_.AddBatch(batch);
  if (options_.off_cpu.enabled) off_cpu_assembler_.AddBatch(batch);
  missing_stacks_ += batch.missing_stacks;
  // Maps re-read during symbolization (dlopen) get a new generation: publish it.
  {
    BinaryFiles::Scope scope(&symbolizer_.files());
    for (const std::vector<RawSample>* samples : {&batch.samples, &batch.off_cpu}) {
      uint32_t last_pid = 0;
      for (const RawSample& sample : *samples) {
        if (sample.pid == last_pid) continue;
        last_pid = sample.pid;
        // Exited processes stay in the symbolizer until EndEpoch; the unwinder
        // has already forgotten them and must not take them back.
        const ProcessInfo* info = symbolizer_.processes().Find(sample.pid);
        if (info != nullptr && !info->exited) (void)Publish(*info);
      }
    }
  }
  // Processes that exited before this drain's flip have no samples left in
  // the kernel, so their maps can go now.
  symbolizer_.EndEpoch();
  python_.EndEpoch();
  return Status::Ok();
}

Status ProfilingSession::Poll(Clock::time_point until) {
  const auto now = Clock::now();
  const auto wait = std::max(Clock::duration::zero(),
                             std::min({until, next_drain_, now + std::chrono::milliseconds(100)}) - now);
  RETURN_IF_ERROR(sampler_->PollProcessEvents(std::chrono::duration_cast<std::chrono::milliseconds>(wait),
                                              [this](const ws_proc_event& e) { OnEvent(e); }));
  ApplyLearned();
  if (Clock::now() >= next_drain_) {
    RETURN_IF_ERROR(Drain(false));
    next_drain_ += drain_interval_;
    // After a long stall (a slow symbolization), do not drain back to back.
    if (next_drain_ < Clock::now()) next_drain_ = Clock::now() + drain_interval_;
  }
  return Status::Ok();
}

Status ProfilingSession::StopAndDrainAll() {
  sampler_->Stop();
  // Deliver the last process events before the final drain so new processes get maps.
  (void)sampler_->PollProcessEvents(std::chrono::milliseconds(0), [this](const ws_proc_event& e) { OnEvent(e); });
  return Drain(true);
}

void ProfilingSession::AddCounters(std::vector<ProfileCounter>* counters) const {
  uint64_t bpf_run_ns = 0, bpf_runs = 0;
  sampler_->ReadProgramRunStats(&bpf_run_ns, &bpf_runs);
  if (bpf_runs > 0) {  // only with kernel.bpf_stats_enabled=1
    SetCounter(counters, "bpf_run_time_ns", bpf_run_ns);
    SetCounter(counters, "bpf_run_count", bpf_runs);
  }
  const CpuSamplerStats stats = sampler_->ReadStats();
  for (uint32_t i = 0; i < WS_STAT_MAX; ++i) {
    SetCounter(counters, CpuSamplerStatName(static_cast<ws_cpu_sampler_stat>(i)), stats.values[i]);
  }
  const SymbolizerStats sym = symbolizer_.stats();
  SetCounter(counters, "missing_stack_refs", missing_stacks_ + assembler_.stats().missing_stack_refs +
                                                 off_cpu_assembler_.stats().missing_stack_refs);
  if (options_.off_cpu.enabled) SetCounter(counters, "off_cpu_sample_every", sampler_->off_cpu_sample_every());
  SetCounter(counters, "user_frames", sym.user_frames);
  SetCounter(counters, "user_frames_symbolized", sym.user_symbolized);
  SetCounter(counters, "user_frames_no_mapping", sym.user_no_mapping);
  SetCounter(counters, "user_frames_no_symbol", sym.user_no_symbol);
  SetCounter(counters, "kernel_frames", sym.kernel_frames);
  SetCounter(counters, "kernel_frames_symbolized", sym.kernel_symbolized);
  SetCounter(counters, "elf_load_errors", sym.elf_load_errors);
  SetCounter(counters, "symbol_tables_loaded", sym.binaries_loaded);
  SetCounter(counters, "symbol_tables_evicted", sym.binaries_evicted);
  SetCounter(counters, "symbol_table_bytes", sym.symbol_bytes);
  const SymbolSpillStats spill = ReadSymbolSpillStats();
  SetCounter(counters, "symbol_tables_spilled", spill.tables);
  SetCounter(counters, "symbol_spill_failures", spill.failures);
  SetCounter(counters, "spill_disk_bytes", SpillDiskBytes());
  SetCounter(counters, "symbol_spill_block_reads", spill.block_reads);
  SetCounter(counters, "cache_bytes_symbol_tables", sym.symbol_bytes);
  SetCounter(counters, "cache_budget_bytes_symbol_tables", options_.symbol_cache_bytes);
  SetCounter(counters, "cache_evictions_symbol_tables", sym.binaries_evicted);
  // The agent's whole heap, against which the caches above are read: the
  // bytes malloc has handed out, and the free bytes it keeps mapped.
  const struct mallinfo2 heap = mallinfo2();
  SetCounter(counters, "heap_in_use_bytes", heap.uordblks + heap.hblkhd);
  SetCounter(counters, "heap_free_bytes", heap.fordblks);
  SetCounter(counters, "cache_bytes_demangled_names", sym.demangled_bytes);
  SetCounter(counters, "cache_budget_bytes_demangled_names", kDemangledCacheBytes);
  SetCounter(counters, "cache_evictions_demangled_names", sym.demangled_resets);
  // What the agent read from binaries: each file opened once for all its
  // readers, and not at all when they already knew it.
  const BinaryFilesStats& files = symbolizer_.files().stats();
  SetCounter(counters, "elf_opens", ElfFilesOpened());
  SetCounter(counters, "binary_cache_hits", files.known);
  SetCounter(counters, "binary_cache_misses", files.opened);
  SetCounter(counters, "binary_opens_shared", files.shared);
  SetCounter(counters, "vdso_images_read", files.vdso_reads);
  // The worker that reads new binaries, and what waited for it.
  const BinaryLearnerStats learn = learner_->stats();
  SetCounter(counters, "binary_learn_files", learn.files_done);
  SetCounter(counters, "binary_learn_queue_full", learn.queue_full);
  SetCounter(counters, "binary_learn_queue_peak", learn.queue_peak);
  SetCounter(counters, "binary_learn_wait_ms_max", static_cast<uint64_t>(learn.wait_ms_max));
  SetCounter(counters, "binary_learn_work_ms", static_cast<uint64_t>(learn.work_ms_total));
  SetCounter(counters, "binary_learn_drain_wait_ms", static_cast<uint64_t>(learn.await_ms_total));
  if (options_.frame_pointers_only) return;
  const UnwindLoaderStats& u = unwinder_.stats();
  SetCounter(counters, "unwind_tables_built", u.tables_built);
  SetCounter(counters, "unwind_tables_failed", u.tables_failed);
  SetCounter(counters, "unwind_tables_no_space", u.tables_no_space);
  SetCounter(counters, "unwind_rows_used", u.rows_used);
  SetCounter(counters, "unwind_tables_live", u.tables_live);
  SetCounter(counters, "unwind_tables_freed", u.tables_freed);
  SetCounter(counters, "unwind_tables_rebuilt", u.tables_rebuilt);
  SetCounter(counters, "unwind_tables_reused", u.tables_reused);
  SetCounter(counters, "unwind_tables_idle", u.tables_idle);
  SetCounter(counters, "unwind_processes_described", u.processes_described);
  SetCounter(counters, "unwind_table_build_ms_total", static_cast<uint64_t>(u.build_ms_total));
  // Unwind rows live in BPF maps (kernel memory, preallocated to the budget):
  // what the tables use of them, and the tables given up for room.
  SetCounter(counters, "cache_bytes_unwind_rows_bpf", u.rows_used * sizeof(ws_unwind_entry));
  SetCounter(counters, "cache_budget_bytes_unwind_rows_bpf", u.rows_capacity * sizeof(ws_unwind_entry));
  SetCounter(counters, "cache_evictions_unwind_rows_bpf", u.tables_freed);
  const PythonStats& py = python_.stats();
  SetCounter(counters, "python_processes", py.processes);
  SetCounter(counters, "python_unsupported_processes", py.unsupported_processes);
  SetCounter(counters, "python_code_objects_read", py.code_objects_read);
  SetCounter(counters, "python_code_objects_shared", py.code_objects_shared);
  SetCounter(counters, "python_code_object_errors", py.code_object_errors);
  SetCounter(counters, "python_frames_resolved", py.frames_resolved);
  SetCounter(counters, "python_frames_unresolved", py.frames_unresolved);
  SetCounter(counters, "cache_bytes_python_code_objects", py.code_bytes + py.static_code_bytes);
  SetCounter(counters, "cache_budget_bytes_python_code_objects", kDefaultPythonCodeCacheBytes);
  SetCounter(counters, "cache_evictions_python_code_objects", py.code_cache_evictions);
}

}  // namespace warpscope
