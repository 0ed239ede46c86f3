// GotPatcher against the dynamic loader: a client library loaded and unloaded
// over and over while the patcher runs without pause. Each load of
// libws_got_stress_client.so binds its cuptiSubscribe slot first and then
// thousands of slots beside it; a patcher that made that page read-only
// before the load finished would crash this process in the loader.
#include "cuda/got_patch.h"

#include <cupti.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace warpscope::cuda {
namespace {

CUptiResult CUPTIAPI Replacement(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) { return CUPTI_SUCCESS; }

using SlotFn = void* (*)();
using SumFn = int (*)(int);

void* FakeCuptiSubscribe() {
  void* cupti = dlopen(WS_FAKE_CUPTI_PATH, RTLD_NOW | RTLD_GLOBAL);
  return cupti != nullptr ? dlsym(cupti, "cuptiSubscribe") : nullptr;
}

TEST(GotPatcher, PatchesALoadedClientsSlot) {
  void* original = FakeCuptiSubscribe();
  ASSERT_NE(original, nullptr) << dlerror();
  GotReplacement replacement{"cuptiSubscribe", original, reinterpret_cast<void*>(&Replacement)};
  GotPatcher patcher(&replacement, 1, nullptr, 0);
  void* client = dlopen(WS_GOT_STRESS_CLIENT_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(client, nullptr) << dlerror();
  auto slot = reinterpret_cast<SlotFn>(dlsym(client, "ws_got_stress_subscribe_slot"));
  auto sum = reinterpret_cast<SumFn>(dlsym(client, "ws_got_stress_sum"));
  ASSERT_TRUE(slot != nullptr && sum != nullptr);
  EXPECT_EQ(slot(), original);
  const GotPatchResult first = patcher.PatchNewObjects();
  EXPECT_GE(first.slots_patched, 1u);
  EXPECT_EQ(first.slots_failed, 0u);
  EXPECT_EQ(slot(), reinterpret_cast<void*>(&Replacement));
  EXPECT_EQ(sum(0), 3000 * 3001 / 2) << "the slots beside it still reach their functions";
  EXPECT_EQ(patcher.PatchNewObjects().slots_patched, 0u) << "nothing new loaded: nothing patched twice";
  dlclose(client);
}

TEST(GotPatcher, NeverProtectsAPageTheLoaderIsStillWriting) {
  void* original = FakeCuptiSubscribe();
  ASSERT_NE(original, nullptr) << dlerror();
  GotReplacement replacement{"cuptiSubscribe", original, reinterpret_cast<void*>(&Replacement)};
  GotPatcher patcher(&replacement, 1, nullptr, 0);
  std::atomic<bool> stop{false};
  int loads = 0, patched_when_loaded = 0, wrong_sums = 0;
  std::thread loader([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < until) {
      void* client = dlopen(WS_GOT_STRESS_CLIENT_PATH, RTLD_NOW | RTLD_LOCAL);
      if (client == nullptr) break;
      auto slot = reinterpret_cast<SlotFn>(dlsym(client, "ws_got_stress_subscribe_slot"));
      auto sum = reinterpret_cast<SumFn>(dlsym(client, "ws_got_stress_sum"));
      if (slot() == reinterpret_cast<void*>(&Replacement)) patched_when_loaded++;
      if (sum(0) != 3000 * 3001 / 2) wrong_sums++;
      loads++;
      dlclose(client);
    }
    stop.store(true);
  });
  size_t patched = 0, failed = 0;
  while (!stop.load()) {
    const GotPatchResult r = patcher.PatchNewObjects();
    patched += r.slots_patched;
    failed += r.slots_failed;
  }
  loader.join();
  EXPECT_GT(loads, 50);
  EXPECT_EQ(wrong_sums, 0);
  EXPECT_GT(patched, 0u) << "loads finished between passes are patched";
  EXPECT_EQ(failed, 0u);
  RecordProperty("loads", loads);
  RecordProperty("patched_when_loaded", patched_when_loaded);
}

}  // namespace
}  // namespace warpscope::cuda
