// The build tree's absolute paths, given on this file's command line only (tests/CMakeLists.txt).
#include "tests/support/paths.h"

namespace rg_test {
const char* source_dir() { return RG_PATHS_SOURCE_DIR; }
const char* cli_binary() { return RG_PATHS_CLI_BINARY; }
}  // namespace rg_test
