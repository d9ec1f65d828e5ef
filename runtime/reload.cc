// SharedTable: hot reload with hazard-pointer readers and deferred reclamation (see reload.h).
#include "runtime/reload.h"

#include <algorithm>
#include <cstring>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate {

std::unique_ptr<SharedTable::Entry> SharedTable::make_entry(std::unique_ptr<Table> table) {
  auto entry = std::make_unique<Entry>();
  std::string hex = table->checksum_hex();
  std::memcpy(entry->checksum, hex.data(), std::min(hex.size(), sizeof entry->checksum - 1));
  entry->layout = layout_fingerprint(*table);
  entry->table = std::move(table);
  return entry;
}

uint64_t SharedTable::layout_fingerprint(const Table& table) {
  // Length-prefixed, so ("ab", "c") and ("a", "bc") differ.
  std::string bytes;
  auto put = [&](uint64_t v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(table.field_count());
  for (uint32_t f = 0; f < table.field_count(); ++f) {
    const FieldInfo info = table.field(f);
    put(info.name.size());
    bytes.append(info.name);
    // Who may set the field is part of the layout: an input made for a table where a field is
    // set from letters may hold a value there (through the generic setters) that the table
    // with `source: operator` or `source: record` for it must never take from a message.
    put((uint64_t{static_cast<uint8_t>(info.source)} << 16) |
        (uint64_t{static_cast<uint8_t>(info.type)} << 8) | (table.field_derived(f) ? 1 : 0));
  }
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::unique_ptr<SharedTable> SharedTable::open(const std::string& path, LoadStatus* status,
                                               uint32_t max_readers) {
  std::unique_ptr<Table> table = Table::load_file(path, status);
  if (table == nullptr) return nullptr;
  return std::make_unique<SharedTable>(std::move(table), max_readers);
}

SharedTable::SharedTable(std::unique_ptr<Table> table, uint32_t max_readers)
    : slot_count_(std::clamp<uint32_t>(max_readers, 1, 4096)) {
  slots_ = std::make_unique<Slot[]>(slot_count_);
  owned_.push_back(make_entry(std::move(table)));
  current_.store(owned_.back().get(), std::memory_order_release);
}

SharedTable::SharedTable(std::unique_ptr<Table> table, uint32_t max_readers,
                         std::shared_ptr<TableSource> source)
    : SharedTable(std::move(table), max_readers) {
  source_ = std::move(source);
}

SharedTable::~SharedTable() = default;

// Compares at least what layout_fingerprint() hashes, so an accepted reload keeps the inputs the
// C API made for the previous table valid.
std::string SharedTable::incompatibility(const Table& current, const Table& next) {
  if (current.field_count() != next.field_count()) {
    return "incompatible table: " + std::to_string(next.field_count()) + " fields, the current " +
           "table has " + std::to_string(current.field_count());
  }
  for (uint32_t f = 0; f < current.field_count(); ++f) {
    FieldInfo a = current.field(f), b = next.field(f);
    if (a.name != b.name || a.type != b.type) {
      return "incompatible table: field " + std::to_string(f) + " is " + std::string(b.name) +
             " (" + field_type_name(b.type) + "), the current table has " + std::string(a.name) +
             " (" + field_type_name(a.type) + ")";
    }
    // A derived field ignores its Input value: workers that set it would silently lose it.
    if (current.field_derived(f) != next.field_derived(f)) {
      return "incompatible table: field " + std::to_string(f) + " (" + std::string(b.name) +
             ") is " + (next.field_derived(f) ? "derived" : "an input") +
             ", the current table has it as " + (current.field_derived(f) ? "derived" : "an input");
    }
    // Who may set a field decides whether readers of letters take it from the message; a reader
    // built for the current table (the JSONL binding's) must not meet a different answer.
    if (a.source != b.source) {
      const auto who = [](FieldSource s) {
        return s == FieldSource::kOperator ? "operator-only"
               : s == FieldSource::kRecord ? "record-only"
                                           : "set from letters";
      };
      return "incompatible table: field " + std::to_string(f) + " (" + std::string(b.name) +
             ") is " + who(b.source) + ", the current table has it as " + who(a.source);
    }
  }
  if (current.verb_count() != next.verb_count()) {
    return "incompatible table: " + std::to_string(next.verb_count()) + " verbs, the current " +
           "table has " + std::to_string(current.verb_count());
  }
  for (uint32_t v = 0; v < current.verb_count(); ++v) {
    if (current.verb_name(v) != next.verb_name(v)) {
      return "incompatible table: verb " + std::to_string(v) + " is " +
             std::string(next.verb_name(v)) + ", the current table has " +
             std::string(current.verb_name(v));
    }
  }
  return {};
}

bool SharedTable::reload(const std::string& path, LoadStatus* status) {
  LoadStatus ignored;
  if (status == nullptr) status = &ignored;
  // Read and verify outside the lock: a slow disk must not delay a concurrent reload's swap.
  std::unique_ptr<Table> table =
      source_ != nullptr ? source_->load_file(path, status) : Table::load_file(path, status);
  if (table == nullptr) return false;
  return replace(std::move(table), status);
}

bool SharedTable::reload_bytes(const void* data, size_t size, LoadStatus* status) {
  LoadStatus ignored;
  if (status == nullptr) status = &ignored;
  std::unique_ptr<Table> table = source_ != nullptr ? source_->load_bytes(data, size, status)
                                                    : Table::load_bytes(data, size, status);
  if (table == nullptr) return false;
  return replace(std::move(table), status);
}

bool SharedTable::replace(std::unique_ptr<Table> table, LoadStatus* status) {
  LoadStatus ignored;
  if (status == nullptr) status = &ignored;
  std::unique_ptr<Entry> entry = make_entry(std::move(table));
  std::lock_guard<std::mutex> lock(mutex_);
  const Entry* old = current_.load(std::memory_order_relaxed);  // only writers store, under mutex_
  std::string why = incompatibility(*old->table, *entry->table);
  if (!why.empty()) {
    if (source_ != nullptr) source_->forget(*entry->table);
    *status = {LoadError::kIncompatible, std::move(why)};
    return false;
  }
  // The source's state (rollback protection) is written here, after every check and before the
  // swap: a table it records is one that then serves.
  if (source_ != nullptr && !source_->admit(*entry->table, status)) return false;
  owned_.push_back(std::move(entry));
  // seq_cst pairs with the readers' seq_cst hazard store and re-check (see Reader::acquire).
  current_.store(owned_.back().get(), std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_relaxed);
  free_unpinned();
  *status = {};
  return true;
}

void SharedTable::free_unpinned() {
  const Entry* now = current_.load(std::memory_order_relaxed);
  auto pinned = [&](const Entry* e) {
    for (uint32_t i = 0; i < slot_count_; ++i) {
      if (slots_[i].hazard.load(std::memory_order_seq_cst) == e) return true;
    }
    return false;
  };
  std::erase_if(
      owned_, [&](const std::unique_ptr<Entry>& e) { return e.get() != now && !pinned(e.get()); });
}

size_t SharedTable::reclaim() {
  std::lock_guard<std::mutex> lock(mutex_);
  free_unpinned();
  return owned_.size() - 1;
}

size_t SharedTable::retired_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return owned_.size() - 1;
}

SharedTable::Reader::Reader(SharedTable& shared) noexcept : shared_(&shared) {
  for (uint32_t i = 0; i < shared.slot_count_; ++i) {
    bool expected = false;
    if (shared.slots_[i].claimed.compare_exchange_strong(expected, true,
                                                         std::memory_order_acq_rel)) {
      slot_ = &shared.slots_[i];
      return;
    }
  }
}

SharedTable::Reader::Reader(Reader&& other) noexcept : shared_(other.shared_), slot_(other.slot_) {
  other.slot_ = nullptr;
}

SharedTable::Reader::~Reader() {
  if (slot_ == nullptr) return;
  slot_->hazard.store(nullptr, std::memory_order_release);
  slot_->claimed.store(false, std::memory_order_release);
}

SharedTable::Guard SharedTable::Reader::acquire() noexcept {
  const Entry* entry = shared_->current_.load(std::memory_order_acquire);
  for (;;) {
    // Publish, then re-check: if the pointer is still current after the hazard is visible, a
    // reload that swapped it out later will see the hazard and keep the entry alive.
    slot_->hazard.store(entry, std::memory_order_seq_cst);
    const Entry* again = shared_->current_.load(std::memory_order_seq_cst);
    if (again == entry) return Guard(&slot_->hazard, entry);
    entry = again;
  }
}

}  // namespace replaygate
