#include "tests/fakes/fake_nvml/fake_nvml_state.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace warpscope::fake_nvml {

using namespace nvml;  // NOLINT

nvmlReturn_t FakeNvml::Init() {
  if (init_count_ == 0) {
    const char* path = std::getenv("WS_FAKE_NVML_SCRIPT");
    script_path_ = path != nullptr ? path : "";
    file_id_ = FileId();
    script_ = warpscope::fake_nvml::DefaultScript();
    pending_xids_.clear();
    if (!script_path_.empty() && !Reload(/*at_init=*/true)) return NVML_ERROR_UNKNOWN;
    if (script_.init_error != NVML_SUCCESS) return script_.init_error;
  }
  ++init_count_;
  return NVML_SUCCESS;
}

bool FakeNvml::Reload(bool at_init) {
  struct stat st;
  if (stat(script_path_.c_str(), &st) != 0) {
    if (at_init) std::fprintf(stderr, "fake NVML: cannot stat %s\n", script_path_.c_str());
    return !at_init;
  }
  FileId id;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.size = st.st_size;
  id.mtime = st.st_mtim;
  if (!at_init && id == file_id_) return true;
  file_id_ = id;
  std::ifstream in(script_path_);
  std::stringstream text;
  text << in.rdbuf();
  FakeScript parsed;
  std::string error;
  if (!warpscope::fake_nvml::ParseScript(text.str(), &parsed, &error)) {
    std::fprintf(stderr, "fake NVML: %s: %s\n", script_path_.c_str(), error.c_str());
    return false;  // a broken rewrite keeps the previous script
  }
  script_ = std::move(parsed);
  // Each xid line of a (re)loaded script is one event, delivered once.
  for (const auto& x : script_.xids) pending_xids_.push_back(x);
  return true;
}

FakeNvml& State() {
  static FakeNvml state;  // destroyed when the library is unloaded
  return state;
}

}  // namespace warpscope::fake_nvml
