#include "agent/export/window_batches.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace warpscope {

const char* WindowSourceName(WindowSource source) {
  switch (source) {
    case WindowSource::kCpu: return "cpu";
    case WindowSource::kOffCpu: return "off_cpu";
    case WindowSource::kGpuTime: return "gpu_time";
    case WindowSource::kGpuWait: return "gpu_wait";
    case WindowSource::kGpuPc: return "gpu_pc";
    case WindowSource::kGpuTrace: return "gpu_trace";
    case WindowSource::kGpuMetrics: return "gpu_metrics";
  }
  return "unknown";
}

namespace {

// One source's batch for its rows [begin, end); `first`: the source's first
// batch, which carries what is not per row (counters, coverage).
using EncodeRows = std::function<StatusOr<v1::IngestBatch>(size_t begin, size_t end, bool first)>;

class SourceSplitter {
 public:
  SourceSplitter(WindowSource source, size_t max_bytes, std::vector<WindowBatch>* out, WindowBatchStats* stats)
      : source_(source), max_bytes_(max_bytes), out_(out), stats_(stats) {}

  // Appends the batches of rows [begin, end), in row order.
  Status Add(size_t begin, size_t end, bool first, const EncodeRows& encode) {
    ASSIGN_OR_RETURN(v1::IngestBatch batch, encode(begin, end, first));
    const size_t bytes = batch.ByteSizeLong();
    if (bytes <= max_bytes_) {
      Emit(std::move(batch));
      return Status::Ok();
    }
    const size_t rows = end - begin;
    if (rows <= 1) {
      stats_->rows_too_large += rows;
      // What the first batch carries besides rows still goes, if it fits.
      if (first && rows == 1) return Add(begin, begin, first, encode);
      return Status::Ok();
    }
    // Into as many parts as the size says (with a margin: rows differ in
    // size), each checked again.
    const size_t parts = std::min(rows, bytes / std::max<size_t>(1, max_bytes_ - max_bytes_ / 8) + 1);
    for (size_t i = 0; i < parts; ++i) {
      const size_t from = begin + rows * i / parts, to = begin + rows * (i + 1) / parts;
      RETURN_IF_ERROR(Add(from, to, first && i == 0, encode));
    }
    return Status::Ok();
  }

 private:
  void Emit(v1::IngestBatch batch) {
    if (emitted_++ > 0) ++stats_->split;
    ++stats_->batches;
    out_->push_back({source_, std::move(batch)});
  }

  const WindowSource source_;
  const size_t max_bytes_;
  std::vector<WindowBatch>* out_;
  WindowBatchStats* stats_;
  size_t emitted_ = 0;
};

}  // namespace

StatusOr<std::vector<WindowBatch>> EncodeWindowBatches(const WindowSources& sources, const IngestBatchHeader& header,
                                                       const ProcessLabelMap& labels, size_t max_batch_bytes,
                                                       WindowBatchStats* stats) {
  if (sources.cpu == nullptr) return InvalidArgumentError("no CPU profile: it gives the window");
  const Profile& cpu = *sources.cpu;
  auto window = [&] {
    IngestBatchContent c;
    c.start_unix_nanos = cpu.time_nanos;
    c.end_unix_nanos = cpu.time_nanos + cpu.duration_nanos;
    return c;
  };
  std::vector<WindowBatch> out;

  // The CPU profile always goes: it carries the agent's counters, even for a
  // window without samples.
  RETURN_IF_ERROR(SourceSplitter(WindowSource::kCpu, max_batch_bytes, &out, stats)
                      .Add(0, cpu.samples.size(), true, [&](size_t begin, size_t end, bool first) {
                        IngestBatchContent c = window();
                        c.profiles.push_back({&cpu, begin, end});
                        if (first) c.counters = &cpu.counters;
                        return EncodeIngestBatch(c, header, labels);
                      }));

  // Profiles of one sample type each (off-CPU time, GPU time, GPU wait, PC
  // samples): their rows only.
  for (const auto& [source, profile] : {std::pair{WindowSource::kOffCpu, sources.off_cpu},
                                        std::pair{WindowSource::kGpuTime, sources.gpu_time},
                                        std::pair{WindowSource::kGpuWait, sources.gpu_wait},
                                        std::pair{WindowSource::kGpuPc, sources.gpu_pc}}) {
    if (profile == nullptr || profile->samples.empty()) continue;
    RETURN_IF_ERROR(SourceSplitter(source, max_batch_bytes, &out, stats)
                        .Add(0, profile->samples.size(), true, [&](size_t begin, size_t end, bool) {
                          IngestBatchContent c = window();
                          c.profiles.push_back({profile, begin, end});
                          return EncodeIngestBatch(c, header, labels);
                        }));
  }

  if (sources.trace != nullptr && !sources.trace->empty()) {
    const GpuTrace& trace = *sources.trace;
    const std::span<const GpuActivityRecord> activities = trace.activities;
    RETURN_IF_ERROR(SourceSplitter(WindowSource::kGpuTrace, max_batch_bytes, &out, stats)
                        .Add(0, activities.size(), true, [&](size_t begin, size_t end, bool first) {
                          IngestBatchContent c = window();
                          c.trace = &trace;
                          c.activities = activities.subspan(begin, end - begin);
                          if (first) c.coverage = trace.coverage;
                          return EncodeIngestBatch(c, header, labels);
                        }));
  }

  if (sources.metrics != nullptr && !sources.metrics->empty()) {
    const std::span<const MetricReading> metrics = *sources.metrics;
    RETURN_IF_ERROR(SourceSplitter(WindowSource::kGpuMetrics, max_batch_bytes, &out, stats)
                        .Add(0, metrics.size(), true, [&](size_t begin, size_t end, bool) {
                          IngestBatchContent c = window();
                          c.metrics = metrics.subspan(begin, end - begin);
                          return EncodeIngestBatch(c, header, labels);
                        }));
  }
  return out;
}

}  // namespace warpscope
