# CPU cost of one NVML collection (bench/nvml_collect_bench.cc): the scripted
# fake by default, a real libnvidia-ml.so.1 with --library.
add_executable(nvml_collect_bench ${CMAKE_CURRENT_LIST_DIR}/nvml_collect_bench.cc)
target_link_libraries(nvml_collect_bench PRIVATE ws_nvml)
target_compile_definitions(nvml_collect_bench PRIVATE WS_FAKE_NVML_PATH="$<TARGET_FILE:ws_fake_nvml>")
add_dependencies(nvml_collect_bench ws_fake_nvml)
