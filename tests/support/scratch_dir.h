// A fresh directory under the test's temp dir, removed with everything in it
// when the ScratchDir goes. For tests only (gtest); single-threaded.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace warpscope::testing {

class ScratchDir {
 public:
  explicit ScratchDir(std::string_view prefix = "warpscope_test") {
    std::string tmpl = ::testing::TempDir() + std::string(prefix) + ".XXXXXX";
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr) << tmpl;
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // `name` inside the directory.
  std::string Path(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace warpscope::testing
