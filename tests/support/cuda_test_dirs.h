// Temporary directories for the CUDA socket and injection tests (short paths:
// unix socket paths are limited to 107 bytes), removed when the test program
// ends. Test-only; any thread.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace warpscope::testing {

class CudaTestDirs : public ::testing::Environment {
 public:
  static std::string Make() {
    char dir[] = "/tmp/ws-cuda-test-XXXXXX";
    EXPECT_NE(mkdtemp(dir), nullptr);
    std::lock_guard<std::mutex> lock(mu());
    dirs().push_back(dir);
    return dir;
  }
  void TearDown() override {
    std::lock_guard<std::mutex> lock(mu());
    for (const std::string& d : dirs()) std::filesystem::remove_all(d);
  }

 private:
  static std::vector<std::string>& dirs() {
    static std::vector<std::string> d;
    return d;
  }
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
};

// Registers the cleanup once per test program (an inline variable).
inline const ::testing::Environment* const kCudaTestDirs = ::testing::AddGlobalTestEnvironment(new CudaTestDirs);

}  // namespace warpscope::testing
