// File helpers for the CLI: read a whole (bounded) file, and replace a file atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace replaygate::cli {

// Reads `path` into *text. Fails (false, *error set to "cannot read PATH: REASON") when the file
// cannot be opened or read, or is larger than `max_bytes`.
bool read_whole_file(const std::string& path, size_t max_bytes, std::string* text,
                     std::string* error);

// Writes `bytes` to a temporary file in the directory of `path`, fsyncs it, renames it over
// `path` and fsyncs the directory. A reader never sees a half-written file, and on any failure
// `path` keeps its old content and the temporary file is removed. *error: "cannot write PATH: ...".
bool write_file_atomically(const std::string& path, std::string_view bytes, std::string* error);

}  // namespace replaygate::cli
