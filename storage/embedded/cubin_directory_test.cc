// The embedded store's cubins on disk (cubin_directory.h): what a crash
// leaves, what retention deletes, and racing PUTs. The behaviour both stores
// share is in storage/conformance/cubin_conformance.cc.
#include <sys/stat.h>

#include <fstream>
#include <thread>
#include <vector>

#include "model/cubin_hash.h"
#include "storage/embedded/embedded_store_test_util.h"

namespace warpscope::embedded {
namespace {

using testing::kT0;
using testing::ManualOptions;
using testing::MustOpen;
using testing::ScratchDir;

constexpr int64_t kDay = int64_t{86400} * 1'000'000'000;

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

TEST(CubinDirectoryTest, AnAcknowledgedCubinIsOnDiskAndAHalfWrittenOneIsGoneAtOpen) {
  ScratchDir dir;
  const std::string bytes = std::string("\x7f" "ELF") + std::string(4092, 'c');
  const std::string hash = CubinHash(bytes);
  {
    std::unique_ptr<EmbeddedProfileStore> store = MustOpen(ManualOptions(dir.data()));
    ASSERT_NE(store, nullptr);
    StatusOr<storage::CubinPutResult> put = store->PutCubin(hash, bytes);
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    EXPECT_EQ(put->outcome, storage::CubinPutOutcome::kStored);
    // Destroyed without a flush: as a kill -9 leaves it.
  }
  EXPECT_TRUE(Exists(dir.data() + "/cubins/" + hash));
  // A write a crash cut short before its rename.
  const std::string leftover = dir.data() + "/cubins/" + CubinHash("other") + ".tmp.4242";
  std::ofstream(leftover) << "half";
  std::unique_ptr<EmbeddedProfileStore> store = MustOpen(ManualOptions(dir.data()));
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(Exists(leftover));
  EXPECT_EQ(store->state().cubins.cubins, 1u);
  EXPECT_EQ(store->state().cubins.bytes, bytes.size());
  StatusOr<std::optional<std::string>> read = store->ReadCubin(hash);
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_EQ(**read, bytes);
}

TEST(CubinDirectoryTest, RetentionDeletesTheFilesOfCubinsUnusedForLongerAndCountsThem) {
  ScratchDir dir;
  int64_t now = kT0;
  EmbeddedStoreOptions options = ManualOptions(dir.data());
  options.retention_ns = 2 * kDay;
  options.now_ns = [&now] { return now; };
  std::unique_ptr<EmbeddedProfileStore> store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  const std::string used = std::string("\x7f" "ELF") + std::string(996, 'u');
  const std::string unused = std::string("\x7f" "ELF") + std::string(996, 'n');
  ASSERT_TRUE(store->PutCubin(CubinHash(used), used).ok());
  ASSERT_TRUE(store->PutCubin(CubinHash(unused), unused).ok());
  now += kDay;
  ASSERT_TRUE(store->NoteCubinUses({CubinHash(used)}).ok());
  now += 3 * kDay / 2;
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_TRUE(Exists(dir.data() + "/cubins/" + CubinHash(used)));
  EXPECT_FALSE(Exists(dir.data() + "/cubins/" + CubinHash(unused)));
  EXPECT_EQ(store->stats().cubins.expired, 1u);
  EXPECT_EQ(store->state().cubins.cubins, 1u);
  EXPECT_EQ(store->state().cubins.bytes, used.size());

  // The last use is the file's mtime: it survives a restart.
  store.reset();
  store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  now += kDay / 4;
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_TRUE(Exists(dir.data() + "/cubins/" + CubinHash(used))) << "used 1.75 days ago";
  now += kDay;
  ASSERT_TRUE(store->ApplyRetentionNow().ok());
  EXPECT_FALSE(Exists(dir.data() + "/cubins/" + CubinHash(used)));
  // Room again for a new one.
  EXPECT_EQ(store->PutCubin(CubinHash(unused), unused)->outcome, storage::CubinPutOutcome::kStored);
}

TEST(CubinDirectoryTest, RacingPutsOfOneCubinStoreItOnce) {
  ScratchDir dir;
  std::unique_ptr<EmbeddedProfileStore> store = MustOpen(ManualOptions(dir.data()));
  ASSERT_NE(store, nullptr);
  const std::string bytes = std::string("\x7f" "ELF") + std::string(199'996, 'r');
  std::vector<std::thread> threads;
  std::atomic<int> stored{0}, already{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      StatusOr<storage::CubinPutResult> r = store->PutCubin(CubinHash(bytes), bytes);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      (r->outcome == storage::CubinPutOutcome::kStored ? stored : already)++;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(stored.load(), 1);
  EXPECT_EQ(already.load(), 3);
  EXPECT_EQ(store->state().cubins.bytes, bytes.size());
}

}  // namespace
}  // namespace warpscope::embedded
