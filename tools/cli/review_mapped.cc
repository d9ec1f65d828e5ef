// Opening review's mapped message file and saying what went wrong (review_mapped.h).
#include "tools/cli/review_mapped.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/escape.h"
#include "tools/cli/commands.h"
#include "tools/cli/record_reading.h"

namespace replaygate::cli {

int read_mapped_message(const inputs::InputFormat& format, const std::string& mapping_path,
                        const std::string& message_path, const std::string& message_id,
                        const Table& table, MappedMessage* out) {
  *out = MappedMessage{};
  RecordReading reading;
  // A broken mapping is the command's configuration, not the message: usage (exit 2), as a
  // mapping of another format is.
  if (open_record_parser(format, mapping_path, table, "nothing reviewed", &reading) != kExitOk) {
    return kExitUsage;
  }
  const int fd = ::open(message_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "replaygate: cannot read message file %s: %s\n", message_path.c_str(),
                 std::strerror(errno));
    return kExitUsage;
  }
  const review::MappedSelection read =
      review::select_mapped_message(fd, format, *reading.parser, table, message_id);
  ::close(fd);
  if (!read.read_error.empty()) {
    std::fprintf(stderr, "replaygate: cannot read message file %s: %s\n", message_path.c_str(),
                 read.read_error.c_str());
    return kExitUsage;
  }
  if (read.records == 0) {
    std::fprintf(stderr,
                 "replaygate: invalid message: %s: holds no record (--input-format %.*s reads one "
                 "dead-lettered record)\n",
                 message_path.c_str(), static_cast<int>(format.name.size()), format.name.data());
    return kExitFindings;
  }
  if (message_id.empty() && read.records > 1) {
    std::fprintf(stderr,
                 "replaygate: error: %s holds %llu records; review reads one: give --message-id ID "
                 "to choose it\nRun 'replaygate review --help' for usage.\n",
                 message_path.c_str(), static_cast<unsigned long long>(read.records));
    return kExitUsage;
  }
  if (!message_id.empty() && read.matches != 1) {
    const std::string unread =
        read.unreadable == 0 ? "" : " (" + std::to_string(read.unreadable) + " could not be read)";
    std::fprintf(stderr, "replaygate: error: %s: %s has message id '%s'%s\n", message_path.c_str(),
                 read.matches == 0 ? "no record" : "more than one record",
                 escape_control(message_id).c_str(), unread.c_str());
    return kExitUsage;
  }
  *out = read.message;
  return kExitOk;
}

}  // namespace replaygate::cli
