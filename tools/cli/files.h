// File helpers for the CLI: read a whole (bounded) file, and replace a file atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct stat;

namespace replaygate::cli {

// Reads `path` into *text. Fails (false, *error set to "cannot read PATH: REASON") when the file
// cannot be opened or read, or is larger than `max_bytes`.
bool read_whole_file(const std::string& path, size_t max_bytes, std::string* text,
                     std::string* error);

// Writes `bytes` to a temporary file in the directory of `path`, fsyncs it, renames it over
// `path` and fsyncs the directory. A reader never sees a half-written file, and on any failure
// `path` keeps its old content and the temporary file is removed. *error: "cannot write PATH: ...".
bool write_file_atomically(const std::string& path, std::string_view bytes, std::string* error);

// One file a command reads, for check_output_file(): its path and what to call it in the
// message ("the policy file", "the table file", "the input file").
struct InputFile {
  std::string path;
  std::string what;
};

// Whether a command may write its output to `output` (by write_file_atomically, which renames
// over it). Refused (false, *error set, without a "replaygate: error: " prefix) when
//  - `output` exists and is not a regular file: a directory, a device or a symbolic link
//    (checked with lstat: a link is refused whatever it points at). For a link the user named
//    the link, and neither possible write is what they asked for: write_file_atomically()
//    follows a link to an existing file and renames over its target (replacing a file the user
//    did not name, possibly elsewhere, e.g. the reviewed policy), while for a dangling link the
//    rename(2) replaces the link itself with a regular file. Neither may happen silently:
//    "refusing to write OUT: it exists and is not a regular file (a directory, device or
//    symbolic link)";
//  - `output` is the same file (device and inode) as one of `inputs` with a non-empty path, which
//    also catches a hard link: "refusing to write OUT: it is WHAT itself; choose another -o path"
//    followed by `example` (e.g. " (e.g. gate.rgt)").
// Every command with an -o/--output option checks this before it reads its inputs (exit 2).
bool check_output_file(const std::string& output, const std::vector<InputFile>& inputs,
                       const std::string& example, std::string* error);

// The first of `inputs` (paths that are not empty; "-" is standard input) that is the same file
// (device and inode, so a hard link too) as the regular file `target` (an fstat/stat result),
// or nullptr. An input that cannot be stat()ed is no match (opening it fails later, by name).
const InputFile* same_file_as(const struct stat& target, const std::vector<InputFile>& inputs);

// Like cat's "input file is output file": when standard output is a regular file that is one of
// `inputs`, "standard output is WHAT PATH itself" (WHAT PATH: e.g. "the input file d.jsonl", or
// "standard input" for "-"), "" otherwise. A command that reads an input while it writes
// standard output (decide in a loop; `decide IN >> IN` would read its own output back without
// end) refuses this before it reads anything (exit 2).
std::string stdout_is_input(const std::vector<InputFile>& inputs);

}  // namespace replaygate::cli
