// Loading from files that are not regular files: devices are refused before any read, a FIFO
// without a writer reads as empty at once (never a hang: a reload thread would block forever in
// open()), and pipes with a writer are read to their end.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>

#include "compiler/lower.h"
#include "runtime/replaygate.h"
#include "runtime/table.h"
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
  ASSERT_EQ(rg_shared_open(RG_SOURCE_DIR "/tests/data/tables/replay_gate.rgt", 0, &shared, nullptr),
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

}  // namespace
}  // namespace replaygate
