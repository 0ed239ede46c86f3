// Conformance: cubins by content hash (storage/cubin_store.h): stored once,
// read back byte for byte after a reopen, bytes checked against their hash,
// the bounds, retention by last use, and the gpu_pc instruction frames that
// point at them keeping their mapping.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "model/cubin_hash.h"
#include "storage/conformance/store_conformance.h"

namespace warpscope::storage::conformance {
namespace {

using testing::BatchBuilder;
using testing::kSec;
using testing::kT0;

constexpr int64_t kDay = 86400 * kSec;

// `size` bytes (at least an ELF header's) that differ per `seed`, NULs and
// high bytes included, after the ELF magic every cubin starts with.
std::string CubinBytes(size_t size, uint32_t seed) {
  std::string bytes(std::max(size, kCubinMinBytes), '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * i + i / 256 + seed * 131) % 251);
  bytes.replace(0, 4, "\x7f" "ELF");
  return bytes;
}

CubinPutOutcome MustPut(ProfileStore& store, const std::string& bytes) {
  StatusOr<CubinPutResult> r = store.PutCubin(CubinHash(bytes), bytes);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return CubinPutOutcome::kTooLarge;
  EXPECT_EQ(r->bytes, bytes.size());
  return r->outcome;
}

bool Held(ProfileStore& store, const std::string& bytes) {
  StatusOr<std::optional<CubinInfo>> found = store.FindCubin(CubinHash(bytes));
  EXPECT_TRUE(found.ok()) << found.status().ToString();
  if (!found.ok() || !found->has_value()) return false;
  EXPECT_EQ((*found)->bytes, bytes.size());
  return true;
}

TEST_P(StoreConformanceTest, ACubinPutTwiceIsStoredOnceAndReadsBackAfterAReopen) {
  const std::string bytes = CubinBytes(300'000, 1);
  const std::string hash = CubinHash(bytes);
  EXPECT_FALSE(Held(store(), bytes));
  StatusOr<std::optional<std::string>> none = store().ReadCubin(hash);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());

  EXPECT_EQ(MustPut(store(), bytes), CubinPutOutcome::kStored);
  EXPECT_EQ(MustPut(store(), bytes), CubinPutOutcome::kAlreadyStored);
  EXPECT_TRUE(Held(store(), bytes));
  EXPECT_EQ(store().stats().cubins.stored, 1u);
  EXPECT_EQ(store().stats().cubins.already_stored, 1u);

  Reopen();
  EXPECT_TRUE(Held(store(), bytes));
  StatusOr<std::optional<std::string>> read = store().ReadCubin(hash);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE(read->has_value());
  EXPECT_TRUE(**read == bytes) << "byte for byte";
  EXPECT_EQ(MustPut(store(), bytes), CubinPutOutcome::kAlreadyStored) << "still there after the reopen";
}

TEST_P(StoreConformanceTest, ACubinIsRefusedUnlessItsBytesHaveItsHash) {
  const std::string bytes = CubinBytes(5000, 2);
  const std::string other = CubinBytes(5000, 3);
  StatusOr<CubinPutResult> r = store().PutCubin(CubinHash(bytes), other);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(CubinHash(other)), std::string::npos) << r.status().message();
  EXPECT_FALSE(Held(store(), bytes));
  EXPECT_FALSE(Held(store(), other));

  for (const std::string& bad : {std::string("not-a-hash"), std::string("ABCDEF0123456789ABCDEF0123456789"),
                                 std::string("../cubins/") + CubinHash(bytes).substr(10)}) {
    EXPECT_EQ(store().PutCubin(bad, bytes).status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(store().FindCubin(bad).status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(store().ReadCubin(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(store().PutCubin(CubinHash(""), "").status().code(), StatusCode::kInvalidArgument);
  // Uses of cubins the store does not hold (or of no cubin) are ignored.
  EXPECT_TRUE(store().NoteCubinUses({CubinHash(bytes), "not-a-hash"}).ok());
  EXPECT_FALSE(Held(store(), bytes));
  EXPECT_EQ(store().stats().cubins.stored, 0u);
}

TEST_P(StoreConformanceTest, CubinsPastTheBoundsAreRefusedAndNothingOfThemStored) {
  if (!GetParam().open_with_cubin_limits) GTEST_SKIP() << "backend takes no cubin limits here";
  OpenWithCubinLimits(CubinLimits{.max_cubin_bytes = 10'000, .max_store_bytes = 25'000});
  const std::string large = CubinBytes(10'001, 4);
  EXPECT_EQ(MustPut(store(), large), CubinPutOutcome::kTooLarge);
  EXPECT_FALSE(Held(store(), large));
  const std::string a = CubinBytes(10'000, 5), b = CubinBytes(10'000, 6), c = CubinBytes(10'000, 7);
  EXPECT_EQ(MustPut(store(), a), CubinPutOutcome::kStored);
  EXPECT_EQ(MustPut(store(), b), CubinPutOutcome::kStored);
  EXPECT_EQ(MustPut(store(), c), CubinPutOutcome::kStoreFull) << "30,000 bytes would pass 25,000";
  EXPECT_FALSE(Held(store(), c));
  EXPECT_EQ(MustPut(store(), a), CubinPutOutcome::kAlreadyStored) << "a cubin held is no new byte";
  const CubinStats stats = store().stats().cubins;
  EXPECT_EQ(stats.stored, 2u);
  EXPECT_EQ(stats.too_large, 1u);
  EXPECT_EQ(stats.refused_full, 1u);
}

// What is not a cubin costs nothing and is counted: shorter than an ELF
// header, or without the ELF magic.
TEST_P(StoreConformanceTest, BodiesThatAreNotElfFilesAreRefusedAndCounted) {
  std::string no_magic = CubinBytes(5000, 11);
  no_magic[1] = 'X';
  const std::string tiny = CubinBytes(5000, 12).substr(0, kCubinMinBytes - 1);
  for (const std::string& bad : {no_magic, tiny, std::string("\x7f" "ELF"), std::string(8, 'a')}) {
    StatusOr<CubinPutResult> r = store().PutCubin(CubinHash(bad), bad);
    ASSERT_FALSE(r.ok()) << bad.size();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("ELF"), std::string::npos) << r.status().message();
    EXPECT_FALSE(Held(store(), bad));
  }
  EXPECT_EQ(store().PutCubin("not-a-hash", no_magic).status().code(), StatusCode::kInvalidArgument);
  const CubinStats stats = store().stats().cubins;
  EXPECT_EQ(stats.stored, 0u);
  EXPECT_EQ(stats.refused_invalid, 5u);
}

// A small cubin still costs a filesystem block and an entry, and the count
// of cubins is bounded whatever their size.
TEST_P(StoreConformanceTest, SmallCubinsAreChargedABlockAndTheirCountIsCapped) {
  if (!GetParam().open_with_cubin_limits) GTEST_SKIP() << "backend takes no cubin limits here";
  OpenWithCubinLimits(CubinLimits{.max_cubin_bytes = 10'000, .max_store_bytes = 3 * CubinChargedBytes(100)});
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(MustPut(store(), CubinBytes(100, 20 + i)), CubinPutOutcome::kStored);
  EXPECT_EQ(MustPut(store(), CubinBytes(100, 23)), CubinPutOutcome::kStoreFull)
      << "400 bytes, but four blocks and entries";
  EXPECT_EQ(store().stats().cubins.refused_full, 1u);

  // The same store with room for bytes, but for four cubins only: it holds three.
  OpenWithCubinLimits(CubinLimits{.max_cubin_bytes = 10'000, .max_store_bytes = 1 << 30, .max_cubins = 4});
  const CubinStats before = store().stats().cubins;
  EXPECT_EQ(MustPut(store(), CubinBytes(100, 30)), CubinPutOutcome::kStored);
  EXPECT_EQ(MustPut(store(), CubinBytes(100, 31)), CubinPutOutcome::kStoreFull) << "a fifth cubin past max_cubins";
  EXPECT_EQ(MustPut(store(), CubinBytes(100, 30)), CubinPutOutcome::kAlreadyStored);
  EXPECT_EQ(store().stats().cubins.refused_full - before.refused_full, 1u);
}

// Retention counts from a cubin's last use, in whole days on ClickHouse:
// the spacing below keeps every check a day and more from its cutoff.
TEST_P(StoreConformanceTest, CubinsUnusedForLongerThanRetentionAreGone) {
  if (!GetParam().open_at) GTEST_SKIP() << "backend cannot pin its clock";
  const int64_t retention = 2 * kDay;
  OpenAt(kT0, retention);
  const std::string used = CubinBytes(2000, 8), unused = CubinBytes(2000, 9);
  EXPECT_EQ(MustPut(store(), used), CubinPutOutcome::kStored);
  EXPECT_EQ(MustPut(store(), unused), CubinPutOutcome::kStored);

  OpenAt(kT0 + 3 * kDay / 2, retention);
  EXPECT_TRUE(Held(store(), used));
  EXPECT_TRUE(Held(store(), unused));
  // A batch naming `used` arrives.
  ASSERT_TRUE(store().NoteCubinUses({CubinHash(used)}).ok());

  OpenAt(kT0 + 7 * kDay / 2, retention);
  EXPECT_TRUE(Held(store(), used)) << "used 2 days ago: inside retention";
  EXPECT_FALSE(Held(store(), unused)) << "used 3.5 days ago: past retention";
  StatusOr<std::optional<std::string>> read = store().ReadCubin(CubinHash(unused));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_FALSE(read->has_value());
  read = store().ReadCubin(CubinHash(used));
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_TRUE(**read == used);

  OpenAt(kT0 + 11 * kDay / 2, retention);
  EXPECT_FALSE(Held(store(), used)) << "its last use is 4 days old now";
}

// The gpu_pc profile's instruction frames point at their cubin: a mapping
// whose build id is its hash, the PC offset as the address.
TEST_P(StoreConformanceTest, InstructionFramesKeepTheirCubinMapping) {
  const std::string hash = CubinHash(CubinBytes(100, 10));
  BatchBuilder b("gpu-agent", 1);
  const uint32_t type = b.Type("gpu_pc", "cycles", 0);
  const uint32_t set = b.LabelSet({{"node", "gpu"}});
  const uint32_t cubin = b.Mapping("cubin", hash);
  const uint32_t kernel = b.Location(0, 0, v1::FRAME_KIND_CUDA_KERNEL, {{b.Function("scale", "_Z5scalev", ""), 0}});
  // Two kernels of one cubin at one offset: two locations.
  const uint32_t other = b.Location(0, 0, v1::FRAME_KIND_CUDA_KERNEL, {{b.Function("add", "_Z3addv", ""), 0}});
  const uint32_t inst =
      b.Location(cubin, 0x40, v1::FRAME_KIND_GPU_INSTRUCTION, {{b.Function("0x0040", "_Z5scalev+0x0040", ""), 0}});
  const uint32_t other_inst =
      b.Location(cubin, 0x40, v1::FRAME_KIND_GPU_INSTRUCTION, {{b.Function("0x0040", "_Z3addv+0x0040", ""), 0}});
  const uint32_t stall = b.Location(0, 0, v1::FRAME_KIND_GPU_STALL, {{b.Function("waiting", "long_scoreboard", ""), 0}});
  b.Sample(kT0, type, set, b.Stack({stall, inst, kernel}), 1024);
  b.Sample(kT0, type, set, b.Stack({stall, other_inst, other}), 2048);
  MustIngest(b.batch());
  Reopen();
  const MergedProfile p = Profile("", kT0, kT0 + kSec, "gpu_pc");
  ASSERT_EQ(p.stacks.size(), 2u);
  std::map<std::string, int64_t> by_instruction;
  for (const StackValue& s : p.stacks) {
    ASSERT_EQ(s.frames.size(), 3u);
    const ResolvedFrame& f = p.frame(s.frames[1]);
    EXPECT_EQ(f.kind, v1::FRAME_KIND_GPU_INSTRUCTION);
    EXPECT_EQ(f.build_id, hash);
    EXPECT_EQ(f.mapping_file, "cubin");
    EXPECT_EQ(f.address, 0x40u);
    by_instruction[f.system_name] += s.value;
  }
  EXPECT_EQ(by_instruction, (std::map<std::string, int64_t>{{"_Z5scalev+0x0040", 1024}, {"_Z3addv+0x0040", 2048}}));
}

}  // namespace
}  // namespace warpscope::storage::conformance
