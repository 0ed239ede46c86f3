// Checks the embedded store runs at open to tell whether its files belong
// together, and the wording of its refusals.
//
// dictionary.sqlite against the rows: every segment footer carries the marks
// of the dictionary it was written with (dictionary_marks.h), and every WAL
// record its rows' ids. A segment of another dictionary, or any id above the
// dictionary's highest, means dictionary.sqlite was lost or rolled back; the
// store then refuses to start rather than attribute old rows to whatever the
// ids mean now.
//
// Stateless; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "storage/embedded/dictionary_marks.h"
#include "storage/embedded/head_record.h"

namespace warpscope::embedded {

// What every refusal of a mismatched dictionary ends with.
inline constexpr std::string_view kDictionaryBehind =
    "dictionary.sqlite is behind the segments: it was lost or restored from an older copy; restore the matching "
    "dictionary.sqlite (with its -wal) or move segments/ and wal/ aside to start empty; see docs/getting-started.md, "
    "Limits and failure modes";

// How refusals that repair can get past name it.
inline constexpr std::string_view kRepairOption = "the repair option (warpscope-server --repair)";

// FailedPrecondition "<detail>: <kDictionaryBehind>".
Status DictionaryBehind(const std::string& detail);

// OK when the rows of a segment written with `file`'s marks can be read with
// the dictionary of `dictionary`'s marks: same store id (or none recorded)
// and no maximum above the dictionary's. `what` names the file.
Status CheckSegmentMarks(const std::string& what, const DictionaryMarks& file, const DictionaryMarks& dictionary);

// OK when every id the record's rows refer to is at most the dictionary's
// highest of its kind. `is_metric_type[type id]` marks metric types, whose
// rows keep a value, not a stack id, in stack_id (metric_row.h); ids past its
// end are not metric types. `what` names the record.
Status CheckRecordIds(const std::string& what, const HeadRecord& record, const DictionaryMarks& dictionary,
                      const std::vector<uint8_t>& is_metric_type);

// "2023-11-14T22:13:20Z" (UTC, to the second) for messages and logs.
std::string FormatUnixTime(int64_t unix_ns);

}  // namespace warpscope::embedded
