// A powercap tree (the kernel's /sys/class/powercap) written into a test's
// directory, for the RAPL reader's tests and the agent's --powercap-root:
// zones are directories holding `name`, `energy_uj` and
// `max_energy_range_uj`, flat under the root as the kernel links them there
// ("intel-rapl:0", "intel-rapl:0:0"). Files are replaced by rename, so a
// reader running meanwhile never sees half a number. Header-only; for tests.
#pragma once

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace warpscope::testing {

class PowercapFixture {
 public:
  explicit PowercapFixture(std::string root) : root_(std::move(root)) {
    std::filesystem::create_directories(root_ + "/intel-rapl");  // the control type, not a zone
  }

  const std::string& root() const { return root_; }

  void AddZone(const std::string& dir, const std::string& name, uint64_t energy_uj,
               uint64_t max_energy_range_uj = kIntelMaxRangeUj) {
    std::filesystem::create_directories(root_ + "/" + dir);
    Write(dir + "/name", name + "\n");
    Write(dir + "/max_energy_range_uj", std::to_string(max_energy_range_uj) + "\n");
    SetEnergy(dir, energy_uj);
  }
  void SetEnergy(const std::string& dir, uint64_t energy_uj) {
    Write(dir + "/energy_uj", std::to_string(energy_uj) + "\n");
  }
  void SetText(const std::string& dir, const std::string& file, const std::string& text) {
    Write(dir + "/" + file, text);
  }
  // energy_uj that cannot be read: mode 0 for a user; root reads any mode,
  // so for root it is a directory (read fails with EISDIR).
  void MakeUnreadable(const std::string& dir) {
    const std::string path = root_ + "/" + dir + "/energy_uj";
    std::filesystem::remove(path);
    if (geteuid() == 0) {
      std::filesystem::create_directory(path);
    } else {
      std::ofstream(path) << "1\n";
      ASSERT_EQ(chmod(path.c_str(), 0), 0);
    }
  }
  void RemoveZone(const std::string& dir) { std::filesystem::remove_all(root_ + "/" + dir); }

  // A package's range on Intel: 2^32 energy units of 61.035 µJ.
  static constexpr uint64_t kIntelMaxRangeUj = 262143328850;

 private:
  void Write(const std::string& rel, const std::string& text) {
    const std::string path = root_ + "/" + rel;
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp);
      out << text;
    }
    ASSERT_EQ(::rename(tmp.c_str(), path.c_str()), 0) << path;
  }

  std::string root_;
};

}  // namespace warpscope::testing
