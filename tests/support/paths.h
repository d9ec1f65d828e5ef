// Where a test finds the source tree and the CLI binary of its build tree (tests/support/paths.cc).
#pragma once

namespace rg_test {
// The checkout the build tree was configured from, without a trailing slash.
const char* source_dir();
// The `replaygate` binary of the same build tree.
const char* cli_binary();
}  // namespace rg_test

// The two paths are compiled into paths.cc alone, so every other test file compiles to the same
// object in any checkout and ccache shares it between clones (docs/development.md).
#define RG_SOURCE_DIR (::rg_test::source_dir())
#define RG_BINARY (::rg_test::cli_binary())
