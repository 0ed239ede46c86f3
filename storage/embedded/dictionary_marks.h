// DictionaryMarks: which dictionary (dictionary.sqlite) the ids in a file
// belong to, and how far its ids reached when the file was written.
//
// Segments and WAL records refer to series, stacks, strings and types only by
// dictionary id (dictionary/dictionary_store.h). A dictionary that is lost
// (a new, empty one starts handing out ids from 1 again) or rolled back to an
// older copy would silently give old rows new meanings. So every segment
// footer (segment_format.h, version 3) records the identity of the
// dictionary it was written against and the dictionary's highest ids at that
// moment, and the store refuses to open when a segment's marks do not fit the
// dictionary it finds (store_consistency.h). Ids only grow, so a dictionary
// that is at least as new as every file passes.
//
// Plain values; any thread.
#pragma once

#include <cstdint>

namespace warpscope {

struct DictionaryMarks {
  // The dictionary's random identity, made when it was created; 0 = unknown
  // (a file written before marks existed: nothing to check).
  uint64_t store_id = 0;
  uint64_t max_series_id = 0;  // label sets
  uint64_t max_stack_id = 0;
  uint64_t max_string_id = 0;  // GPU activity names refer to strings directly
  uint64_t max_type_id = 0;    // profile and metric types
  friend bool operator==(const DictionaryMarks&, const DictionaryMarks&) = default;
};

}  // namespace warpscope
