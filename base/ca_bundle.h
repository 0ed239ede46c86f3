// Where this host keeps its CA certificates, for libcurl's CURLOPT_CAINFO.
// libcurl looks only at the path it was built with (Debian's), which other
// distributions do not have: a release or container carrying Debian's
// libcurl on RHEL would trust nothing. So every https client here names the
// host's bundle itself.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace warpscope {

// The first of these that is a readable file: $SSL_CERT_FILE, then the
// bundles of Debian/Ubuntu, RHEL/Fedora, SUSE and Alpine. Empty when none is
// (libcurl's default then applies). Looked up once.
const std::string& SystemCaBundle();

// The same choice over any candidates (tests).
std::string FirstReadableFile(const std::vector<std::string>& candidates);

}  // namespace warpscope
