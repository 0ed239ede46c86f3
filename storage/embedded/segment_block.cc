#include "storage/embedded/segment_block.h"

#include <algorithm>
#include <numeric>

namespace warpscope::segment {

namespace {

// Largest raw chunk sizes rows can need: a varint is at most 10 bytes; a run
// is three varints (type <= 5 bytes, series 10, length <= 3 for 2^20 rows).
constexpr size_t kMaxBytesPerRowValue = 10;
constexpr size_t kMaxBytesPerRun = 18;

// Decodes exactly `n` varints that fill `in` completely. The fast path skips
// per-byte bounds checks while at least 10 bytes remain.
bool DecodeVarints(std::string_view in, uint32_t n, uint64_t* out) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(in.data());
  const uint8_t* end = p + in.size();
  for (uint32_t i = 0; i < n; ++i) {
    if (end - p >= 10) {
      uint64_t v = 0;
      for (int shift = 0;; shift += 7) {
        const uint8_t byte = *p++;
        // Same rules as ByteReader::GetVarint64: at most 10 bytes, and the
        // tenth may only carry the top bit.
        if (shift == 63 && byte > 1) return false;
        v |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if (byte < 0x80) break;
        if (shift == 63) return false;
      }
      out[i] = v;
    } else {
      ByteReader r(reinterpret_cast<const char*>(p), static_cast<size_t>(end - p));
      if (!r.GetVarint64(&out[i])) return false;
      p = end - r.remaining();
    }
  }
  return p == end;
}

}  // namespace

Status EncodeBlock(std::span<const SampleRow> rows, ZSTD_CCtx_s* cctx, int zstd_level,
                   BlockEncodeScratch* scratch, std::string* out, BlockIndexEntry* entry) {
  if (rows.empty() || rows.size() > kMaxRowsPerBlock) return InternalError("block row count out of range");
  *entry = BlockIndexEntry{};
  entry->row_count = static_cast<uint32_t>(rows.size());
  entry->min_type = entry->max_type = rows[0].type_id;
  entry->min_time = entry->max_time = rows[0].time_ns;
  entry->min_series = entry->max_series = rows[0].series_id;
  for (const SampleRow& r : rows) {
    entry->min_type = std::min(entry->min_type, r.type_id);
    entry->max_type = std::max(entry->max_type, r.type_id);
    entry->min_time = std::min(entry->min_time, r.time_ns);
    entry->max_time = std::max(entry->max_time, r.time_ns);
    entry->min_series = std::min(entry->min_series, r.series_id);
    entry->max_series = std::max(entry->max_series, r.series_id);
  }
  // Offsets from the block's earliest time in units of their GCD: 10 s
  // buckets become steps of 1, which take one varint byte instead of five.
  const uint64_t base = static_cast<uint64_t>(entry->min_time);
  uint64_t scale = 0;
  for (const SampleRow& r : rows) scale = std::gcd(scale, static_cast<uint64_t>(r.time_ns) - base);
  if (scale == 0) scale = 1;

  scratch->runs.clear();
  scratch->time.clear();
  scratch->stack.clear();
  scratch->value.clear();
  uint64_t prev_run_series = 0, prev_q = 0, prev_stack = 0;
  size_t run_start = 0;
  for (size_t i = 0; i <= rows.size(); ++i) {
    if (i > run_start && (i == rows.size() || rows[i].type_id != rows[run_start].type_id ||
                          rows[i].series_id != rows[run_start].series_id)) {
      PutVarint64(&scratch->runs, rows[run_start].type_id);
      PutVarint64(&scratch->runs, ZigZagEncode(static_cast<int64_t>(rows[run_start].series_id - prev_run_series)));
      PutVarint64(&scratch->runs, i - run_start);
      prev_run_series = rows[run_start].series_id;
      run_start = i;
    }
    if (i == rows.size()) break;
    const SampleRow& r = rows[i];
    const uint64_t q = (static_cast<uint64_t>(r.time_ns) - base) / scale;
    PutVarint64(&scratch->time, ZigZagEncode(static_cast<int64_t>(q - prev_q)));
    PutVarint64(&scratch->stack, ZigZagEncode(static_cast<int64_t>(r.stack_id - prev_stack)));
    PutVarint64(&scratch->value, ZigZagEncode(r.value));
    prev_q = q;
    prev_stack = r.stack_id;
  }

  const size_t start = out->size();
  PutVarint64(out, rows.size());
  PutFixed64(out, base);
  PutVarint64(out, scale);
  RETURN_IF_ERROR(AppendChunk(cctx, zstd_level, scratch->runs, &scratch->compressed, out));
  entry->prefix_size = static_cast<uint32_t>(out->size() - start);
  RETURN_IF_ERROR(AppendChunk(cctx, zstd_level, scratch->time, &scratch->compressed, out));
  RETURN_IF_ERROR(AppendChunk(cctx, zstd_level, scratch->stack, &scratch->compressed, out));
  RETURN_IF_ERROR(AppendChunk(cctx, zstd_level, scratch->value, &scratch->compressed, out));
  return Status::Ok();
}

Status BlockDecoder::DecodeRuns(std::string_view prefix, uint32_t expected_rows) {
  ByteReader in(prefix);
  uint64_t rows = 0, base = 0, scale = 0;
  if (!in.GetVarint64(&rows) || !in.GetFixed64(&base) || !in.GetVarint64(&scale)) {
    return DataLossError("block header is cut short");
  }
  if (rows != expected_rows || rows == 0 || rows > kMaxRowsPerBlock) {
    return DataLossError("block holds " + std::to_string(rows) + " rows, the index says " +
                         std::to_string(expected_rows));
  }
  if (scale == 0) return DataLossError("block has a zero time scale");
  row_count_ = static_cast<uint32_t>(rows);
  time_base_ = static_cast<int64_t>(base);
  time_scale_ = scale;

  RETURN_IF_ERROR(ReadChunk(dctx_.get(), &in, rows * kMaxBytesPerRun, &raw_).WithContext("runs column"));
  if (!in.done()) return DataLossError("block prefix has bytes after its runs column");
  runs_.clear();
  ByteReader r(raw_);
  uint64_t series = 0, covered = 0;
  while (!r.done()) {
    uint64_t type = 0, delta = 0, length = 0;
    if (!r.GetVarint64(&type) || !r.GetVarint64(&delta) || !r.GetVarint64(&length)) {
      return DataLossError("runs column is cut short");
    }
    if (type > UINT32_MAX || length == 0 || length > rows - covered) {
      return DataLossError("runs column has an impossible run");
    }
    series += static_cast<uint64_t>(ZigZagDecode(delta));
    covered += length;
    runs_.push_back(SeriesRun{static_cast<uint32_t>(type), series, static_cast<uint32_t>(length)});
  }
  if (covered != rows) return DataLossError("runs cover " + std::to_string(covered) + " of " +
                                            std::to_string(rows) + " rows");
  return Status::Ok();
}

Status BlockDecoder::DecodeColumns(std::string_view columns) {
  ByteReader in(columns);
  const uint32_t n = row_count_;
  const size_t max_raw = static_cast<size_t>(n) * kMaxBytesPerRowValue;
  varints_.resize(n);
  times_.resize(n);
  stacks_.resize(n);
  values_.resize(n);

  RETURN_IF_ERROR(ReadChunk(dctx_.get(), &in, max_raw, &raw_).WithContext("time column"));
  if (!DecodeVarints(raw_, n, varints_.data())) return DataLossError("time column does not hold one value per row");
  uint64_t q = 0;
  for (uint32_t i = 0; i < n; ++i) {
    q += static_cast<uint64_t>(ZigZagDecode(varints_[i]));
    times_[i] = static_cast<int64_t>(static_cast<uint64_t>(time_base_) + q * time_scale_);
  }

  RETURN_IF_ERROR(ReadChunk(dctx_.get(), &in, max_raw, &raw_).WithContext("stack column"));
  if (!DecodeVarints(raw_, n, varints_.data())) return DataLossError("stack column does not hold one value per row");
  uint64_t stack = 0;
  for (uint32_t i = 0; i < n; ++i) {
    stack += static_cast<uint64_t>(ZigZagDecode(varints_[i]));
    stacks_[i] = stack;
  }

  RETURN_IF_ERROR(ReadChunk(dctx_.get(), &in, max_raw, &raw_).WithContext("value column"));
  if (!DecodeVarints(raw_, n, varints_.data())) return DataLossError("value column does not hold one value per row");
  for (uint32_t i = 0; i < n; ++i) values_[i] = ZigZagDecode(varints_[i]);

  if (!in.done()) return DataLossError("block has bytes after its last column");
  return Status::Ok();
}

}  // namespace warpscope::segment
