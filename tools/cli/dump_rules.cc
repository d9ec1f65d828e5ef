// Bounded fingerprint set and the run-wide dump rules of `replaygate decide` (dump_rules.h).
#include "tools/cli/dump_rules.h"

#define XXH_INLINE_ALL
#include <sys/mman.h>
#include <xxhash.h>

#include <cstdlib>
#include <new>
#include <utility>

namespace replaygate::cli {
namespace {

constexpr size_t kFirstSlots = 1024;
constexpr size_t kHugePage = size_t{2} << 20;

// Smallest power-of-two slot count that holds `keys` at a load of at most 3/4.
uint64_t slots_for(uint64_t keys) {
  uint64_t slots = kFirstSlots;
  while (slots / 4 * 3 < keys) slots *= 2;
  return slots;
}

// Spreads the fingerprint's bits over the index (XXH3 output is already uniform; this guards
// against test fingerprints that are not).
size_t home(uint64_t fingerprint, size_t mask) {
  return static_cast<size_t>((fingerprint * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

}  // namespace

ReplayedKeys::ReplayedKeys(uint64_t max_keys) : max_keys_(max_keys) {}

uint64_t ReplayedKeys::fingerprint(std::string_view key) noexcept {
  const uint64_t h = XXH3_64bits(key.data(), key.size());
  return h == 0 ? 1 : h;
}

uint64_t ReplayedKeys::max_bytes(uint64_t max_keys) noexcept {
  return max_keys == 0 ? 0 : slots_for(max_keys) * sizeof(uint64_t);
}

bool ReplayedKeys::contains(uint64_t fingerprint) const noexcept {
  if (size_ == 0) return false;
  for (size_t i = home(fingerprint, mask_);; i = (i + 1) & mask_) {
    if (slots_.data[i] == fingerprint) return true;
    if (slots_.data[i] == 0) return false;
  }
}

void ReplayedKeys::prefetch(uint64_t fingerprint) const noexcept {
  if (slots_.data == nullptr) return;
  const size_t i = home(fingerprint, mask_);
  __builtin_prefetch(&slots_.data[i]);
  __builtin_prefetch(&slots_.data[(i + 8) & mask_]);  // probes often run into the next line
}

ReplayedKeys::Slots::Slots(size_t slots) : bytes(slots * sizeof(uint64_t)) {
  if (bytes >= kHugePage) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without it the array still works
    data = static_cast<uint64_t*>(p);
    mapped = true;
  } else {
    data = static_cast<uint64_t*>(std::calloc(slots, sizeof(uint64_t)));
    if (data == nullptr) throw std::bad_alloc();
  }
}

ReplayedKeys::Slots::Slots(Slots&& other) noexcept
    : data(std::exchange(other.data, nullptr)),
      bytes(std::exchange(other.bytes, 0)),
      mapped(std::exchange(other.mapped, false)) {}

ReplayedKeys::Slots& ReplayedKeys::Slots::operator=(Slots&& other) noexcept {
  if (this != &other) {
    Slots old(std::move(*this));
    data = std::exchange(other.data, nullptr);
    bytes = std::exchange(other.bytes, 0);
    mapped = std::exchange(other.mapped, false);
  }
  return *this;
}

ReplayedKeys::Slots::~Slots() {
  if (mapped) {
    ::munmap(data, bytes);
  } else {
    std::free(data);
  }
}

bool ReplayedKeys::insert(uint64_t fingerprint) {
  if (size_ >= max_keys_) return false;
  if (slots_.data == nullptr || (size_ + 1) > (mask_ + 1) / 4 * 3) grow();
  size_t i = home(fingerprint, mask_);
  while (slots_.data[i] != 0) i = (i + 1) & mask_;
  slots_.data[i] = fingerprint;
  ++size_;
  return true;
}

void ReplayedKeys::grow() {
  const size_t slots = slots_.data == nullptr ? kFirstSlots : (mask_ + 1) * 2;
  Slots fresh(slots);
  const size_t mask = slots - 1;
  for (size_t k = 0; slots_.data != nullptr && k <= mask_; ++k) {
    const uint64_t f = slots_.data[k];
    if (f == 0) continue;
    size_t i = home(f, mask);
    while (fresh.data[i] != 0) i = (i + 1) & mask;
    fresh.data[i] = f;
  }
  slots_ = std::move(fresh);
  mask_ = mask;
}

DumpRules::DumpRules(int64_t max_replays, uint64_t max_keys, Fingerprint fingerprint)
    : max_replays_(max_replays), fingerprint_(fingerprint), keys_(max_keys) {}

uint64_t DumpRules::fingerprint_of(std::string_view key) const noexcept {
  const uint64_t f = fingerprint_(key);
  return f == 0 ? 1 : f;
}

DumpRules::Outcome DumpRules::judge(const std::string_view* key) {
  if (key == nullptr) return judge_fingerprint(nullptr);
  const uint64_t f = fingerprint_of(*key);
  return judge_fingerprint(&f);
}

DumpRules::Outcome DumpRules::judge_fingerprint(const uint64_t* fingerprint) {
  if (fingerprint != nullptr && keys_.contains(*fingerprint)) return Outcome::kDuplicate;
  if (max_replays_ >= 0 && replays_ >= static_cast<uint64_t>(max_replays_)) {
    return Outcome::kBudget;
  }
  if (fingerprint != nullptr && !keys_.insert(*fingerprint)) return Outcome::kKeyLimit;
  ++replays_;
  return Outcome::kReplay;
}

}  // namespace replaygate::cli
