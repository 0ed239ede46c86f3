#include "storage/embedded/segment_catalog.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "base/logging.h"
#include "storage/embedded/quarantine.h"

namespace warpscope::embedded {
namespace {

constexpr std::string_view kPrefix = "seg-";
constexpr std::string_view kRollupPrefix = "sum-";
constexpr std::string_view kSuffix = ".wss";

bool ParseDigits(std::string_view s, uint64_t* out) {
  if (s.size() != 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open " + dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  return rc == 0 ? Status::Ok() : ErrnoError(err, "fsync " + dir);
}

}  // namespace

namespace {

std::string RangeFileName(std::string_view prefix, uint64_t lo, uint64_t hi) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*s%020" PRIu64 "-%020" PRIu64 ".wss", static_cast<int>(prefix.size()),
                prefix.data(), lo, hi);
  return buf;
}

bool ParseRangeFileName(std::string_view prefix, std::string_view name, uint64_t* lo, uint64_t* hi) {
  if (name.size() != prefix.size() + 20 + 1 + 20 + kSuffix.size()) return false;
  if (!name.starts_with(prefix) || !name.ends_with(kSuffix)) return false;
  name.remove_prefix(prefix.size());
  if (name[20] != '-') return false;
  return ParseDigits(name.substr(0, 20), lo) && ParseDigits(name.substr(21, 20), hi) && *lo <= *hi;
}

}  // namespace

std::string SegmentFileName(uint64_t lo, uint64_t hi) { return RangeFileName(kPrefix, lo, hi); }
bool ParseSegmentFileName(std::string_view name, uint64_t* lo, uint64_t* hi) {
  return ParseRangeFileName(kPrefix, name, lo, hi);
}
std::string RollupFileName(uint64_t lo, uint64_t hi) { return RangeFileName(kRollupPrefix, lo, hi); }
bool ParseRollupFileName(std::string_view name, uint64_t* lo, uint64_t* hi) {
  return ParseRangeFileName(kRollupPrefix, name, lo, hi);
}

namespace {

struct NamedFile {
  uint64_t lo, hi;
  std::string name;
};

// What `dir` holds: the live segments (ascending lo) with their rollups, and
// the dead files (segment_catalog.h's rules).
struct Listing {
  std::vector<NamedFile> live;
  std::vector<const NamedFile*> rollup_of;  // by live index; into `rollups`
  std::vector<NamedFile> rollups;
  std::vector<std::string> dead;
};

StatusOr<Listing> ListSegmentDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError(errno, "opendir " + dir);
  std::vector<NamedFile> named;
  Listing out;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    uint64_t lo = 0, hi = 0;
    if (ParseSegmentFileName(name, &lo, &hi)) {
      named.push_back({lo, hi, std::string(name)});
    } else if (ParseRollupFileName(name, &lo, &hi)) {
      out.rollups.push_back({lo, hi, std::string(name)});
    } else if ((name.starts_with(kPrefix) || name.starts_with(kRollupPrefix)) &&
               name.find(".tmp.") != std::string_view::npos) {
      out.dead.emplace_back(name);  // WriteSegment's temporary, never renamed into place
    }
    // Anything else is not ours: left alone.
  }
  ::closedir(d);

  // Sweep in (lo ascending, hi descending) order: a segment starting at or
  // below the highest hi so far lies inside an earlier, wider one.
  std::sort(named.begin(), named.end(),
            [](const NamedFile& a, const NamedFile& b) { return a.lo != b.lo ? a.lo < b.lo : a.hi > b.hi; });
  for (NamedFile& n : named) {
    if (!out.live.empty() && n.lo <= out.live.back().hi) {
      if (n.hi > out.live.back().hi) {
        return FailedPreconditionError("segments " + out.live.back().name + " and " + n.name + " in " + dir +
                                       " overlap without one containing the other; refusing to guess which is live");
      }
      out.dead.push_back(std::move(n.name));
      continue;
    }
    out.live.push_back(std::move(n));
  }
  // A rollup lives only beside the live segment of its exact range.
  out.rollup_of.assign(out.live.size(), nullptr);
  for (const NamedFile& r : out.rollups) {
    auto it = std::lower_bound(out.live.begin(), out.live.end(), r.lo,
                               [](const NamedFile& n, uint64_t lo) { return n.lo < lo; });
    if (it != out.live.end() && it->lo == r.lo && it->hi == r.hi) {
      out.rollup_of[it - out.live.begin()] = &r;
    } else {
      out.dead.push_back(r.name);
    }
  }
  return out;
}

}  // namespace

StatusOr<LoadedSegments> LoadSegments(const std::string& dir, const LoadOptions& options) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoError(errno, "mkdir " + dir);
  LoadedSegments out;
  // Each pass opens every live segment; one that does not open is moved to
  // quarantine and the dir listed again, since its range may have hidden
  // files that are live without it.
  while (true) {
    ASSIGN_OR_RETURN(Listing listing, ListSegmentDir(dir));
    SegmentList opened;
    bool moved = false;
    for (size_t i = 0; i < listing.live.size() && !moved; ++i) {
      const NamedFile& n = listing.live[i];
      StatusOr<std::unique_ptr<SegmentReader>> reader = SegmentReader::Open(dir + "/" + n.name);
      if (!reader.ok()) {
        if (reader.status().code() != StatusCode::kDataLoss || options.quarantine_dir.empty()) return reader.status();
        ASSIGN_OR_RETURN(std::string moved_to, MoveToQuarantine(options.quarantine_dir, dir + "/" + n.name));
        if (listing.rollup_of[i] != nullptr) {
          ASSIGN_OR_RETURN(std::string rollup_to,
                           MoveToQuarantine(options.quarantine_dir, dir + "/" + listing.rollup_of[i]->name));
          (void)rollup_to;
        }
        out.quarantined.push_back({n.name, std::move(moved_to), reader.status()});
        moved = true;
        continue;
      }
      auto segment = std::make_shared<Segment>();
      segment->lo = n.lo;
      segment->hi = n.hi;
      segment->reader = std::move(reader).value();
      if (listing.rollup_of[i] != nullptr) {
        // Only a copy: an unreadable one is dropped, not fatal.
        StatusOr<std::unique_ptr<SegmentReader>> rollup = SegmentReader::Open(dir + "/" + listing.rollup_of[i]->name);
        if (rollup.ok()) {
          segment->rollup = std::move(rollup).value();
        } else {
          LOG_WARNING() << "ignoring rollup " << listing.rollup_of[i]->name << ": " << rollup.status().ToString();
        }
      }
      opened.push_back(std::move(segment));
    }
    if (moved) continue;
    for (const std::string& name : listing.dead) {
      std::string path = dir + "/" + name;
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoError(errno, "delete " + path);
      LOG_INFO() << "deleted dead segment file " << path;
      out.deleted.push_back(name);
    }
    if (!listing.dead.empty()) RETURN_IF_ERROR(FsyncDir(dir));
    out.segments = std::move(opened);
    return out;
  }
}

std::vector<std::pair<size_t, size_t>> PlanCompaction(const SegmentList& segments, const CompactionPolicy& policy) {
  std::vector<std::pair<size_t, size_t>> runs;
  const size_t min_inputs = std::max<size_t>(policy.min_inputs, 2);
  size_t begin = 0;
  while (begin < segments.size()) {
    uint64_t rows = 0;
    int64_t min_time = INT64_MAX, max_time = INT64_MIN;
    size_t end = begin;
    while (end < segments.size()) {
      const SegmentReader& r = *segments[end]->reader;
      // Every kind of row counts (samples, GPU activities, coverage).
      if (r.total_rows() * 2 > policy.max_rows) break;  // already big: not an input
      if (segments[end]->damage.any()) break;          // kept as it is: its gaps stay visible
      int64_t lo = r.total_rows() ? std::min(min_time, r.data_min_time()) : min_time;
      int64_t hi = r.total_rows() ? std::max(max_time, r.data_max_time()) : max_time;
      if (rows + r.total_rows() > policy.max_rows) break;
      if (lo != INT64_MAX && hi - lo > policy.max_span_ns) break;
      rows += r.total_rows();
      min_time = lo;
      max_time = hi;
      ++end;
    }
    if (end - begin >= min_inputs) {
      runs.emplace_back(begin, end);
      begin = end;
    } else {
      ++begin;  // too short a run from here: try from the next segment
    }
  }
  return runs;
}

}  // namespace warpscope::embedded
