#include "base/ca_bundle.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace warpscope {

std::string FirstReadableFile(const std::vector<std::string>& candidates) {
  for (const std::string& path : candidates) {
    struct stat st {};
    if (!path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), R_OK) == 0) {
      return path;
    }
  }
  return "";
}

const std::string& SystemCaBundle() {
  static const std::string bundle = [] {
    const char* env = std::getenv("SSL_CERT_FILE");
    return FirstReadableFile({env != nullptr ? env : "", "/etc/ssl/certs/ca-certificates.crt",
                              "/etc/pki/tls/certs/ca-bundle.crt", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
                              "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem"});
  }();
  return bundle;
}

}  // namespace warpscope
