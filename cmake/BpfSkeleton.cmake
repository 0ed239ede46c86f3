# Compiles bpf/<name>.bpf.c with clang -target bpf (CO-RE, against the checked-in
# vmlinux.h) and generates a libbpf skeleton header <name>.skel.h with bpftool.
# Usage: ws_bpf_skeleton(<name>) creates the INTERFACE target ws_bpf_<name>.
find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)
find_program(BPF_STRIP NAMES llvm-strip llvm-strip-14 REQUIRED)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(WS_BPF_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(WS_BPF_ARCH arm64)
else()
  message(FATAL_ERROR "unsupported BPF target architecture ${CMAKE_SYSTEM_PROCESSOR}")
endif()

function(ws_bpf_skeleton name)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/${name}.bpf.c)
  set(obj ${CMAKE_CURRENT_BINARY_DIR}/${name}.bpf.o)
  set(skel ${CMAKE_CURRENT_BINARY_DIR}/skel/${name}.skel.h)
  file(GLOB bpf_headers ${PROJECT_SOURCE_DIR}/bpf/include/*.h ${PROJECT_SOURCE_DIR}/bpf/include/${WS_BPF_ARCH}/*.h
       ${PROJECT_SOURCE_DIR}/bpf/intf/*.h)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${WS_BPF_ARCH}
            -I${PROJECT_SOURCE_DIR}/bpf/include/${WS_BPF_ARCH}
            -I${PROJECT_SOURCE_DIR}/bpf/include -I${PROJECT_SOURCE_DIR}
            -Wall -Werror -Wno-unused-function
            -c ${src} -o ${obj}
    # Keep BTF (needed for CO-RE), drop DWARF: the skeleton embeds the object.
    COMMAND ${BPF_STRIP} -g ${obj}
    DEPENDS ${src} ${bpf_headers}
    COMMENT "BPF ${name}.bpf.c"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/skel
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name}_bpf > ${skel}
    DEPENDS ${obj}
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(ws_bpf_${name}_gen DEPENDS ${skel})
  add_library(ws_bpf_${name} INTERFACE)
  add_dependencies(ws_bpf_${name} ws_bpf_${name}_gen)
  target_include_directories(ws_bpf_${name} INTERFACE ${CMAKE_CURRENT_BINARY_DIR}/skel ${PROJECT_SOURCE_DIR})
  target_link_libraries(ws_bpf_${name} INTERFACE ws_libbpf)
endfunction()
