// SipHash-2-4 with a zero key: exactly ClickHouse's sipHash64(String), so an
// id computed by warpscope-server equals sipHash64(<the same bytes>) in SQL
// (docs/design/clickhouse.md §4; sip_hash_test.cc checks it against the
// server). Pure function, any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace warpscope::clickhouse {

uint64_t SipHash64(std::string_view bytes);

}  // namespace warpscope::clickhouse
