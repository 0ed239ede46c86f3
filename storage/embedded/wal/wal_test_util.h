// Helpers shared by the write-ahead log tests (single-threaded unless noted).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "storage/embedded/wal/wal.h"
#include "tests/support/scratch_dir.h"

namespace warpscope::wal::testing {

class ScratchDir : public warpscope::testing::ScratchDir {
 public:
  ScratchDir() : warpscope::testing::ScratchDir("wal_test") {}
  std::string wal() const { return Path("wal"); }
};

struct Replayed {
  Status status;
  std::vector<uint64_t> seqs;
  std::vector<std::string> payloads;
  ReplayStats stats;
};

inline Replayed ReplayAll(const std::string& dir, uint64_t from_seq = 1, bool skip_corrupt = false) {
  Replayed r;
  ReplayOptions options;
  options.skip_corrupt = skip_corrupt;
  r.status = ReplayWal(
      dir, from_seq, options,
      [&](uint64_t seq, std::string_view payload) {
        r.seqs.push_back(seq);
        r.payloads.emplace_back(payload);
        return Status::Ok();
      },
      &r.stats);
  return r;
}

// Log file paths in seq order.
inline std::vector<std::string> LogFiles(const std::string& dir) {
  std::vector<std::string> out;
  StatusOr<std::vector<WalFile>> files = ListWalFiles(dir, nullptr);
  if (!files.ok()) return out;
  for (const WalFile& f : *files) out.push_back(f.path);
  return out;
}

inline uint64_t FileSize(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

// Deterministic, content-checkable payload of the given size.
inline std::string MakePayload(const std::string& tag, size_t size) {
  std::string p = tag + ":";
  while (p.size() < size) p.push_back(static_cast<char>('a' + (p.size() * 7 + tag.size()) % 26));
  p.resize(size);
  return p;
}

}  // namespace warpscope::wal::testing
