// Loading NVML: the reasons the agent shows when GPU metrics are off, and
// clean init/shutdown. Through the real dlopen path of the fake library.
#include "agent/collectors/gpu_metrics/nvml/nvml_library.h"

#include <dlfcn.h>

#include "tests/fakes/fake_nvml/fake_nvml_control.h"
#include "agent/collectors/gpu_metrics/nvml/nvml_reader.h"
#include "gtest/gtest.h"

namespace warpscope {
namespace {

TEST(NvmlLibraryTest, NoLibraryAtPathIsAReasonNotACrash) {
  GpuMetricsOptions options;
  options.library_path = "/nonexistent/libnvidia-ml.so.1";
  auto collector = NvmlReader::Open(options);
  ASSERT_FALSE(collector.ok());
  EXPECT_EQ(collector.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(collector.status().message().find("GPU metrics off: /nonexistent/libnvidia-ml.so.1 cannot be loaded"),
            std::string::npos)
      << collector.status().message();
}

TEST(NvmlLibraryTest, MissingSonameSaysNoDriver) {
  auto library = NvmlLibrary::Open("libws-no-such-nvml.so.1");
  ASSERT_FALSE(library.ok());
  EXPECT_NE(library.status().message().find("GPU metrics off: libws-no-such-nvml.so.1 not found (no NVIDIA driver?)"),
            std::string::npos)
      << library.status().message();
}

TEST(NvmlLibraryTest, ALibraryThatIsNotNvml) {
  auto library = NvmlLibrary::Open("libm.so.6");
  ASSERT_FALSE(library.ok());
  EXPECT_NE(library.status().message().find("has no nvmlInit_v2"), std::string::npos) << library.status().message();
}

TEST(NvmlLibraryTest, InitErrorNamesTheCodeAndTheLikelyCause) {
  FakeNvmlScript script("init_error DRIVER_NOT_LOADED\n");
  GpuMetricsOptions options;
  options.library_path = kFakeNvmlPath;
  auto collector = NvmlReader::Open(options);
  ASSERT_FALSE(collector.ok());
  EXPECT_EQ(collector.status().message(),
            "GPU metrics off: nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (the NVIDIA kernel driver is not loaded)");
}

TEST(NvmlLibraryTest, NoGpusIsAReason) {
  FakeNvmlScript script("devices 0\n");
  GpuMetricsOptions options;
  options.library_path = kFakeNvmlPath;
  auto collector = NvmlReader::Open(options);
  ASSERT_FALSE(collector.ok());
  EXPECT_EQ(collector.status().message(), "GPU metrics off: NVML reports no GPUs");
}

TEST(NvmlLibraryTest, AGpuThatCannotBeOpenedIsSkipped) {
  FakeNvmlScript script("devices 2\nerror 0 nvmlDeviceGetHandleByIndex_v2 NO_PERMISSION\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  EXPECT_EQ(collector->DeviceCount(), 1);
  const auto readings = collector->Collect(1);
  EXPECT_TRUE(Find(readings, "gpu_utilization", "0").empty());
  EXPECT_EQ(Find(readings, "gpu_utilization", "1").size(), 1u);
}

TEST(NvmlLibraryTest, ShutdownFreesWhatTheCollectorAllocated) {
  FakeNvmlScript script("devices 2\ndevice 0 gpm 1\ndevice 1 gpm 1\n");
  FakeNvmlHooks hooks(kFakeNvmlPath);
  const auto inits = hooks.CallCount("nvmlInit_v2");
  const auto shutdowns = hooks.CallCount("nvmlShutdown");
  {
    auto collector = OpenCollector(kFakeNvmlPath);
    ASSERT_NE(collector, nullptr);
    collector->Collect(1);
    EXPECT_EQ(hooks.LiveObjects(), 5);  // one XID event set, two GPM samples per GPU
  }
  EXPECT_EQ(hooks.LiveObjects(), 0);
  EXPECT_EQ(hooks.CallCount("nvmlInit_v2") - inits, 1u);
  EXPECT_EQ(hooks.CallCount("nvmlShutdown") - shutdowns, 1u);
}

TEST(NvmlLibraryTest, TheLibraryIsUnloadedWithTheCollector) {
  FakeNvmlScript script("devices 1\n");
  auto collector = OpenCollector(kFakeNvmlPath);
  ASSERT_NE(collector, nullptr);
  void* loaded = dlopen(kFakeNvmlPath, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(loaded, nullptr);
  dlclose(loaded);
  collector.reset();
  EXPECT_EQ(dlopen(kFakeNvmlPath, RTLD_NOW | RTLD_NOLOAD), nullptr);
}

}  // namespace
}  // namespace warpscope
