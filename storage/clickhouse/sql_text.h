// Pieces of ClickHouse SQL the store splices together: literals, id lists
// as external tables, and label selectors as conditions on label_sets
// (docs/design/clickhouse.md §7). Pure functions, any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/selector.h"
#include "storage/clickhouse/clickhouse_client.h"

namespace warpscope::clickhouse {

// 'text' with \ and ' escaped (and NUL as \0): a ClickHouse string literal.
std::string SqlString(const std::string& text);
// toInt64(-5): typed, so arithmetic with Int64 columns stays Int64.
std::string SqlInt64(int64_t v);
// (1, 2, 3) of UInt64 literals, for short lists; `()` is not valid SQL, so
// callers must not pass an empty list.
std::string SqlIdList(const std::vector<uint64_t>& ids);

// An external table `name` (id UInt64) holding `ids`: `... IN name`.
ExternalTable IdTable(const std::string& name, const std::vector<uint64_t>& ids);

// The value of label `name` in a label_sets row ("" when absent).
std::string LabelValueSql(const std::string& name);

// "" for a selector that selects everything; otherwise
// "series_id GLOBAL IN (SELECT series_id FROM label_sets WHERE ...)" (GLOBAL
// so sharded fact tables work: the shards need no label_sets). Regex
// matchers run in ClickHouse's RE2, fully anchored and with '.' not matching
// '\n' (as our ECMAScript matchers); the dialects differ outside their
// common subset (model/label_matcher.h).
std::string SeriesFilterSql(const Selector& selector);

// " AND <filter>" or "".
inline std::string AndFilter(const std::string& filter) { return filter.empty() ? "" : " AND " + filter; }

}  // namespace warpscope::clickhouse

namespace warpscope::clickhouse {

// Grouping by labels inside ClickHouse (§7): the rows' series joined to
// their label values,
//   FROM (<rows with series_id>) ANY LEFT JOIN (GroupLabelsSql(names)) USING series_id
// gives columns g0..g{n-1}, "" for a missing label. ANY, not ALL: label_sets
// may hold a series twice before merges. GroupColumns(n) is "g0, g1, " (with
// the trailing comma and space; "" for none).
std::string GroupLabelsSql(const std::vector<std::string>& names);
std::string GroupColumns(size_t n);

// Sorted, duplicates removed: the group_by labels as answers list them.
std::vector<std::string> SortedUnique(std::vector<std::string> names);

}  // namespace warpscope::clickhouse
