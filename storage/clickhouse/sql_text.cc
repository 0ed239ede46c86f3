#include "storage/clickhouse/sql_text.h"

#include <algorithm>
#include <cstdint>

#include "storage/clickhouse/row_binary.h"

namespace warpscope::clickhouse {

std::string SqlString(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('\'');
  for (char c : text) {
    if (c == '\\' || c == '\'') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\0') {
      out += "\\0";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

std::string SqlInt64(int64_t v) {
  if (v == INT64_MIN) return "toInt64(-9223372036854775808)";
  return "toInt64(" + std::to_string(v) + ")";
}

std::string SqlIdList(const std::vector<uint64_t>& ids) {
  std::string out = "(";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(ids[i]);
  }
  return out + ")";
}

ExternalTable IdTable(const std::string& name, const std::vector<uint64_t>& ids) {
  RowBinaryWriter w;
  for (uint64_t id : ids) w.UInt64(id);
  return ExternalTable{.name = name, .structure = "id UInt64", .data = w.Take()};
}

std::string LabelValueSql(const std::string& name) {
  return "labels.value[indexOf(labels.name, " + SqlString(name) + ")]";
}

std::string SeriesFilterSql(const Selector& selector) {
  if (selector.selects_everything()) return "";
  std::string where;
  for (const LabelMatcher& m : selector.matchers()) {
    if (!where.empty()) where += " AND ";
    const std::string v = LabelValueSql(m.name());
    switch (m.op()) {
      case MatchOp::kEqual:
        where += v + " = " + SqlString(m.value());
        break;
      case MatchOp::kNotEqual:
        where += v + " != " + SqlString(m.value());
        break;
      case MatchOp::kRegexMatch:
        where += "match(" + v + ", " + SqlString("(?-s)^(?:" + m.value() + ")$") + ")";
        break;
      case MatchOp::kRegexNoMatch:
        where += "NOT match(" + v + ", " + SqlString("(?-s)^(?:" + m.value() + ")$") + ")";
        break;
    }
  }
  // GLOBAL: on Distributed fact tables (docs/deploy-clickhouse.md) the
  // subquery runs once on the node that got the query, where label_sets is,
  // and its answer goes to every shard; on plain tables it is the same as IN.
  return "series_id GLOBAL IN (SELECT series_id FROM label_sets WHERE " + where + ")";
}

}  // namespace warpscope::clickhouse

namespace warpscope::clickhouse {

std::string GroupLabelsSql(const std::vector<std::string>& names) {
  std::string sql = "SELECT series_id";
  for (size_t i = 0; i < names.size(); ++i) sql += ", " + LabelValueSql(names[i]) + " AS g" + std::to_string(i);
  return sql + " FROM label_sets";
}

std::string GroupColumns(size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += "g" + std::to_string(i) + ", ";
  return out;
}

std::vector<std::string> SortedUnique(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace warpscope::clickhouse
