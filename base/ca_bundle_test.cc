#include "base/ca_bundle.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace warpscope {
namespace {

TEST(CaBundleTest, FirstReadableRegularFileWins) {
  char tmpl[] = "/tmp/ws_ca_bundle_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/rhel.crt") << "x";
  std::ofstream(dir + "/suse.pem") << "x";
  std::filesystem::create_directory(dir + "/a-directory.crt");
  // Debian's path missing on a RHEL host: RHEL's bundle, not nothing.
  EXPECT_EQ(FirstReadableFile({"", dir + "/debian.crt", dir + "/a-directory.crt", dir + "/rhel.crt", dir + "/suse.pem"}),
            dir + "/rhel.crt");
  EXPECT_EQ(FirstReadableFile({dir + "/none"}), "");
  std::filesystem::remove_all(dir);
}

TEST(CaBundleTest, ThisHostHasOne) {
  // Debian 12 (the build and CI machines): ca-certificates comes with libcurl.
  EXPECT_FALSE(SystemCaBundle().empty());
}

}  // namespace
}  // namespace warpscope
