// Grid carbon intensity and data-centre PUE by cloud region, for the energy
// answers' CO₂ (docs/design/energy.md, "CO₂ and cost"): Cloud Carbon
// Footprint's location-based emission factors per region of AWS, Google
// Cloud and Azure, and its PUE per provider. A node names its region with
// the `region` label its agent adds to everything it sends
// (`warpscope-agent run --label region=us-east-1`); the server's
// --region-carbon-intensity adds or overrides regions.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace warpscope::query {

struct RegionFactors {
  std::string provider;     // "aws", "gcp", "azure", or "" for one the server was given
  double carbon_intensity;  // grams CO₂e per kWh
  std::optional<double> pue;  // the provider's PUE, when known
};

// The built-in region, or nullopt. Region names as each provider spells
// them ("us-east-1", "us-central1", "westeurope"); case-sensitive.
std::optional<RegionFactors> BuiltinRegion(const std::string& region);

// The server's table: built-in regions, with `overrides` (region -> grams
// CO₂e per kWh) added or replacing them.
class RegionTable {
 public:
  RegionTable() = default;
  explicit RegionTable(std::map<std::string, double> overrides) : overrides_(std::move(overrides)) {}
  std::optional<RegionFactors> Find(const std::string& region) const;

 private:
  std::map<std::string, double> overrides_;
};

}  // namespace warpscope::query
