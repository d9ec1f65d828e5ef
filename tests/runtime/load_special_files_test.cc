// Loading from files that are not regular files: devices are refused before any read, a FIFO
// without a writer reads as empty at once (never a hang: a reload thread would block forever in
// open()), and pipes with a writer are read as far as their header says: a stream that is no
// table is refused after its header, and none is read more than one byte past its stated size.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "compiler/lower.h"
#include "runtime/replaygate.h"
#include "runtime/table.h"
#include "tests/support/paths.h"
#include "tests/support/table_bytes.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

using Bytes = testing::TableBytes;

std::string device_message(const std::string& path) {
  return "cannot read " + path +
         ": a character device, not a table file (a table is read from a regular file or a pipe)";
}

// A new FIFO in the test's temporary directory, removed at the end of the test.
class Fifo {
 public:
  explicit Fifo(const std::string& name) : path_(::testing::TempDir() + name) {
    std::remove(path_.c_str());
    EXPECT_EQ(::mkfifo(path_.c_str(), 0600), 0) << path_;
  }
  ~Fifo() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs `f` on a thread. If it has not returned within 20 s, the test fails and the FIFO is opened
// for writing once, which releases a reader blocked in open() (it then reads an empty pipe), so a
// regression fails the test instead of hanging it.
template <typename F>
auto call_with_deadline(const std::string& fifo, F f) {
  auto task = std::async(std::launch::async, f);
  if (task.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked for 20 s on the FIFO " << fifo;
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
  }
  return task.get();
}

TEST(LoadSpecialFiles, DevicesAreRefusedBeforeAnyRead) {
  // /dev/zero and /dev/urandom never end: read to the 1 GiB limit they took seconds and a GiB.
  for (const char* path : {"/dev/zero", "/dev/urandom", "/dev/null"}) {
    testing::expect_file_load_error(path, LoadError::kIo, device_message(path));
  }
  rg_table* t = nullptr;
  rg_error err;
  EXPECT_EQ(rg_table_load_file("/dev/zero", &t, &err), RG_ERR_IO);
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(std::string(err.message), device_message("/dev/zero"));
}

TEST(LoadSpecialFiles, EmptyRegularFileIsTruncated) {
  const std::string path = testing::write_temp_table(Bytes{}, "rg_empty.rgt");
  testing::expect_file_load_error(path, LoadError::kTruncated, "empty table");
  std::remove(path.c_str());
}

TEST(LoadSpecialFiles, FifoWithoutAWriterReadsAsEmptyAtOnce) {
  Fifo fifo("rg_no_writer.fifo");
  const LoadStatus status = call_with_deadline(fifo.path(), [&] {
    LoadStatus s;
    EXPECT_EQ(Table::load_file(fifo.path(), &s), nullptr);
    return s;
  });
  EXPECT_EQ(status.error, LoadError::kTruncated);
  EXPECT_EQ(status.message, "empty table: the pipe " + fifo.path() +
                                " gave no bytes (a FIFO with no writer when it is opened reads "
                                "as empty)");
}

// The reload thread of a worker is not stuck: the reload fails and the old table keeps serving.
TEST(LoadSpecialFiles, ReloadFromAFifoWithoutAWriterFailsAndKeepsTheTable) {
  Fifo fifo("rg_reload_no_writer.fifo");
  rg_shared* shared = nullptr;
  ASSERT_EQ(
      rg_shared_open((std::string(RG_SOURCE_DIR) + "/tests/data/tables/replay_gate.rgt").c_str(), 0,
                     &shared, nullptr),
      RG_OK);
  rg_error err;
  const rg_status status = call_with_deadline(
      fifo.path(), [&] { return rg_shared_reload(shared, fifo.path().c_str(), &err); });
  EXPECT_EQ(status, RG_ERR_TRUNCATED);
  EXPECT_EQ(std::string(err.message).rfind("empty table: the pipe ", 0), 0u) << err.message;
  EXPECT_EQ(rg_shared_generation(shared), 0u);
  rg_shared_free(shared);
}

// A FIFO whose writer is already connected (here: opened before the load, the bytes written by a
// thread) is read to its end, however large the table.
TEST(LoadSpecialFiles, FifoWithAWriterIsReadToItsEnd) {
  Fifo fifo("rg_writer.fifo");
  const Bytes bytes = lower(testing::reference_gate());
  // A writer's open needs a reader: a placeholder one, that never reads, is kept until the end.
  const int placeholder = ::open(fifo.path().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(placeholder, 0);
  const int out = ::open(fifo.path().c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(out, 0);
  std::thread writer([&] {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(out, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(out);
  });
  const LoadStatus status = call_with_deadline(fifo.path(), [&] {
    LoadStatus s;
    auto table = Table::load_file(fifo.path(), &s);
    if (table != nullptr) {
      EXPECT_EQ(table->policy_id(), "dlq-replay-gate");
    }
    return s;
  });
  writer.join();
  ::close(placeholder);
  EXPECT_TRUE(status.ok()) << status.message;
}

// An anonymous pipe named by /proc/self/fd/N (what a shell's <(...) gives) is read to its end.
TEST(LoadSpecialFiles, AnonymousPipeIsReadToItsEnd) {
  const Bytes bytes = lower(testing::reference_gate());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fds[1], bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fds[1]);
  });
  rg_table* t = nullptr;
  rg_error err;
  const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
  EXPECT_EQ(rg_table_load_file(path.c_str(), &t, &err), RG_OK) << err.message;
  writer.join();
  ::close(fds[0]);
  EXPECT_EQ(std::string(rg_table_policy_id(t).data, rg_table_policy_id(t).size), "dlq-replay-gate");
  rg_table_free(t);
}

// Writes `bytes` then zeros into the write end `fd` of a pipe until the reader goes away (EPIPE),
// on a thread; written() is every byte the pipe took: what the reader read plus what was left in
// the pipe (one page: its size is set to the smallest there is).
class EndlessWriter {
 public:
  EndlessWriter(int fd, std::vector<uint8_t> bytes) : fd_(fd), bytes_(std::move(bytes)) {
    ::fcntl(fd_, F_SETPIPE_SZ, 4096);
    previous_ = ::signal(SIGPIPE, SIG_IGN);  // EPIPE instead of the signal
    thread_ = std::thread([this] {
      std::vector<uint8_t> block(4096, 0);
      size_t from = 0;
      while (true) {
        const uint8_t* data = from < bytes_.size() ? bytes_.data() + from : block.data();
        const size_t size = from < bytes_.size() ? bytes_.size() - from : block.size();
        const ssize_t n = ::write(fd_, data, size);
        if (n <= 0) break;
        from += static_cast<size_t>(n);
        written_ = from;
      }
      ::close(fd_);
    });
  }
  ~EndlessWriter() { ::signal(SIGPIPE, previous_); }
  // Waits for the writer to stop (after the reader closed its end).
  uint64_t join() {
    thread_.join();
    return written_;
  }

 private:
  int fd_;
  std::vector<uint8_t> bytes_;
  std::atomic<uint64_t> written_{0};
  void (*previous_)(int) = nullptr;
  std::thread thread_;
};

// `cat /dev/zero | replaygate dump /dev/stdin` read 1 GiB before it said "bad magic". The
// header is checked first: refused at once, with the pipe read no further than its header.
TEST(LoadSpecialFiles, AnEndlessPipeThatIsNoTableIsRefusedAfterItsHeader) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EndlessWriter writer(fds[1], {});
  LoadStatus status;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(Table::load_file("/proc/self/fd/" + std::to_string(fds[0]), &status), nullptr);
  const auto took = std::chrono::steady_clock::now() - started;
  ::close(fds[0]);
  const uint64_t written = writer.join();
  EXPECT_EQ(status.error, LoadError::kBadMagic);
  EXPECT_EQ(status.message, "bad magic: not a replaygate table");
  EXPECT_LE(written, 80u + 4096u + 4096u) << "the loader read past the header";
  EXPECT_LT(took, std::chrono::seconds(5));
}

// A table followed by endless bytes: read to its stated size and one byte past, then refused as
// trailing bytes (before, the pipe was read to the 1 GiB limit).
TEST(LoadSpecialFiles, AnEndlessPipeAfterATableIsReadOneBytePastIt) {
  const Bytes bytes = lower(testing::reference_gate());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EndlessWriter writer(fds[1], bytes);
  LoadStatus status;
  const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
  EXPECT_EQ(Table::load_file(path, &status), nullptr);
  ::close(fds[0]);
  const uint64_t written = writer.join();
  EXPECT_EQ(status.error, LoadError::kMalformed);
  EXPECT_EQ(status.message, "trailing bytes: header says " + std::to_string(bytes.size()) +
                                " bytes, and " + path + " goes on past them");
  EXPECT_LE(written, bytes.size() + 1 + 4096u + 4096u);
}

// A pipe that ends before the size its header gives is a truncated table, in the loader's words.
TEST(LoadSpecialFiles, APipeThatEndsEarlyIsTruncated) {
  const Bytes bytes = lower(testing::reference_gate());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    const size_t half = bytes.size() / 2;
    size_t done = 0;
    while (done < half) {
      const ssize_t n = ::write(fds[1], bytes.data() + done, half - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fds[1]);
  });
  LoadStatus status;
  EXPECT_EQ(Table::load_file("/proc/self/fd/" + std::to_string(fds[0]), &status), nullptr);
  writer.join();
  ::close(fds[0]);
  EXPECT_EQ(status.error, LoadError::kTruncated);
  EXPECT_EQ(status.message, "truncated: header says " + std::to_string(bytes.size()) +
                                " bytes, got " + std::to_string(bytes.size() / 2));
}

}  // namespace
}  // namespace replaygate
