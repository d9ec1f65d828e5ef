// A table that workers share and that can be replaced while they decide (hot reload).
//
// Readers take no lock and never allocate: each reader thread owns a hazard slot, publishes the
// table it is about to use there, and re-checks that the table is still current; a reload swaps
// one atomic pointer and frees a replaced table only once no hazard slot names it (deferred
// reclamation, done by later reloads or the destructor). libstdc++ 12's
// std::atomic<std::shared_ptr> takes a lock, so it is not used.
//
// Use:
//   replaygate::LoadStatus status;
//   auto shared = replaygate::SharedTable::open("gate.rgt", &status);  // nullptr on error
//   // in each worker thread:
//   replaygate::SharedTable::Reader reader(*shared);  // claims a slot; reader.ok() is false
//                                                     // when all max_readers slots are taken
//   replaygate::Input in(reader.acquire().table());   // field indices are stable across reloads
//   {
//     auto guard = reader.acquire();                  // the table cannot be freed until ~guard
//     replaygate::Decision d = guard.table().decide(in);
//     guard.checksum();                               // which table made the decision
//   }
//   // in a control thread:
//   if (!shared->reload("gate.rgt", &status)) log(status.message);  // old table keeps serving
//
// Thread safety: reload() may be called from any thread (reloads are serialized by a mutex that
// readers never touch). A Reader and its guards belong to one thread at a time; any number of
// Readers may be active at once, up to max_readers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/table.h"

namespace replaygate {

// Where a SharedTable's reloads come from, when they must pass more than the loader's checks:
// replaygate::verify implements it to check signatures and record rollback state
// (runtime/verify/signed_table.h). A SharedTable constructed with one loads every reload through
// it, and replace() accepts only tables it admits, so no reload of that SharedTable bypasses it.
// Implementations must be thread-safe: reloads may load concurrently (admit() runs under the
// SharedTable's reload lock, one at a time).
class TableSource {
 public:
  virtual ~TableSource() = default;
  // As Table::load_file / Table::load_bytes, plus whatever the source checks; nullptr with
  // *status set on error.
  virtual std::unique_ptr<Table> load_file(const std::string& path, LoadStatus* status) = 0;
  virtual std::unique_ptr<Table> load_bytes(const void* data, size_t size, LoadStatus* status) = 0;
  // Called after the compatibility check and before the swap, with a table this source loaded.
  // False (with *status set) keeps the current table serving. Each loaded table is passed to
  // exactly one of admit() and forget().
  virtual bool admit(const Table& next, LoadStatus* status) = 0;
  // A table this source loaded that will not be admitted (incompatible, or refused).
  virtual void forget(const Table& table) noexcept = 0;
};

class SharedTable {
 public:
  static constexpr uint32_t kDefaultMaxReaders = 64;

  // A loaded table and the facts readers report with each decision.
  struct Entry {
    std::unique_ptr<Table> table;
    char checksum[33] = {};  // 32 hex digits of the header checksum, NUL-terminated
    uint64_t layout = 0;     // layout_fingerprint(*table)
  };

  // Wraps a loaded table (must not be null) with its checksum and layout fingerprint.
  static std::unique_ptr<Entry> make_entry(std::unique_ptr<Table> table);

  // A 64-bit hash of the field layout an input depends on: the field count and each field's
  // name, type, derived flag and source (letter, operator, record: who may set it), in order.
  // Tables that reload() accepts as compatible have the same fingerprint (incompatibility()
  // compares at least these), so the C API can refuse an rg_input made for another table with one
  // compare per decision.
  static uint64_t layout_fingerprint(const Table& table);

  // Loads `path` (Table::load_file). nullptr with *status set when it cannot be loaded.
  static std::unique_ptr<SharedTable> open(const std::string& path, LoadStatus* status,
                                           uint32_t max_readers = kDefaultMaxReaders);
  // Serves `table` (must not be null). max_readers is clamped to [1, 4096].
  explicit SharedTable(std::unique_ptr<Table> table, uint32_t max_readers = kDefaultMaxReaders);
  // Serves `table` (already admitted by `source`) and loads every reload through `source`
  // (must not be null): reload() and reload_bytes() call its load_file / load_bytes, and
  // replace() refuses (kSignature, "not loaded through ...") a table `source` does not admit.
  SharedTable(std::unique_ptr<Table> table, uint32_t max_readers,
              std::shared_ptr<TableSource> source);
  // Frees every table. No Reader may outlive the SharedTable.
  ~SharedTable();
  SharedTable(const SharedTable&) = delete;
  SharedTable& operator=(const SharedTable&) = delete;

  // Reads and verifies `path` completely, checks it is compatible with the current table, then
  // swaps it in. Returns true on success. On failure the current table keeps serving and
  // *status says why: any LoadError from Table::load_file, or kIncompatible (the message
  // "incompatible table: ...") when the fields (names, types, order, derived or not,
  // operator-only, record-only or set from letters) or the verbs
  // (names, order) differ, because workers hold field indices and Inputs sized for the current
  // table.
  bool reload(const std::string& path, LoadStatus* status);
  // As reload(), from bytes (Table::load_bytes).
  bool reload_bytes(const void* data, size_t size, LoadStatus* status);
  // As reload(), with an already loaded table (must not be null). With a TableSource, the source
  // must admit it (TableSource::admit) after the compatibility check, else the current table keeps
  // serving.
  bool replace(std::unique_ptr<Table> table, LoadStatus* status);

  // How many tables were swapped in since construction, and how many replaced ones still wait
  // for readers to move on (for tests and metrics).
  uint64_t generation() const noexcept { return generation_.load(std::memory_order_relaxed); }
  size_t retired_count() const;
  // Frees every replaced table no reader pins any more and returns how many are still pinned.
  // reload() does this after each swap; call it when reloads are rare and memory matters.
  size_t reclaim();

  // Empty when `next` can replace `current` without invalidating field indices, Inputs or verb
  // indices; otherwise why not.
  static std::string incompatibility(const Table& current, const Table& next);

  class Guard;
  // Internal: one hazard pointer per reader, each on its own cache line so readers do not
  // contend.
  struct alignas(64) Slot {
    std::atomic<bool> claimed{false};
    std::atomic<const Entry*> hazard{nullptr};
  };

  // One reader thread's hazard slot. Construction claims a free slot (ok() is false when none
  // is left); destruction releases it. Not copyable; movable.
  class Reader {
   public:
    explicit Reader(SharedTable& shared) noexcept;
    ~Reader();
    Reader(Reader&& other) noexcept;
    Reader& operator=(Reader&&) = delete;
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    bool ok() const noexcept { return slot_ != nullptr; }
    // Pins the current table until the guard is destroyed. Lock-free and allocation-free; must
    // not be nested (one guard per Reader at a time). Requires ok().
    Guard acquire() noexcept;

   private:
    friend class Guard;
    SharedTable* shared_ = nullptr;
    Slot* slot_ = nullptr;
  };

  // The pinned table. Destroying the guard unpins it.
  class Guard {
   public:
    ~Guard() {
      if (slot_ != nullptr) slot_->store(nullptr, std::memory_order_release);
    }
    Guard(Guard&& other) noexcept : slot_(other.slot_), entry_(other.entry_) {
      other.slot_ = nullptr;
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    Guard& operator=(Guard&&) = delete;

    const Table& table() const noexcept { return *entry_->table; }
    const char* checksum() const noexcept { return entry_->checksum; }  // 32 hex digits
    const Entry& entry() const noexcept { return *entry_; }

   private:
    friend class Reader;
    Guard(std::atomic<const Entry*>* slot, const Entry* entry) noexcept
        : slot_(slot), entry_(entry) {}
    std::atomic<const Entry*>* slot_;
    const Entry* entry_;
  };

 private:
  void free_unpinned();  // requires mutex_

  std::atomic<const Entry*> current_{nullptr};
  std::atomic<uint64_t> generation_{0};
  std::unique_ptr<Slot[]> slots_;
  uint32_t slot_count_ = 0;
  mutable std::mutex mutex_;                   // serializes reloads; readers never take it
  std::vector<std::unique_ptr<Entry>> owned_;  // the current entry and the retired ones
  std::shared_ptr<TableSource> source_;        // null: plain Table loads
};

}  // namespace replaygate
