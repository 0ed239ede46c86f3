// ElfFile::Open on paths a local user controls: the agent opens binaries of
// any process, and a FIFO at such a path must not make it wait.
#include "agent/elf/elf_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>

namespace warpscope {
namespace {

TEST(ElfFileTest, AFifoIsRefusedAtOnceNotWaitedOn) {
  char tmpl[] = "/tmp/ws-elf-fifo-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string fifo = std::string(tmpl) + "/libfoo.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto opened = std::async(std::launch::async, [&] { return ElfFile::Open(fifo).status(); });
  const bool done = opened.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  if (!done) {
    // Release the blocked open (a writer arrives), so the test ends.
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd >= 0) ::close(fd);
  }
  ASSERT_TRUE(done) << "ElfFile::Open waited on a FIFO";
  const Status s = opened.get();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s.ToString();
  std::filesystem::remove_all(tmpl);
}

// A device is not opened at all (opening some acts: a watchdog starts).
TEST(ElfFileTest, ADeviceIsRefusedUnopened) {
  const Status s = ElfFile::Open("/dev/null").status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s.ToString();
}

TEST(ElfFileTest, ARegularElfFileStillOpens) {
  auto file = ElfFile::Open("/proc/self/exe");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
}

}  // namespace
}  // namespace warpscope
