#include "query/carbon_regions.h"

#include <utility>

namespace warpscope::query {
namespace {

struct Builtin {
  const char* provider;
  double grams_per_kwh;
};

// Cloud Carbon Footprint's emission factors (metric tons CO₂e per kWh in
// its methodology's appendix; here grams per kWh), location-based.
const std::map<std::string, Builtin>& Regions() {
  static const auto* regions = new std::map<std::string, Builtin>{
      {"af-south-1", {"aws", 900.6}},
      {"ap-east-1", {"aws", 710}},
      {"ap-northeast-1", {"aws", 465.8}},
      {"ap-northeast-2", {"aws", 415.6}},
      {"ap-northeast-3", {"aws", 465.8}},
      {"ap-south-1", {"aws", 708.2}},
      {"ap-southeast-1", {"aws", 408}},
      {"ap-southeast-2", {"aws", 760}},
      {"ca-central-1", {"aws", 120}},
      {"cn-north-1", {"aws", 537.4}},
      {"cn-northwest-1", {"aws", 537.4}},
      {"eu-central-1", {"aws", 311}},
      {"eu-north-1", {"aws", 8.8}},
      {"eu-south-1", {"aws", 213.4}},
      {"eu-west-1", {"aws", 278.6}},
      {"eu-west-2", {"aws", 225}},
      {"eu-west-3", {"aws", 51.1}},
      {"me-south-1", {"aws", 505.9}},
      {"sa-east-1", {"aws", 61.7}},
      {"us-east-1", {"aws", 379.069}},
      {"us-east-2", {"aws", 410.608}},
      {"us-gov-east-1", {"aws", 379.069}},
      {"us-gov-west-1", {"aws", 322.167}},
      {"us-west-1", {"aws", 322.167}},
      {"us-west-2", {"aws", 322.167}},
      {"asia-east1", {"gcp", 442.8}},
      {"asia-east2", {"gcp", 453}},
      {"asia-northeast1", {"gcp", 487.52}},
      {"asia-northeast2", {"gcp", 487.52}},
      {"asia-northeast3", {"gcp", 315.33}},
      {"asia-south1", {"gcp", 634.48}},
      {"asia-south2", {"gcp", 657}},
      {"asia-southeast1", {"gcp", 473.28}},
      {"asia-southeast2", {"gcp", 647}},
      {"australia-southeast1", {"gcp", 647.03}},
      {"australia-southeast2", {"gcp", 691}},
      {"europe-central2", {"gcp", 622}},
      {"europe-north1", {"gcp", 7.98}},
      {"europe-west1", {"gcp", 44.52}},
      {"europe-west2", {"gcp", 94.71}},
      {"europe-west3", {"gcp", 108}},
      {"europe-west4", {"gcp", 164}},
      {"europe-west6", {"gcp", 87}},
      {"northamerica-northeast1", {"gcp", 27}},
      {"southamerica-east1", {"gcp", 12.36}},
      {"us-central1", {"gcp", 31.78}},
      {"us-east1", {"gcp", 350.4}},
      {"us-east4", {"gcp", 151.62}},
      {"us-west1", {"gcp", 7.8}},
      {"us-west2", {"gcp", 116.38}},
      {"us-west3", {"gcp", 383.76}},
      {"us-west4", {"gcp", 368.55}},
      {"australiacentral", {"azure", 790}},
      {"australiacentral2", {"azure", 790}},
      {"australiaeast", {"azure", 790}},
      {"australiasoutheast", {"azure", 960}},
      {"brazilsouth", {"azure", 61.7}},
      {"brazilsoutheast", {"azure", 61.7}},
      {"canadacentral", {"azure", 120}},
      {"canadaeast", {"azure", 120}},
      {"centralindia", {"azure", 708.2}},
      {"centralus", {"azure", 426.254}},
      {"eastasia", {"azure", 710}},
      {"eastus", {"azure", 379.069}},
      {"eastus2", {"azure", 379.069}},
      {"eastus3", {"azure", 379.069}},
      {"francecentral", {"azure", 51.28}},
      {"francesouth", {"azure", 51.28}},
      {"germanynorth", {"azure", 338.66}},
      {"germanywestcentral", {"azure", 338.66}},
      {"japaneast", {"azure", 465.8}},
      {"japanwest", {"azure", 465.8}},
      {"koreacentral", {"azure", 415.6}},
      {"koreasouth", {"azure", 415.6}},
      {"northcentralus", {"azure", 410.608}},
      {"northeurope", {"azure", 278.6}},
      {"norwayeast", {"azure", 7.62}},
      {"norwaywest", {"azure", 7.62}},
      {"southafricanorth", {"azure", 900.6}},
      {"southafricawest", {"azure", 900.6}},
      {"southcentralus", {"azure", 373.231}},
      {"southeastasia", {"azure", 408}},
      {"southindia", {"azure", 708.2}},
      {"swedencentral", {"azure", 5.67}},
      {"switzerlandnorth", {"azure", 5.67}},
      {"switzerlandwest", {"azure", 5.67}},
      {"uaecentral", {"azure", 404.1}},
      {"uaenorth", {"azure", 404.1}},
      {"uksouth", {"azure", 225}},
      {"ukwest", {"azure", 228}},
      {"westcentralus", {"azure", 322.167}},
      {"westeurope", {"azure", 328.4}},
      {"westindia", {"azure", 708.2}},
      {"westus", {"azure", 322.167}},
      {"westus2", {"azure", 322.167}},
      {"westus3", {"azure", 322.167}},
  };
  return *regions;
}

// Cloud Carbon Footprint's PUE per provider.
std::optional<double> ProviderPue(const std::string& provider) {
  if (provider == "aws") return 1.135;
  if (provider == "gcp") return 1.1;
  if (provider == "azure") return 1.185;
  return std::nullopt;
}

}  // namespace

std::optional<RegionFactors> BuiltinRegion(const std::string& region) {
  auto it = Regions().find(region);
  if (it == Regions().end()) return std::nullopt;
  return RegionFactors{it->second.provider, it->second.grams_per_kwh, ProviderPue(it->second.provider)};
}

std::optional<RegionFactors> RegionTable::Find(const std::string& region) const {
  std::optional<RegionFactors> found = BuiltinRegion(region);
  if (auto it = overrides_.find(region); it != overrides_.end()) {
    if (found) {
      found->carbon_intensity = it->second;
    } else {
      found = RegionFactors{"", it->second, std::nullopt};
    }
  }
  return found;
}

}  // namespace warpscope::query
