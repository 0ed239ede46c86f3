# Cross-building for arm64 (aarch64) with Debian's g++-aarch64-linux-gnu
# against the sysroot of scripts/arm64_sysroot.sh:
#   scripts/arm64_sysroot.sh build-arm64/sysroot
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm64.cmake
# WS_ARM64_SYSROOT (default build-arm64/sysroot) names another sysroot.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)  # Debian's multiarch folders in the sysroot
if(NOT WS_ARM64_SYSROOT)
  set(WS_ARM64_SYSROOT ${CMAKE_CURRENT_LIST_DIR}/../build-arm64/sysroot)
endif()
get_filename_component(WS_ARM64_SYSROOT ${WS_ARM64_SYSROOT} ABSOLUTE)
# try_compile projects read this file again: they get the same sysroot.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES WS_ARM64_SYSROOT)
set(CMAKE_SYSROOT ${WS_ARM64_SYSROOT})
# Programs (protoc, clang for BPF, bpftool) are this machine's; libraries,
# headers and CMake packages come from the sysroot only.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{WS_ARM64_SYSROOT} ${CMAKE_SYSROOT})
set(PKG_CONFIG_EXECUTABLE ${CMAKE_CURRENT_LIST_DIR}/arm64-pkg-config CACHE FILEPATH "pkg-config of the arm64 sysroot")
