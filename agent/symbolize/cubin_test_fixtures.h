// What the cubin tests share: reading a fixture of testdata/cubin, and
// finding a section of an ELF image with the test's own reading of the
// section headers (independent of the code under test).
#pragma once

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace warpscope::cubin_test {

inline std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(WS_CUBIN_TESTDATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct SectionPlace {
  size_t offset = 0;
  size_t size = 0;
  bool found = false;
};

inline SectionPlace FindSection(std::string_view elf, std::string_view name) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, elf.data(), sizeof(eh));
  auto header = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, elf.data() + eh.e_shoff + i * sizeof(sh), sizeof(sh));
    return sh;
  };
  const Elf64_Shdr names = header(eh.e_shstrndx);
  for (size_t i = 1; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = header(i);
    if (elf.data() + names.sh_offset + sh.sh_name == name) return {sh.sh_offset, sh.sh_size, true};
  }
  return {};
}

}  // namespace warpscope::cubin_test
