#include "tests/fakes/fake_nvml/fake_nvml_script.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace warpscope::fake_nvml {

using namespace nvml;  // NOLINT

namespace {

constexpr const char* kFnNames[] = {
#define WS_FAKE_FN_NAME(ret, name, params) #name,
    WS_NVML_FUNCTION_LIST(WS_FAKE_FN_NAME)
#undef WS_FAKE_FN_NAME
};
constexpr const char* kValueNames[] = {
#define WS_FAKE_VALUE_NAME(name, default_value) #name,
    WS_FAKE_VALUE_LIST(WS_FAKE_VALUE_NAME)
#undef WS_FAKE_VALUE_NAME
};
constexpr double kValueDefaults[] = {
#define WS_FAKE_VALUE_DEFAULT(name, default_value) default_value,
    WS_FAKE_VALUE_LIST(WS_FAKE_VALUE_DEFAULT)
#undef WS_FAKE_VALUE_DEFAULT
};

struct CodeName {
  const char* name;
  nvmlReturn_t code;
};
constexpr CodeName kCodes[] = {
    {"SUCCESS", NVML_SUCCESS},
    {"OK", NVML_SUCCESS},
    {"UNINITIALIZED", NVML_ERROR_UNINITIALIZED},
    {"INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT},
    {"NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED},
    {"NO_PERMISSION", NVML_ERROR_NO_PERMISSION},
    {"NOT_FOUND", NVML_ERROR_NOT_FOUND},
    {"INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE},
    {"DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED},
    {"TIMEOUT", NVML_ERROR_TIMEOUT},
    {"LIBRARY_NOT_FOUND", NVML_ERROR_LIBRARY_NOT_FOUND},
    {"FUNCTION_NOT_FOUND", NVML_ERROR_FUNCTION_NOT_FOUND},
    {"GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST},
    {"RESET_REQUIRED", NVML_ERROR_RESET_REQUIRED},
    {"LIB_RM_VERSION_MISMATCH", NVML_ERROR_LIB_RM_VERSION_MISMATCH},
    {"ARGUMENT_VERSION_MISMATCH", NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
    {"DEPRECATED", NVML_ERROR_DEPRECATED},
    {"GPU_NOT_FOUND", NVML_ERROR_GPU_NOT_FOUND},
    {"UNKNOWN", NVML_ERROR_UNKNOWN},
};

// Splits a line into words; "double quotes" keep spaces; '#' starts a comment.
std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
      ++i;
    } else if (line[i] == '#') {
      break;
    } else if (line[i] == '"') {
      const size_t end = line.find('"', i + 1);
      words.push_back(line.substr(i + 1, (end == std::string::npos ? line.size() : end) - i - 1));
      i = end == std::string::npos ? line.size() : end + 1;
    } else {
      size_t end = i;
      while (end < line.size() && line[end] != ' ' && line[end] != '\t' && line[end] != '\r') ++end;
      words.push_back(line.substr(i, end - i));
      i = end;
    }
  }
  return words;
}

bool ParseNumber(const std::string& word, double* out) {
  if (word.empty()) return false;
  char* end = nullptr;
  if (word.size() > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X')) {
    *out = static_cast<double>(std::strtoull(word.c_str(), &end, 16));
  } else {
    *out = std::strtod(word.c_str(), &end);
  }
  return end != nullptr && *end == '\0';
}

bool ParseCode(const std::string& word, nvmlReturn_t* out) {
  std::string name = word;
  if (name.rfind("NVML_ERROR_", 0) == 0) name = name.substr(11);
  if (name == "NVML_SUCCESS") name = "SUCCESS";
  for (const CodeName& c : kCodes) {
    if (name == c.name) {
      *out = c.code;
      return true;
    }
  }
  double number = 0;
  if (!ParseNumber(word, &number)) return false;
  *out = static_cast<nvmlReturn_t>(static_cast<int>(number));
  return true;
}

int FindName(const char* const* names, int count, const std::string& word) {
  for (int i = 0; i < count; ++i) {
    if (word == names[i]) return i;
  }
  return -1;
}

FakeDevice DefaultDevice(int index) {
  FakeDevice d;
  char text[64];
  d.name = "Fake GPU";
  std::snprintf(text, sizeof(text), "GPU-00000000-0000-0000-0000-%012d", index);
  d.uuid = text;
  std::snprintf(text, sizeof(text), "00000000:%02X:00.0", index + 1);
  d.pci_bus_id = text;
  for (int v = 0; v < kValueCount; ++v) d.values[v] = kValueDefaults[v];
  return d;
}

}  // namespace

const char* FnName(Fn fn) { return kFnNames[static_cast<int>(fn)]; }

FakeScript DefaultScript() {
  FakeScript script;
  script.devices.push_back(DefaultDevice(0));
  return script;
}

bool ParseScript(const std::string& text, FakeScript* script, std::string* error) {
  std::vector<std::vector<std::string>> lines;
  {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) lines.push_back(Words(line));
  }
  FakeScript s;
  int devices = 1;
  // `devices` first, wherever it is, so that the other lines can name any device.
  for (size_t n = 0; n < lines.size(); ++n) {
    const auto& w = lines[n];
    if (w.size() == 2 && w[0] == "devices") {
      double count = 0;
      if (!ParseNumber(w[1], &count) || count < 0 || count > kMaxDevices) {
        *error = "line " + std::to_string(n + 1) + ": devices takes 0 to " + std::to_string(kMaxDevices);
        return false;
      }
      devices = static_cast<int>(count);
    }
  }
  for (int i = 0; i < devices; ++i) s.devices.push_back(DefaultDevice(i));

  for (size_t n = 0; n < lines.size(); ++n) {
    const auto& w = lines[n];
    auto fail = [&](const std::string& why) {
      *error = "line " + std::to_string(n + 1) + ": " + why;
      return false;
    };
    if (w.empty() || w[0] == "devices") continue;
    // Every other verb names a device index, or "*" for all of them.
    std::vector<FakeDevice*> targets;
    int device_index = -1;
    const bool global = w[0] == "init_error" || w[0] == "driver_version" || w[0] == "cuda_driver_version";
    if (!global) {
      if (w.size() < 2) return fail("missing device index");
      if (w[1] == "*" && w[0] != "device" && w[0] != "process" && w[0] != "xid") {
        for (FakeDevice& d : s.devices) targets.push_back(&d);
      } else {
        double index = 0;
        if (!ParseNumber(w[1], &index) || index < 0 || index >= devices) {
          return fail("device index '" + w[1] + "' out of range (devices " + std::to_string(devices) + ")");
        }
        device_index = static_cast<int>(index);
        targets.push_back(&s.devices[device_index]);
      }
    }
    if (w[0] == "init_error") {
      if (w.size() != 2 || !ParseCode(w[1], &s.init_error)) return fail("init_error CODE");
    } else if (w[0] == "driver_version") {
      if (w.size() != 2) return fail("driver_version TEXT");
      s.driver_version = w[1];
    } else if (w[0] == "cuda_driver_version") {
      double version = 0;
      if (w.size() != 2 || !ParseNumber(w[1], &version)) return fail("cuda_driver_version NUMBER (13000 for 13.0)");
      s.cuda_driver_version = static_cast<int>(version);
    } else if (w[0] == "device") {
      FakeDevice& d = *targets[0];
      if (w.size() % 2 != 0) return fail("device I KEY VALUE ...");
      for (size_t k = 2; k + 1 < w.size(); k += 2) {
        if (w[k] == "name") {
          d.name = w[k + 1];
        } else if (w[k] == "uuid") {
          d.uuid = w[k + 1];
        } else if (w[k] == "pci") {
          d.pci_bus_id = w[k + 1];
        } else if (w[k] == "gpm") {
          d.gpm = w[k + 1] != "0";
        } else {
          return fail("unknown device key '" + w[k] + "' (name, uuid, pci, gpm)");
        }
      }
    } else if (w[0] == "set") {
      double value = 0;
      const int v = w.size() == 4 ? FindName(kValueNames, kValueCount, w[2]) : -1;
      if (v < 0 || !ParseNumber(w[3], &value)) return fail("set I KEY NUMBER with a key of tests/fakes/README.md");
      for (FakeDevice* d : targets) d->values[v] = value;
    } else if (w[0] == "error") {
      nvmlReturn_t code = NVML_SUCCESS;
      if (w.size() != 4 || !ParseCode(w[3], &code)) return fail("error I FUNCTION CODE");
      const int fn = FindName(kFnNames, kFnCount, w[2]);
      const int value = FindName(kValueNames, kValueCount, w[2]);
      if (fn < 0 && value < 0) return fail("unknown NVML function or value '" + w[2] + "'");
      if (fn >= 0 && w[1] == "*") s.errors[fn] = code;
      for (FakeDevice* d : targets) (fn >= 0 ? d->errors[fn] : d->value_errors[value]) = code;
    } else if (w[0] == "process") {
      FakeProcess p;
      double number = 0;
      if (w.size() < 3 || w.size() % 2 != 1 || !ParseNumber(w[2], &number)) {
        return fail("process I PID [sm N] [mem N] [used BYTES]");
      }
      p.pid = static_cast<unsigned int>(number);
      for (size_t k = 3; k + 1 < w.size(); k += 2) {
        if (!ParseNumber(w[k + 1], &number)) return fail("not a number: " + w[k + 1]);
        if (w[k] == "sm") {
          p.has_utilization = true;
          p.sm = static_cast<unsigned int>(number);
        } else if (w[k] == "mem") {
          p.has_utilization = true;
          p.mem = static_cast<unsigned int>(number);
        } else if (w[k] == "used") {
          p.has_used = true;
          p.used = static_cast<unsigned long long>(number);
        } else {
          return fail("unknown process key '" + w[k] + "' (sm, mem, used)");
        }
      }
      targets[0]->processes.push_back(p);
    } else if (w[0] == "cycle") {
      double v[4];
      if (w.size() != 6 || !ParseNumber(w[2], &v[0]) || !ParseNumber(w[3], &v[1]) || !ParseNumber(w[4], &v[2]) ||
          !ParseNumber(w[5], &v[3]) || v[0] <= 0 || v[1] < 0) {
        return fail("cycle I BUSY_S IDLE_S BUSY_MW IDLE_MW");
      }
      for (FakeDevice* d : targets) d->cycle = {true, v[0], v[1], v[2], v[3]};
    } else if (w[0] == "xid") {
      double xid = 0;
      if (w.size() != 3 || !ParseNumber(w[2], &xid)) return fail("xid I CODE");
      s.xids.emplace_back(device_index, static_cast<unsigned long long>(xid));
    } else {
      return fail("unknown verb '" + w[0] + "'");
    }
  }
  *script = std::move(s);
  return true;
}

}  // namespace warpscope::fake_nvml
