#include "agent/core/cuda_library.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "base/file_util.h"

namespace warpscope {

std::string DefaultCudaLibraryPath() {
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  std::string path(exe, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return path.substr(0, slash) + "/../lib/warpscope/libwarpscope_cuda.so";
}

StatusOr<std::string> PublishCudaLibrary(const std::string& source, const std::string& dir) {
  if (source.empty()) return InvalidArgumentError("no CUDA injection library to copy: pass --cuda-library PATH");
  StatusOr<std::string> bytes = ReadFileToString(source);
  if (!bytes.ok()) return bytes.status().WithContext("the CUDA injection library (--cuda-library)");
  if (bytes->size() < 4 || bytes->compare(0, 4, "\x7f" "ELF") != 0) {
    return InvalidArgumentError("--cuda-library " + source + " is not an ELF shared library");
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    // Like the CUDA socket's directory, made when missing (its parent must be
    // there), readable by applications of any user whatever the umask.
    if (errno != ENOENT || ::mkdir(dir.c_str(), 0755) != 0 || ::chmod(dir.c_str(), 0755) != 0 ||
        ::stat(dir.c_str(), &st) != 0) {
      return ErrnoError(errno, "--cuda-library-dir " + dir);
    }
  }
  if (!S_ISDIR(st.st_mode)) return InvalidArgumentError("--cuda-library-dir " + dir + " is not a directory");
  const std::string target = dir + "/libwarpscope_cuda.so";
  if (StatusOr<std::string> existing = ReadFileToString(target); existing.ok() && *existing == *bytes) {
    ::chmod(target.c_str(), 0644);
    return target;
  }
  if (Status s = WriteFileAtomically(target, *bytes); !s.ok()) return s.WithContext("--cuda-library-dir");
  // The file is read by applications of any user.
  if (::chmod(target.c_str(), 0644) != 0) return ErrnoError(errno, "chmod " + target);
  return target;
}

}  // namespace warpscope
