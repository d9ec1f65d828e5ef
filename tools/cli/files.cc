// Bounded whole-file reads and atomic replacement by rename (see files.h).
#include "tools/cli/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

namespace replaygate::cli {
namespace {

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

bool check_output_file(const std::string& output, const std::vector<InputFile>& inputs,
                       const std::string& example, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(output, ec);
  if (!ec && fs::exists(status) && !fs::is_regular_file(status)) {
    *error = "refusing to write " + output +
             ": it exists and is not a regular file (a directory, device or symbolic link)";
    return false;
  }
  for (const InputFile& input : inputs) {
    if (input.path.empty()) continue;
    if (fs::equivalent(input.path, output, ec) && !ec) {
      *error = "refusing to write " + output + ": it is " + input.what +
               " itself; choose another -o path" + example;
      return false;
    }
  }
  return true;
}

const InputFile* same_file_as(const struct stat& target, const std::vector<InputFile>& inputs) {
  if (!S_ISREG(target.st_mode)) return nullptr;
  for (const InputFile& input : inputs) {
    if (input.path.empty()) continue;
    struct stat st {};
    const int got =
        input.path == "-" ? ::fstat(STDIN_FILENO, &st) : ::stat(input.path.c_str(), &st);
    if (got == 0 && st.st_dev == target.st_dev && st.st_ino == target.st_ino) return &input;
  }
  return nullptr;
}

std::string stdout_is_input(const std::vector<InputFile>& inputs) {
  struct stat out {};
  if (::fstat(STDOUT_FILENO, &out) != 0) return "";
  const InputFile* same = same_file_as(out, inputs);
  if (same == nullptr) return "";
  return "standard output is " +
         (same->path == "-" ? std::string("standard input") : same->what + " " + same->path) +
         " itself";
}

bool read_whole_file(const std::string& path, size_t max_bytes, std::string* text,
                     std::string* error) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    *error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  text->clear();
  char block[65536];
  bool ok = true;
  while (true) {
    const size_t got = std::fread(block, 1, sizeof block, file);
    if (got > 0) {
      if (text->size() + got > max_bytes) {
        *error = "cannot read " + path + ": larger than " + std::to_string(max_bytes) + " bytes";
        ok = false;
        break;
      }
      text->append(block, got);
    }
    if (got < sizeof block) {
      if (std::ferror(file)) {
        *error = "cannot read " + path + ": " + std::strerror(errno);
        ok = false;
      }
      break;
    }
  }
  std::fclose(file);
  return ok;
}

bool write_file_atomically(const std::string& requested, std::string_view bytes,
                           std::string* error) {
  // Replace what a symlink points at, not the link itself, and keep an existing file's mode and
  // owner; refuse a file the caller may not write (renaming over it would bypass its mode).
  std::string path = requested;
  struct stat existing {};
  const bool exists = ::stat(requested.c_str(), &existing) == 0;
  if (exists) {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::canonical(requested, ec);
    if (!ec) path = target.string();
    if (!S_ISREG(existing.st_mode)) {
      *error = "cannot write " + requested + ": not a regular file";
      return false;
    }
    if (::access(path.c_str(), W_OK) != 0) {
      *error = "cannot write " + requested + ": " + std::strerror(errno);
      return false;
    }
  }
  const std::string directory = directory_of(path);
  std::string temp_name = path + ".tmp.XXXXXX";
  std::vector<char> temp(temp_name.begin(), temp_name.end());
  temp.push_back('\0');
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  temp_name.assign(temp.data());
  const auto fail = [&](const char* what) {
    *error = "cannot write " + path + ": " + what + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(temp_name.c_str());
    return false;
  };
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write");
    }
    written += static_cast<size_t>(n);
  }
  // mkstemp creates 0600: keep the replaced file's mode (and owner, where allowed); a new file
  // gets the usual 0666 & ~umask (a table or a policy is not a secret).
  if (exists) {
    if (::fchmod(fd, existing.st_mode & 07777) != 0) return fail("chmod");
    if (::fchown(fd, existing.st_uid, existing.st_gid) != 0) {
      // Not the owner (and not root): the new file stays ours, with the old mode.
    }
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd, 0666 & ~mask) != 0) return fail("chmod");
  }
  if (::fsync(fd) != 0) return fail("fsync");
  if (::close(fd) != 0) {
    *error = "cannot write " + path + ": close: " + std::strerror(errno);
    ::unlink(temp_name.c_str());
    return false;
  }
  if (::rename(temp_name.c_str(), path.c_str()) != 0) {
    *error = "cannot write " + path + ": rename: " + std::strerror(errno);
    ::unlink(temp_name.c_str());
    return false;
  }
  // Make the rename durable; failure here does not undo the (already visible) new file.
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return true;
}

}  // namespace replaygate::cli
