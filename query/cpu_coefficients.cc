#include "query/cpu_coefficients.h"

#include <regex>

namespace warpscope::query {
namespace {

// Cloud Carbon Footprint's maximum watts per vCPU (its coefficients, from
// SPECpower; the same figures Kepler ships for its estimates).
constexpr double kSandyBridge = 8.58;
constexpr double kIvyBridge = 8.25;
constexpr double kHaswell = 6.01;
constexpr double kBroadwell = 3.69;
constexpr double kSkyLake = 4.19;
constexpr double kCascadeLake = 3.97;
constexpr double kCoffeeLake = 5.42;
constexpr double kEpyc1 = 2.55;
constexpr double kEpyc2 = 1.69;
constexpr double kGraviton = 1.69;  // Graviton and Graviton2 alike

}  // namespace

std::optional<CpuFamily> CpuFamilyOf(const std::string& model) {
  std::smatch m;
  // Xeon E5/E7 (and E3) generations by their "vN" suffix.
  static const std::regex xeon_e(R"(Xeon\(R\) CPU +E[357]-\d{4}[A-Z]*( v(\d))?)");
  if (std::regex_search(model, m, xeon_e)) {
    const std::string v = m[2].str();
    if (v.empty()) return CpuFamily{"Sandy Bridge", kSandyBridge};
    if (v == "2") return CpuFamily{"Ivy Bridge", kIvyBridge};
    if (v == "3") return CpuFamily{"Haswell", kHaswell};
    if (v == "4") return CpuFamily{"Broadwell", kBroadwell};
    if (v == "5" || v == "6") return CpuFamily{"Sky Lake", kSkyLake};  // E3 v5/v6
    return std::nullopt;
  }
  // Xeon Scalable: Platinum/Gold/Silver/Bronze NXYY, X the generation.
  static const std::regex scalable(R"(Xeon\(R\) (Platinum|Gold|Silver|Bronze) (\d)(\d)\d\d)");
  if (std::regex_search(model, m, scalable)) {
    if (m[3].str() == "1") return CpuFamily{"Sky Lake", kSkyLake};
    if (m[3].str() == "2") return CpuFamily{"Cascade Lake", kCascadeLake};
    return std::nullopt;
  }
  // Xeon E-2100/E-2200 and desktop Core 8th/9th generation: Coffee Lake.
  static const std::regex coffee(R"(Xeon\(R\) E-2[12]\d\d|Core\(TM\) i[3579]-[89]\d\d\d)");
  if (std::regex_search(model, coffee)) return CpuFamily{"Coffee Lake", kCoffeeLake};
  // EPYC 7xxN (AWS names some 7Rxx): N the generation.
  static const std::regex epyc(R"(EPYC (7[0-9A-Z]{2})(\d))");
  if (std::regex_search(model, m, epyc)) {
    if (m[2].str() == "1") return CpuFamily{"EPYC 1st Gen", kEpyc1};
    if (m[2].str() == "2") return CpuFamily{"EPYC 2nd Gen", kEpyc2};
    return std::nullopt;
  }
  // Arm, by the part number /proc/cpuinfo gives: Cortex-A72 (Graviton),
  // Neoverse N1 (Graviton2).
  if (model == "arm:0xd08") return CpuFamily{"Graviton", kGraviton};
  if (model == "arm:0xd0c") return CpuFamily{"Graviton2", kGraviton};
  return std::nullopt;
}

}  // namespace warpscope::query
