// Segment file benchmark: bytes per aggregated row on disk, write and scan
// throughput, on data shaped like a fleet's CPU profiles. Not a test.
//
//   cmake --build build --target segment_bench -j2 && build/bin/segment_bench [--hours=1,24] [--dir=/tmp]
//       [--stack_ids=shuffled|ranked] [--zipf_s=1.0] [--sweep]
//
// The default (1 h, then 24 h) takes about 2 minutes on 2 cores and needs
// ~2 GB of memory and ~0.9 GB in --dir; --sweep adds about a minute.
//
// Data model: 20 nodes x 50 processes (1000 series, ids 1..1000),
// each node sampling 16 CPUs at 19 Hz; every sample picks one of the node's
// processes uniformly and a stack from a Zipf(s) law over 50k distinct stacks
// (rank r of process slot j is stack (r + 1000 j) mod 50k, so the 50 programs
// have different hot stacks). Samples are aggregated per 10 s bucket into rows
// (time, series, stack, count). --stack_ids=shuffled (default) maps stacks to
// dictionary ids by a random permutation, so ids say nothing about heat (the
// pessimistic case); ranked gives hot stacks small ids, as a first-seen
// dictionary roughly would.
//
// 24 h are written as 24 hour-long segments (one 24 h segment would need the
// whole day's 437 M rows, 17 GB, in memory at once) and scans query all of
// them, as the store would. --sweep also writes the 1 h data with other sort
// windows, block sizes and zstd levels. Page cache is warm for scans (the
// files were just written); the write includes sort, merge, encode, fsync
// and rename. Wall and thread-CPU times are both printed: on a shared machine
// the CPU time is the steadier number.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "storage/embedded/column_codec.h"
#include "storage/embedded/segment_file.h"
#include "storage/embedded/segment_format.h"

namespace warpscope {
namespace {

constexpr int kNodes = 20;
constexpr int kProcsPerNode = 50;
constexpr int kCpusPerNode = 16;
constexpr int kHz = 19;
constexpr int kStacks = 50'000;
constexpr int64_t kBucketNs = 10'000'000'000LL;
constexpr int64_t kStartNs = 1'767'225'600'000'000'000LL;  // 2026-01-01

struct Options {
  std::vector<int> hours = {1, 24};
  std::string dir = "/tmp";
  bool shuffled_ids = true;
  double zipf_s = 1.0;
  bool sweep = false;
};

// splitmix64: fast and good enough for synthetic data.
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>((Next() >> 32) * n >> 32); }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
};

// Walker/Vose alias table: O(1) draws from a fixed discrete distribution.
class AliasTable {
 public:
  explicit AliasTable(const std::vector<double>& weights) : prob_(weights.size()), alias_(weights.size()) {
    const size_t n = weights.size();
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    std::vector<double> scaled(n);
    std::vector<uint32_t> small, large;
    for (size_t i = 0; i < n; ++i) {
      scaled[i] = weights[i] * static_cast<double>(n) / total;
      (scaled[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
    }
    while (!small.empty() && !large.empty()) {
      const uint32_t s = small.back(), l = large.back();
      small.pop_back();
      prob_[s] = scaled[s];
      alias_[s] = l;
      scaled[l] -= 1.0 - scaled[s];
      if (scaled[l] < 1.0) {
        large.pop_back();
        small.push_back(l);
      }
    }
    for (uint32_t i : large) prob_[i] = 1.0;
    for (uint32_t i : small) prob_[i] = 1.0;
  }
  uint32_t Draw(Rng& rng) const {
    const uint32_t i = rng.Below(static_cast<uint32_t>(prob_.size()));
    return rng.Unit() < prob_[i] ? i : alias_[i];
  }

 private:
  std::vector<double> prob_;
  std::vector<uint32_t> alias_;
};

// The stack-id permutation, shared by all hours.
std::vector<uint64_t> StackIds(const Options& opt) {
  std::vector<uint64_t> ids(kStacks);
  std::iota(ids.begin(), ids.end(), 1);
  Rng rng{7};
  if (opt.shuffled_ids) {
    for (int i = kStacks - 1; i > 0; --i) std::swap(ids[i], ids[rng.Below(i + 1)]);
  }
  return ids;
}

// One hour of rows (hour `hour` after kStartNs), in the time order they would
// come out of the write-ahead log.
std::vector<SampleRow> GenerateHour(int hour, const AliasTable& zipf, const std::vector<uint64_t>& ids) {
  Rng rng{1000u + static_cast<uint64_t>(hour)};
  constexpr int kBuckets = 360;
  constexpr int kSamplesPerBucket = kCpusPerNode * kHz * 10;
  std::vector<SampleRow> rows;
  rows.reserve(static_cast<size_t>(kBuckets) * kNodes * kSamplesPerBucket * 17 / 20);
  std::vector<std::vector<uint32_t>> per_proc(kProcsPerNode);
  for (int b = 0; b < kBuckets; ++b) {
    const int64_t t = kStartNs + (hour * 360LL + b) * kBucketNs;
    for (int node = 0; node < kNodes; ++node) {
      for (auto& v : per_proc) v.clear();
      for (int s = 0; s < kSamplesPerBucket; ++s) {
        const uint32_t proc = rng.Below(kProcsPerNode);
        per_proc[proc].push_back((zipf.Draw(rng) + 1000 * proc) % kStacks);
      }
      for (int proc = 0; proc < kProcsPerNode; ++proc) {
        std::vector<uint32_t>& v = per_proc[proc];
        std::sort(v.begin(), v.end());
        const uint64_t series = 1 + node * kProcsPerNode + proc;
        for (size_t i = 0; i < v.size();) {
          size_t j = i;
          while (j < v.size() && v[j] == v[i]) ++j;
          rows.push_back(SampleRow{t, series, ids[v[i]], static_cast<int64_t>(j - i), 0});
          i = j;
        }
      }
    }
  }
  return rows;
}

AliasTable ZipfTable(const Options& opt) {
  std::vector<double> w(kStacks);
  for (int r = 0; r < kStacks; ++r) w[r] = 1.0 / std::pow(r + 1, opt.zipf_s);
  return AliasTable(w);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// CPU time of the calling thread: steadier than wall time on a shared machine.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// Compressed bytes per column over the whole file, from the chunk headers.
struct ColumnBytes {
  uint64_t header = 0, runs = 0, time = 0, stack = 0, value = 0;
};

ColumnBytes MeasureColumns(const std::string& path) {
  ColumnBytes out;
  auto reader = SegmentReader::Open(path);
  if (!reader.ok()) return out;
  FILE* f = std::fopen(path.c_str(), "rb");
  std::string all;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) all.append(buf, n);
  std::fclose(f);
  const uint64_t size = all.size();
  auto trailer = segment::ParseTrailer(std::string_view(all).substr(size - segment::kTrailerSize), size, path);
  auto footer = segment::ParseFooter(std::string_view(all).substr(trailer->footer_offset, trailer->footer_size),
                                     trailer->footer_offset, path);
  out.header = segment::kHeaderSize + segment::kTrailerSize + trailer->footer_size;
  for (const segment::BlockIndexEntry& b : footer->blocks) {
    segment::ByteReader r(all.data() + b.offset, b.size);
    uint64_t v = 0;
    r.GetVarint64(&v);
    r.GetFixed64(&v);
    r.GetVarint64(&v);
    out.header += b.size - r.remaining();
    uint64_t* cols[] = {&out.runs, &out.time, &out.stack, &out.value};
    for (uint64_t* col : cols) {
      const size_t before = r.remaining();
      uint8_t codec;
      uint64_t raw, stored;
      std::string_view payload;
      r.GetFixed8(&codec);
      r.GetVarint64(&raw);
      r.GetVarint64(&stored);
      r.GetBytes(stored, &payload);
      *col += before - r.remaining();
    }
  }
  return out;
}

struct ScanResult {
  uint64_t rows = 0;
  double seconds = 0;
  double cpu_seconds = 0;
};

struct WriteResult {
  uint64_t rows_in = 0, rows_out = 0, bytes = 0;
  double seconds = 0, cpu_seconds = 0;
  WriteResult& operator+=(const WriteResult& o) {
    rows_in += o.rows_in, rows_out += o.rows_out, bytes += o.bytes, seconds += o.seconds;
    cpu_seconds += o.cpu_seconds;
    return *this;
  }
};

WriteResult TimeWrite(const std::string& path, std::vector<SampleRow> rows, const SegmentWriteOptions& options) {
  WriteResult w;
  w.rows_in = rows.size();
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = ThreadCpuSeconds();
  const Status s = WriteSegment(path, std::move(rows), options);
  w.seconds = Seconds(t0);
  w.cpu_seconds = ThreadCpuSeconds() - c0;
  if (!s.ok()) {
    std::fprintf(stderr, "write failed: %s\n", s.ToString().c_str());
    std::exit(1);
  }
  auto reader = SegmentReader::Open(path);
  w.rows_out = (*reader)->row_count();
  w.bytes = static_cast<uint64_t>((*reader)->file_size());
  return w;
}

// Scans every segment that overlaps [from, to), as a query over several
// hour-long segments would; best of three runs (the first pays page faults),
// or a single run for more than a few segments, to keep the 24 h run short.
ScanResult TimeScan(const std::vector<std::unique_ptr<SegmentReader>>& readers, int64_t from, int64_t to,
                    const std::function<bool(uint64_t)>& filter) {
  ScanResult best{0, 1e30};
  const int reps = readers.size() > 4 ? 1 : 3;
  for (int rep = 0; rep < reps; ++rep) {
    uint64_t rows = 0;
    int64_t sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = ThreadCpuSeconds();
    for (const auto& reader : readers) {
      if (reader->max_time() < from || reader->min_time() >= to) continue;
      const Status s = reader->Scan(from, to, filter, 0, [&](const SampleRow& r) {
        ++rows;
        sum += r.value;
      });
      if (!s.ok()) {
        std::fprintf(stderr, "scan failed: %s\n", s.ToString().c_str());
        std::exit(1);
      }
    }
    const double secs = Seconds(t0);
    if (secs < best.seconds) best = {rows, secs, ThreadCpuSeconds() - c0};
    if (sum < 0) std::printf("impossible\n");
  }
  return best;
}

// Writes `hours` hour-long segments, generating hour h+1 on a second thread
// while hour h is written (generation is not timed), then scans them.
void RunHours(int hours, const Options& opt) {
  const AliasTable zipf = ZipfTable(opt);
  const std::vector<uint64_t> ids = StackIds(opt);
  std::vector<std::string> paths;
  WriteResult w;
  ColumnBytes cols;
  const auto t_all = std::chrono::steady_clock::now();
  std::vector<SampleRow> next = GenerateHour(0, zipf, ids);
  for (int h = 0; h < hours; ++h) {
    std::vector<SampleRow> rows = std::move(next);
    std::thread gen;
    if (h + 1 < hours) gen = std::thread([&, h] { next = GenerateHour(h + 1, zipf, ids); });
    paths.push_back(opt.dir + "/segment_bench_" + std::to_string(h) + ".wsseg");
    w += TimeWrite(paths.back(), std::move(rows), SegmentWriteOptions());
    const ColumnBytes c = MeasureColumns(paths.back());
    cols.header += c.header, cols.runs += c.runs, cols.time += c.time, cols.stack += c.stack, cols.value += c.value;
    if (gen.joinable()) gen.join();
  }
  const double total_s = Seconds(t_all);

  const auto t_open = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<SegmentReader>> readers;
  size_t blocks = 0;
  for (const std::string& path : paths) {
    readers.push_back(std::move(SegmentReader::Open(path)).value());
    blocks += readers.back()->block_count();
  }
  const double open_s = Seconds(t_open);
  const int64_t begin = readers.front()->min_time();
  const int64_t end = readers.back()->max_time() + kBucketNs;
  const ScanResult full = TimeScan(readers, begin, end, nullptr);
  const ScanResult last5 = TimeScan(readers, end - 300 * 1'000'000'000LL, end, nullptr);
  const ScanResult node = TimeScan(readers, begin, end, [](uint64_t s) { return s <= kProcsPerNode; });
  const ScanResult one = TimeScan(readers, begin, end, [](uint64_t s) { return s == 7; });
  const uint64_t raw_samples = static_cast<uint64_t>(hours) * 3600 * kNodes * kCpusPerNode * kHz;
  const double n = static_cast<double>(w.rows_out);

  std::printf("\n### %d h in %d hour-long segment%s: %llu raw samples, %llu aggregated rows (%.0f s in all)\n\n",
              hours, hours, hours > 1 ? "s" : "", static_cast<unsigned long long>(raw_samples),
              static_cast<unsigned long long>(w.rows_out), total_s);
  std::printf("| metric | value |\n|---|---|\n");
  std::printf("| on disk | %.1f MB in %zu blocks |\n", w.bytes / 1e6, blocks);
  std::printf("| **bytes per aggregated row** | **%.3f** |\n", w.bytes / n);
  std::printf("| bytes per raw sample | %.3f |\n", w.bytes / static_cast<double>(raw_samples));
  std::printf("| bytes/row by column: runs, time, stack, value, headers+footer | %.3f, %.3f, %.3f, %.3f, %.3f |\n",
              cols.runs / n, cols.time / n, cols.stack / n, cols.value / n, cols.header / n);
  std::printf("| write (sort+merge+encode+fsync), wall | %.2f s: %.2f M rows/s, %.0f MB/s of rows in memory "
              "(40 B), %.1f MB/s to disk |\n",
              w.seconds, w.rows_in / w.seconds / 1e6, w.rows_in * sizeof(SampleRow) / w.seconds / 1e6,
              w.bytes / w.seconds / 1e6);
  std::printf("| write, per CPU second | %.2f s CPU: %.2f M rows/s, %.0f MB/s in memory, %.1f MB/s to disk |\n",
              w.cpu_seconds, w.rows_in / w.cpu_seconds / 1e6,
              w.rows_in * sizeof(SampleRow) / w.cpu_seconds / 1e6, w.bytes / w.cpu_seconds / 1e6);
  std::printf("| open all segments | %.2f ms |\n", open_s * 1e3);
  auto scan_line = [&](const char* name, const ScanResult& r) {
    std::printf("| scan %s | %llu rows in %.3f s wall (%.3f s CPU): %.1f M rows/s wall, %.1f M per CPU s |\n",
                name, static_cast<unsigned long long>(r.rows), r.seconds, r.cpu_seconds, r.rows / r.seconds / 1e6,
                r.rows / r.cpu_seconds / 1e6);
  };
  scan_line("full range", full);
  scan_line("last 5 minutes", last5);
  scan_line("full range, one node (50 series)", node);
  scan_line("full range, one series", one);
  for (const std::string& path : paths) ::unlink(path.c_str());
}

void Sweep(const Options& opt) {
  std::printf("\n### Layout sweep, 1 h of data\n\n");
  std::printf("| sort window | rows/block | zstd | bytes/row | write s | full scan M rows/s | last 5 min scan s "
              "| one series scan s |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  const std::vector<SampleRow> rows = GenerateHour(0, ZipfTable(opt), StackIds(opt));
  struct Variant {
    const char* name;
    int64_t window_ns;
    uint32_t block;
    int level;
  };
  const Variant variants[] = {
      {"none (series-major)", 0, 65536, 3},        {"5 min (default)", 300 * 1'000'000'000LL, 65536, 3},
      {"15 min", 900 * 1'000'000'000LL, 65536, 3}, {"10 s (time-major)", kBucketNs, 65536, 3},
      {"5 min", 300 * 1'000'000'000LL, 16384, 3},  {"5 min", 300 * 1'000'000'000LL, 262144, 3},
      {"5 min", 300 * 1'000'000'000LL, 65536, 1},  {"5 min", 300 * 1'000'000'000LL, 65536, 9},
  };
  const std::string path = opt.dir + "/segment_bench_sweep.wsseg";
  for (const Variant& v : variants) {
    SegmentWriteOptions options;
    options.time_window_ns = v.window_ns;
    options.rows_per_block = v.block;
    options.zstd_level = v.level;
    const WriteResult w = TimeWrite(path, rows, options);
    std::vector<std::unique_ptr<SegmentReader>> readers;
    readers.push_back(std::move(SegmentReader::Open(path)).value());
    const int64_t end = readers[0]->max_time() + kBucketNs;
    const ScanResult full = TimeScan(readers, readers[0]->min_time(), end, nullptr);
    const ScanResult last5 = TimeScan(readers, end - 300 * 1'000'000'000LL, end, nullptr);
    const ScanResult one = TimeScan(readers, readers[0]->min_time(), end, [](uint64_t s) { return s == 7; });
    std::printf("| %s | %u | %d | %.3f | %.2f | %.1f | %.4f | %.4f |\n", v.name, v.block, v.level,
                w.bytes / static_cast<double>(w.rows_out), w.seconds, full.rows / full.seconds / 1e6,
                last5.seconds, one.seconds);
  }
  ::unlink(path.c_str());
}

bool ParseFlag(const char* arg, const char* name, std::string* value) {
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

}  // namespace
}  // namespace warpscope

int main(int argc, char** argv) {
  using namespace warpscope;
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (ParseFlag(argv[i], "--hours", &v)) {
      opt.hours.clear();
      for (size_t pos = 0; pos < v.size();) {
        const size_t comma = std::min(v.find(',', pos), v.size());
        opt.hours.push_back(std::stoi(v.substr(pos, comma - pos)));
        pos = comma + 1;
      }
    } else if (ParseFlag(argv[i], "--dir", &v)) {
      opt.dir = v;
    } else if (ParseFlag(argv[i], "--stack_ids", &v)) {
      opt.shuffled_ids = v != "ranked";
    } else if (ParseFlag(argv[i], "--zipf_s", &v)) {
      opt.zipf_s = std::stod(v);
    } else if (std::strcmp(argv[i], "--sweep") == 0) {
      opt.sweep = true;
    } else {
      std::fprintf(stderr, "usage: %s [--hours=1,24] [--dir=/tmp] [--stack_ids=shuffled|ranked] [--zipf_s=1.0] "
                   "[--sweep]\n", argv[0]);
      return 2;
    }
  }
  std::printf("## segment_bench: %d nodes x %d processes, %d CPUs at %d Hz, Zipf(%.2f) over %d stacks, %s ids, "
              "10 s buckets\n", kNodes, kProcsPerNode, kCpusPerNode, kHz, opt.zipf_s, kStacks,
              opt.shuffled_ids ? "shuffled" : "ranked");
  for (int h : opt.hours) RunHours(h, opt);
  if (opt.sweep) Sweep(opt);
  return 0;
}
