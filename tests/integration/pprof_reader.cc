#include "tests/integration/pprof_reader.h"

#include <zlib.h>

#include <algorithm>

#include "base/file_util.h"

namespace warpscope::testing {

bool DecodedSample::Contains(const std::string& function) const {
  return std::any_of(frames.begin(), frames.end(), [&](const DecodedFrame& f) { return f.function == function; });
}

std::vector<DecodedSample> DecodedProfile::ForPid(const std::string& pid) const {
  std::vector<DecodedSample> out;
  for (const auto& s : samples) {
    auto it = s.labels.find("pid");
    if (pid.empty() || (it != s.labels.end() && it->second == pid)) out.push_back(s);
  }
  return out;
}

int64_t DecodedProfile::TotalCount(const std::string& pid) const {
  int64_t n = 0;
  for (const auto& s : ForPid(pid)) n += s.count;
  return n;
}

int64_t DecodedProfile::CountContaining(const std::string& function, const std::string& pid) const {
  int64_t n = 0;
  for (const auto& s : ForPid(pid)) {
    if (s.Contains(function)) n += s.count;
  }
  return n;
}

StatusOr<std::string> Gunzip(const std::string& data) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return InternalError("inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[65536];
  int ret = Z_OK;
  while (ret != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    ret = inflate(&zs, Z_NO_FLUSH);
    if (ret != Z_OK && ret != Z_STREAM_END) {
      inflateEnd(&zs);
      return DataLossError("not valid gzip data");
    }
    out.append(buf, sizeof(buf) - zs.avail_out);
  }
  inflateEnd(&zs);
  return out;
}

StatusOr<DecodedProfile> ReadPprofFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string gz, ReadFileToString(path));
  ASSIGN_OR_RETURN(std::string bytes, Gunzip(gz));
  DecodedProfile p;
  if (!p.raw.ParseFromString(bytes)) return DataLossError("not a pprof protobuf: " + path);
  const auto& st = p.raw.string_table();
  auto str = [&](int64_t i) { return i >= 0 && i < st.size() ? st[static_cast<int>(i)] : std::string("<bad index>"); };
  std::map<uint64_t, const perftools::profiles::Function*> functions;
  for (const auto& f : p.raw.function()) functions[f.id()] = &f;
  std::map<uint64_t, const perftools::profiles::Mapping*> mappings;
  for (const auto& m : p.raw.mapping()) mappings[m.id()] = &m;
  std::map<uint64_t, const perftools::profiles::Location*> locations;
  for (const auto& l : p.raw.location()) locations[l.id()] = &l;

  for (const auto& s : p.raw.sample()) {
    DecodedSample d;
    if (s.value_size() >= 1) d.count = s.value(0);
    if (s.value_size() >= 2) d.cpu_nanos = s.value(1);
    for (const auto& label : s.label()) d.labels[str(label.key())] = str(label.str());
    for (uint64_t loc_id : s.location_id()) {
      auto lit = locations.find(loc_id);
      if (lit == locations.end()) return DataLossError("sample references missing location " + std::to_string(loc_id));
      const auto& loc = *lit->second;
      std::string mapping_name;
      if (loc.mapping_id()) {
        auto mit = mappings.find(loc.mapping_id());
        if (mit == mappings.end()) return DataLossError("location references missing mapping");
        mapping_name = str(mit->second->filename());
      }
      const bool kernel = mapping_name == "[kernel.kallsyms]" || (mapping_name.size() > 2 && mapping_name[0] == '[' &&
                                                                  mapping_name != "[vdso]" && mapping_name != "[unknown]");
      // Inlined frames are listed innermost first, like the stack itself.
      for (const auto& line : loc.line()) {
        auto fit = functions.find(line.function_id());
        if (fit == functions.end()) return DataLossError("line references missing function");
        d.frames.push_back({str(fit->second->name()), mapping_name, kernel, str(fit->second->filename()), line.line()});
      }
    }
    p.samples.push_back(std::move(d));
  }
  return p;
}

}  // namespace warpscope::testing
