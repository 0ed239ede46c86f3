#include "storage/embedded/store_consistency.h"

#include <time.h>

#include <cstdio>

namespace warpscope::embedded {
namespace {

// `kind` is one of "series", "stack", "string", "type".
Status IdAbove(const std::string& what, const std::string& kind, uint64_t id, uint64_t dictionary_max) {
  const std::string kinds = kind == "series" ? kind : kind + "s";
  return DictionaryBehind(what + " refers to " + kind + " id " + std::to_string(id) + " but dictionary.sqlite holds " +
                          kinds + " up to " + std::to_string(dictionary_max));
}

}  // namespace

Status DictionaryBehind(const std::string& detail) {
  return FailedPreconditionError(detail + ": " + std::string(kDictionaryBehind));
}

Status CheckSegmentMarks(const std::string& what, const DictionaryMarks& file, const DictionaryMarks& dictionary) {
  if (file.store_id == 0) return Status::Ok();  // written before marks: nothing to compare
  if (file.store_id != dictionary.store_id) {
    return DictionaryBehind(what + " was written with dictionary " + std::to_string(file.store_id) +
                            " but dictionary.sqlite is dictionary " + std::to_string(dictionary.store_id));
  }
  const struct {
    const char* kind;
    uint64_t file, dictionary;
  } maxima[] = {
      {"series", file.max_series_id, dictionary.max_series_id},
      {"stack", file.max_stack_id, dictionary.max_stack_id},
      {"string", file.max_string_id, dictionary.max_string_id},
      {"type", file.max_type_id, dictionary.max_type_id},
  };
  for (const auto& m : maxima) {
    if (m.file > m.dictionary) return IdAbove(what, m.kind, m.file, m.dictionary);
  }
  return Status::Ok();
}

Status CheckRecordIds(const std::string& what, const HeadRecord& record, const DictionaryMarks& dictionary,
                      const std::vector<uint8_t>& is_metric_type) {
  for (const SampleRow& row : record.rows) {
    if (row.type_id > dictionary.max_type_id) return IdAbove(what, "type", row.type_id, dictionary.max_type_id);
    if (row.series_id > dictionary.max_series_id) {
      return IdAbove(what, "series", row.series_id, dictionary.max_series_id);
    }
    const bool metric = row.type_id < is_metric_type.size() && is_metric_type[row.type_id] != 0;
    if (!metric && row.stack_id > dictionary.max_stack_id) {
      return IdAbove(what, "stack", row.stack_id, dictionary.max_stack_id);
    }
  }
  for (const GpuActivityRow& a : record.gpu.activities) {
    if (a.series_id > dictionary.max_series_id) return IdAbove(what, "series", a.series_id, dictionary.max_series_id);
    if (a.stack_id > dictionary.max_stack_id) return IdAbove(what, "stack", a.stack_id, dictionary.max_stack_id);
    for (uint64_t id : {a.name_id, a.system_name_id}) {
      if (id > dictionary.max_string_id) return IdAbove(what, "string", id, dictionary.max_string_id);
    }
  }
  for (const GpuCoverageRow& c : record.gpu.coverage) {
    if (c.series_id > dictionary.max_series_id) return IdAbove(what, "series", c.series_id, dictionary.max_series_id);
  }
  return Status::Ok();
}

std::string FormatUnixTime(int64_t unix_ns) {
  const time_t seconds = static_cast<time_t>(unix_ns / 1'000'000'000 - (unix_ns % 1'000'000'000 < 0 ? 1 : 0));
  tm utc{};
  if (::gmtime_r(&seconds, &utc) == nullptr) return std::to_string(unix_ns) + " ns";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                utc.tm_hour, utc.tm_min, utc.tm_sec);
  return buf;
}

}  // namespace warpscope::embedded
