// Plural helper, byte buffer and the block-buffered writer (see output.h).
#include "tools/cli/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace replaygate::cli {

int write_fully(int fd, const char* bytes, size_t size, size_t* written) {
  *written = 0;
  while (*written < size) {
    const ssize_t n = ::write(fd, bytes + *written, size - *written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;  // write(2) made no progress and said nothing: do not spin
    *written += static_cast<size_t>(n);
  }
  return 0;
}

std::string describe_stream(int fd, const std::string& stream) {
  char target[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  // "pipe:[123]" and "socket:[123]" name no file; a path starts with '/'.
  if (n <= 0 || target[0] != '/') return stream;
  return stream + " (" + std::string(target, static_cast<size_t>(n)) + ")";
}

std::string stdout_unwritable() {
  const int flags = ::fcntl(STDOUT_FILENO, F_GETFL);
  if (flags >= 0 && (flags & O_ACCMODE) != O_RDONLY) return "";
  return std::strerror(flags < 0 ? errno : EBADF);
}

bool print_to_stdout(std::string_view text, std::string_view what) {
  int error = 0;
  if (std::fflush(stdout) != 0) error = errno;  // anything printed through stdio goes first
  size_t written = 0;
  if (error == 0) error = write_fully(STDOUT_FILENO, text.data(), text.size(), &written);
  if (error == 0) return true;
  std::fprintf(stderr, "replaygate: cannot write %.*s to %s: %s\n", static_cast<int>(what.size()),
               what.data(), describe_stream(STDOUT_FILENO, "standard output").c_str(),
               std::strerror(error));
  return false;
}

bool ends_mid_line(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return false;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ((flags & O_APPEND) == 0 && ::lseek(fd, 0, SEEK_CUR) != st.st_size)) {
    return false;
  }
  char last = '\n';
  // `>>` opens the file write only: read its last byte through a descriptor of our own.
  ssize_t n = ::pread(fd, &last, 1, st.st_size - 1);
  if (n != 1) {
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const int reader = ::open(link.c_str(), O_RDONLY | O_CLOEXEC);
    if (reader < 0) return false;
    n = ::pread(reader, &last, 1, st.st_size - 1);
    ::close(reader);
  }
  return n == 1 && last != '\n';
}

BlockWriter::BlockWriter(int fd) : buffer_(kBlockBytes + 4096), fd_(fd) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) floor_ = st.st_size;
}

bool BlockWriter::flush() {
  if (buffer_.size() > 0 && ok_ && newline_first_) {
    newline_first_ = false;
    size_t written = 0;
    if (const int error = write_fully(fd_, "\n", 1, &written); error != 0) {
      ok_ = false;
      error_ = error;
    }
  }
  if (buffer_.size() > 0 && ok_) {
    size_t written = 0;
    const int error = write_fully(fd_, buffer_.data(), buffer_.size(), &written);
    if (error != 0) {
      ok_ = false;
      error_ = error;
      const char* const begin = buffer_.data();
      const auto lines = std::count(begin, begin + written, '\n');
      failed_block_lines_ = static_cast<uint64_t>(lines);
      // The bytes after the last '\n' written: the start of a line the failure cut.
      const void* last = written == 0 ? nullptr : ::memrchr(begin, '\n', written);
      const size_t tail =
          last == nullptr ? written : written - (static_cast<const char*>(last) - begin + 1);
      if (tail > 0) {
        struct stat st {};
        const off_t end = ::lseek(fd_, 0, SEEK_CUR);  // just past our last byte, O_APPEND or not
        partial_line_left_ = ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) || end < 0 ||
                             end - static_cast<off_t>(tail) < floor_ ||
                             ::ftruncate(fd_, end - static_cast<off_t>(tail)) != 0;
      }
    }
  }
  buffer_.clear();
  return ok_;
}

}  // namespace replaygate::cli
