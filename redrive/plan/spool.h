// An external sort in bounded memory: what a plan build needs to list a million letters once each,
// with their counts, without holding them (docs/plans.md, "Memory").
//
// In: (key, payload) pairs, any number, any order. Out: each distinct key once, in byte order of
// the keys, with the payload of its first pair (insertion order) and how many pairs had it. Pairs
// are kept in memory up to a byte budget, then sorted and spilled to a run file beside
// `path_prefix` (PREFIX.run.N, removed by the destructor and on success); merge() reads every run
// at once, a buffered record from each.
//
// Threads: one thread. Errors: false with error() (a full disk, an unreadable run file).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "redrive/plan/plan.h"

namespace replaygate::plan {

class Spool {
 public:
  explicit Spool(std::string path_prefix, size_t memory_budget = size_t{16} << 20);
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  bool add(std::string_view key, std::string_view payload);
  // Calls `each` once per distinct key in key order: the key, the first payload added with it,
  // and how many pairs carried it. `each` returns false to stop (merge then returns true).
  bool merge(const std::function<bool(std::string_view key, std::string_view first_payload,
                                      uint64_t count)>& each);
  const std::string& error() const { return error_; }
  size_t runs() const { return runs_.size(); }

 private:
  struct Pair {
    std::string key, payload;
    uint64_t seq = 0;
  };
  bool spill();
  std::string prefix_;
  size_t budget_, held_bytes_ = 0;
  uint64_t seq_ = 0;
  std::vector<Pair> pairs_;
  std::vector<std::string> runs_;
  std::string error_;
};

// The letters a build selects, each copy added as it is read, listed once per identity with its
// count in identity order (a plan's letters are a set: their order says nothing), in bounded
// memory. Also counts the planned replays per idempotency key, so the build can warn of keys two
// letters share (the ledger lets one of them replay).
class LetterSet {
 public:
  explicit LetterSet(const std::string& path_prefix, size_t memory_budget = size_t{16} << 20);
  bool add(const PlanLetter& letter);
  // Writes every letter to `writer` (begun), then calls `shared_key` for each idempotency key
  // that more than one planned replay carries. False with error() on a spool or writer failure.
  bool write(PlanWriter& writer,
             const std::function<void(std::string_view key, uint64_t replays)>& shared_key);
  const std::string& error() const { return error_; }

 private:
  Spool letters_, replay_keys_;
  std::string error_;
};

}  // namespace replaygate::plan
