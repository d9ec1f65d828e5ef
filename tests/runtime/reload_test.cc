// Hot reload (runtime/reload.h and the C API's rg_shared): swaps, rejected tables that leave the
// old one serving, deferred reclamation, reader slots, and concurrency: readers deciding while
// another thread reloads thousands of times, and reloads racing a publisher's atomic renames.
// tools/test.sh also runs these tests under ThreadSanitizer (RG_SKIP_TSAN=1 skips that stage).
#include "runtime/reload.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "compiler/lower.h"
#include "runtime/replaygate.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary
using Bytes = std::vector<uint8_t>;

// Table A: the reference gate. Table B: compatible (same fields and verbs) but the seed letter
// (payment.capture/timeout) is `never` instead of `replay_once`, and revision 2.
Bytes table_a() { return lower(reference_gate()); }
Bytes table_b() {
  ir::CheckedPolicy p = reference_gate();
  p.policy.revision = 2;
  std::get<ir::Table>(p.policy.rules[4]).rows[0].verb = kNever;
  return lower(p);
}

std::string checksum_of(const Bytes& bytes) {
  LoadStatus status;
  return Table::load_bytes(bytes.data(), bytes.size(), &status)->checksum_hex();
}

void write_file(const std::string& path, const Bytes& bytes, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(size));
}
void write_file(const std::string& path, const Bytes& bytes) {
  write_file(path, bytes, bytes.size());
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "rg_reload_" + std::to_string(::getpid()) + "_" + name;
}

void set_seed_letter(const Table& t, Input* in) {
  in->set_string(t.field_index("topic"), "payment.capture");
  in->set_string(t.field_index("error_class"), "timeout");
  in->set_int(t.field_index("attempts"), 1);
  in->set_string(t.field_index("idempotency_key"), "cap_9f3a");
  in->set_bool(t.field_index("already_committed"), false);
}

std::unique_ptr<SharedTable> open_bytes(const Bytes& bytes, uint32_t readers = 8) {
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  EXPECT_TRUE(status.ok()) << status.message;
  return std::make_unique<SharedTable>(std::move(table), readers);
}

TEST(Reload, SwapsTheTableAndEachDecisionNamesItsTable) {
  const Bytes a = table_a(), b = table_b();
  auto shared = open_bytes(a);
  SharedTable::Reader reader(*shared);
  ASSERT_TRUE(reader.ok());
  Input in(reader.acquire().table());
  set_seed_letter(reader.acquire().table(), &in);
  {
    auto guard = reader.acquire();
    EXPECT_EQ(guard.table().decide(in).verb, kReplayOnce);
    EXPECT_EQ(std::string(guard.checksum()), checksum_of(a));
  }
  LoadStatus status;
  ASSERT_TRUE(shared->reload_bytes(b.data(), b.size(), &status)) << status.message;
  EXPECT_EQ(shared->generation(), 1u);
  auto guard = reader.acquire();
  EXPECT_EQ(guard.table().decide(in).verb, kNever);
  EXPECT_EQ(guard.table().revision(), 2);
  EXPECT_EQ(std::string(guard.checksum()), checksum_of(b));
}

TEST(Reload, CorruptTableIsRejectedAndTheOldOneKeepsServing) {
  const Bytes a = table_a();
  Bytes bad = table_b();
  bad[bad.size() / 2] ^= 0x40;
  auto shared = open_bytes(a);
  LoadStatus status;
  EXPECT_FALSE(shared->reload_bytes(bad.data(), bad.size(), &status));
  EXPECT_EQ(status.error, LoadError::kBadChecksum);
  EXPECT_FALSE(shared->reload("/nonexistent/gate.rgt", &status));
  EXPECT_EQ(status.error, LoadError::kIo);
  const std::string path = temp_path("truncated.rgt");
  write_file(path, table_b(), 200);  // a publisher that wrote in place and was caught half-way
  EXPECT_FALSE(shared->reload(path, &status));
  EXPECT_EQ(status.error, LoadError::kTruncated) << status.message;
  std::remove(path.c_str());
  EXPECT_EQ(shared->generation(), 0u);
  SharedTable::Reader reader(*shared);
  EXPECT_EQ(std::string(reader.acquire().checksum()), checksum_of(a));
}

TEST(Reload, IncompatibleTableIsRejectedWithTheReason) {
  auto shared = open_bytes(table_a());
  const Bytes small = lower(small_policy());
  LoadStatus status;
  EXPECT_FALSE(shared->reload_bytes(small.data(), small.size(), &status));
  EXPECT_EQ(status.error, LoadError::kIncompatible);
  EXPECT_EQ(status.message, "incompatible table: 4 fields, the current table has 6");

  ir::CheckedPolicy renamed = reference_gate();
  renamed.policy.verbs[2].name = "wait";
  const Bytes r = lower(renamed);
  EXPECT_FALSE(shared->reload_bytes(r.data(), r.size(), &status));
  EXPECT_EQ(status.message, "incompatible table: verb 2 is wait, the current table has hold");

  ir::CheckedPolicy retyped = reference_gate();
  retyped.policy.fields[kReplays] = string_field("replays", true);
  const Bytes t = lower(retyped);
  EXPECT_FALSE(shared->reload_bytes(t.data(), t.size(), &status));
  EXPECT_EQ(status.message,
            "incompatible table: field 5 is replays (string), the current table has replays (int)");

  // Same name and type, but now derived (its Input value would be ignored).
  ir::CheckedPolicy derived = reference_gate();
  derived.policy.fields[kAlreadyCommitted].derived =
      ir::Derivation{kAttempts, ir::Op::kGe, kAttempts};
  const Bytes d = lower(derived);
  EXPECT_FALSE(shared->reload_bytes(d.data(), d.size(), &status));
  EXPECT_EQ(status.message,
            "incompatible table: field 4 (already_committed) is derived, the current table has it "
            "as an input");
}

TEST(Reload, PinnedTableOutlivesItsReplacementUntilReleased) {
  const Bytes a = table_a(), b = table_b();
  auto shared = open_bytes(a);
  SharedTable::Reader reader(*shared);
  Input in(reader.acquire().table());
  set_seed_letter(reader.acquire().table(), &in);
  LoadStatus status;
  {
    auto pinned = reader.acquire();  // a decision in flight on A
    ASSERT_TRUE(shared->reload_bytes(b.data(), b.size(), &status));
    ASSERT_TRUE(shared->reload_bytes(a.data(), a.size(), &status));
    // The first A is pinned; the B in between was never pinned and is already freed.
    EXPECT_EQ(shared->retired_count(), 1u);
    EXPECT_EQ(pinned.table().decide(in).verb, kReplayOnce);  // still valid memory
  }
  ASSERT_TRUE(shared->reload_bytes(b.data(), b.size(), &status));
  EXPECT_EQ(shared->retired_count(), 0u);
  EXPECT_EQ(shared->generation(), 3u);
}

TEST(Reload, ReaderSlotsAreLimitedAndReused) {
  auto shared = open_bytes(table_a(), 2);
  auto r1 = std::make_unique<SharedTable::Reader>(*shared);
  SharedTable::Reader r2(*shared);
  SharedTable::Reader r3(*shared);
  EXPECT_TRUE(r1->ok());
  EXPECT_TRUE(r2.ok());
  EXPECT_FALSE(r3.ok());
  r1.reset();
  SharedTable::Reader r4(*shared);
  EXPECT_TRUE(r4.ok());
  SharedTable::Reader moved(std::move(r4));
  EXPECT_TRUE(moved.ok());
  EXPECT_FALSE(r4.ok());  // NOLINT(bugprone-use-after-move): moved-from readers hold no slot
}

// Readers decide without pause while a writer reloads A and B alternately thousands of times.
// Every decision must be the one its own table (named by the checksum) makes: a reader never sees
// a half-loaded or freed table. TSan checks the memory orders in the sanitizer stage.
TEST(Reload, ReadersDecideWhileAnotherThreadReloadsThousandsOfTimes) {
  const Bytes a = table_a(), b = table_b();
  const std::string sum_a = checksum_of(a), sum_b = checksum_of(b);
  auto shared = open_bytes(a);
  constexpr int kReloads = 2000;
  constexpr int kReaders = 3;
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::vector<long> decisions(kReaders, 0);
  std::vector<long> seen_b(kReaders, 0);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      SharedTable::Reader reader(*shared);
      if (!reader.ok()) {
        wrong.fetch_add(1);
        return;
      }
      Input in(reader.acquire().table());
      set_seed_letter(reader.acquire().table(), &in);
      while (!done.load(std::memory_order_relaxed) || decisions[r] < 100) {
        auto guard = reader.acquire();
        const uint32_t verb = guard.table().decide(in).verb;
        const std::string sum = guard.checksum();
        const bool is_b = sum == sum_b;
        if ((!is_b && sum != sum_a) || verb != (is_b ? kNever : kReplayOnce)) wrong.fetch_add(1);
        seen_b[r] += is_b;
        ++decisions[r];
      }
    });
  }
  LoadStatus status;
  int failed = 0;
  for (int i = 0; i < kReloads; ++i) {
    const Bytes& next = i % 2 == 0 ? b : a;
    failed += !shared->reload_bytes(next.data(), next.size(), &status);
  }
  done = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(failed, 0) << status.message;
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(shared->generation(), static_cast<uint64_t>(kReloads));
  for (int r = 0; r < kReaders; ++r) EXPECT_GE(decisions[r], 100);
  // The last swaps may have met a pinned table; with every reader gone, all of them go.
  EXPECT_EQ(shared->reclaim(), 0u);
  EXPECT_EQ(shared->retired_count(), 0u);
}

// A publisher replaces the file by writing a temporary file and renaming it over the path, while
// a reloader keeps reading the path: every reload sees one whole table, never a torn one.
TEST(Reload, TablePublishedByAtomicRenameWhileAReloadIsReading) {
  const Bytes a = table_a(), b = table_b();
  const std::string path = temp_path("published.rgt");
  const std::string tmp = path + ".tmp";
  write_file(path, a);
  LoadStatus status;
  auto shared = SharedTable::open(path, &status);
  ASSERT_NE(shared, nullptr) << status.message;
  std::atomic<bool> done{false};
  std::thread publisher([&] {
    for (int i = 0; i < 500; ++i) {
      write_file(tmp, i % 2 == 0 ? b : a);
      std::rename(tmp.c_str(), path.c_str());
    }
    done = true;
  });
  int reloads = 0, failed = 0;
  std::string first_error;
  while (!done.load() || reloads < 50) {
    if (!shared->reload(path, &status)) {
      if (failed++ == 0) first_error = status.message;
    }
    ++reloads;
  }
  publisher.join();
  EXPECT_EQ(failed, 0) << first_error;
  std::remove(path.c_str());
}

// The same through the C API: reload errors map to codes and the old table keeps deciding.
TEST(ReloadCApi, ReloadCodesAndCheckedDecisions) {
  const std::string good = temp_path("c_good.rgt"), other = temp_path("c_other.rgt"),
                    corrupt = temp_path("c_corrupt.rgt"), small = temp_path("c_small.rgt");
  const Bytes a = table_a();
  Bytes bad = table_b();
  bad[300] ^= 1;
  write_file(good, a);
  write_file(other, table_b());
  write_file(corrupt, bad);
  write_file(small, lower(small_policy()));

  rg_shared* shared = nullptr;
  rg_error err;
  ASSERT_EQ(rg_shared_open(good.c_str(), 0, &shared, &err), RG_OK) << err.message;
  rg_reader* reader = nullptr;
  ASSERT_EQ(rg_reader_new(shared, &reader), RG_OK);
  rg_input* in = nullptr;
  ASSERT_EQ(rg_reader_input_new(reader, &in), RG_OK);
  rg_input_set_string_by_name(in, "topic", "payment.capture", 15);
  rg_input_set_string_by_name(in, "error_class", "timeout", 7);
  rg_input_set_int_by_name(in, "attempts", 1);
  rg_input_set_string_by_name(in, "idempotency_key", "k", 1);
  rg_input_set_bool_by_name(in, "already_committed", 0);
  rg_decision d;
  ASSERT_EQ(rg_reader_decide(reader, in, &d), RG_OK);
  EXPECT_EQ(d.verb, static_cast<uint32_t>(kReplayOnce));
  EXPECT_EQ(std::string(d.table_checksum), checksum_of(a));

  EXPECT_EQ(rg_shared_reload(shared, corrupt.c_str(), &err), RG_ERR_BAD_CHECKSUM);
  EXPECT_EQ(rg_shared_reload(shared, small.c_str(), &err), RG_ERR_INCOMPATIBLE);
  EXPECT_STREQ(err.message, "incompatible table: 4 fields, the current table has 6");
  EXPECT_EQ(rg_shared_reload(shared, "/nonexistent", &err), RG_ERR_IO);
  ASSERT_EQ(rg_reader_decide(reader, in, &d), RG_OK);
  EXPECT_EQ(d.verb, static_cast<uint32_t>(kReplayOnce));
  EXPECT_EQ(rg_shared_generation(shared), 0u);

  const rg_table* pinned = nullptr;
  ASSERT_EQ(rg_reader_acquire(reader, &pinned), RG_OK);
  ASSERT_EQ(rg_shared_reload(shared, other.c_str(), &err), RG_OK) << err.message;
  ASSERT_EQ(rg_reader_decide(reader, in, &d), RG_OK);  // still on the pinned table A
  EXPECT_EQ(d.verb, static_cast<uint32_t>(kReplayOnce));
  EXPECT_EQ(std::string(rg_table_reason(pinned, &d).data, rg_table_reason(pinned, &d).size),
            "the capture timed out before an answer; the idempotency key makes one requeue safe");
  rg_reader_release(reader);
  ASSERT_EQ(rg_reader_decide(reader, in, &d), RG_OK);  // now on B
  EXPECT_EQ(d.verb, static_cast<uint32_t>(kNever));
  EXPECT_EQ(std::string(d.table_checksum), checksum_of(table_b()));
  EXPECT_EQ(rg_shared_generation(shared), 1u);
  // The reader's batch call refuses a field given two columns too, before any row.
  const uint8_t yes[] = {1}, no[] = {0};
  const rg_column twice[] = {
      {kAlreadyCommitted, RG_COLUMN_BOOL, nullptr, nullptr, nullptr, nullptr, yes},
      {kAlreadyCommitted, RG_COLUMN_BOOL, nullptr, nullptr, nullptr, nullptr, no}};
  uint32_t verb = 99;
  EXPECT_EQ(rg_reader_decide_columns(reader, twice, 2, 1, &verb, nullptr), RG_ERR_ARGUMENT);
  EXPECT_EQ(verb, 99u);
  ASSERT_EQ(rg_reader_decide_columns(reader, twice, 1, 1, &verb, nullptr), RG_OK);
  EXPECT_EQ(verb, static_cast<uint32_t>(kHold));  // the other required fields are missing

  rg_shared* tiny = nullptr;
  ASSERT_EQ(rg_shared_open(good.c_str(), 1, &tiny, nullptr), RG_OK);
  rg_reader* r1 = nullptr;
  rg_reader* r2 = nullptr;
  EXPECT_EQ(rg_reader_new(tiny, &r1), RG_OK);
  EXPECT_EQ(rg_reader_new(tiny, &r2), RG_ERR_NO_READER_SLOT);
  EXPECT_EQ(r2, nullptr);
  rg_reader_free(r1);
  rg_shared_free(tiny);

  EXPECT_EQ(rg_shared_open(corrupt.c_str(), 0, &tiny, &err), RG_ERR_BAD_CHECKSUM);
  EXPECT_EQ(tiny, nullptr);
  rg_input_free(in);
  rg_reader_free(reader);
  rg_shared_free(shared);
  for (const std::string& p : {good, other, corrupt, small}) std::remove(p.c_str());
}

}  // namespace
}  // namespace replaygate
