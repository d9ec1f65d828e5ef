# rg_test_paths: the build tree's absolute paths (source tree, CLI binary) compiled into one small
# file, tests/support/paths.cc. Every other test file's command line is then the same in any clone,
# so ccache (base_dir at the clone's root, tools/setup.sh) shares its object between clones.
if(NOT TARGET rg_test_paths)
  add_library(rg_test_paths STATIC ${PROJECT_SOURCE_DIR}/tests/support/paths.cc)
  target_include_directories(rg_test_paths PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_definitions(rg_test_paths PRIVATE RG_PATHS_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    RG_PATHS_CLI_BINARY="$<TARGET_FILE:replaygate>")
endif()
