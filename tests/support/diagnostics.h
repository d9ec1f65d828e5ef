// Helpers the test binaries share: a loaded policy's diagnostics as text (for failure messages)
// and a whole file read as text (for golden files).
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/diagnostic.h"
#include "compiler/compile.h"

namespace replaygate::testing {

// The diagnostics as `replaygate lint` prints them (render_text, with source excerpts).
inline std::string diagnostics_text(const LoadedPolicy& loaded) {
  return render_text(loaded.diagnostics, loaded.source_text);
}

// The bytes of `path` ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace replaygate::testing
