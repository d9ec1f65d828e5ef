// Table hashing, private to the runtime (runtime/internal/: never included outside runtime/;
// tests may include it): the XXH3-128 stream (AVX2 kernel when the CPU has it), and TableHasher,
// which computes a table's checksum, decision digest and provenance digest
// (runtime/table_format.h) while its bytes arrive. The loader (runtime/load.cc) uses it; the
// accessors print digests with hex128().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/internal/xxh3_wide.h"
#include "runtime/table_format.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate::detail {

namespace fm = replaygate::format;

inline std::string hex128(const uint8_t digest[16]) {
  uint64_t low = 0, high = 0;
  std::memcpy(&low, digest, 8);
  std::memcpy(&high, digest + 8, 8);
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return buf;
}

inline std::string hex128(XXH128_hash_t h) {
  uint8_t bytes[16];
  std::memcpy(bytes, &h.low64, 8);
  std::memcpy(bytes + 8, &h.high64, 8);
  return hex128(bytes);
}

inline bool in_range(uint64_t begin, uint64_t count, uint64_t size) {
  return begin <= size && count <= size - begin;
}

// One XXH3-128 stream, updated by the AVX2 kernel when the CPU has it
// (runtime/internal/xxh3_wide.cc).
class Xxh128 {
 public:
  Xxh128() { XXH3_128bits_reset(&state_); }
  void update(const void* data, size_t size) {
    if (size == 0) return;
    if (xxh3_wide_available()) {
      xxh3_wide_update(&state_, data, size);
    } else {
      XXH3_128bits_update(&state_, data, size);
    }
  }
  XXH128_hash_t digest() const { return XXH3_128bits_digest(&state_); }

 private:
  XXH3_state_t state_;
};

inline bool digest_equals(const uint8_t stored[16], XXH128_hash_t h) {
  uint8_t bytes[16];
  std::memcpy(bytes, &h.low64, 8);
  std::memcpy(bytes + 8, &h.high64, 8);
  return std::memcmp(stored, bytes, 16) == 0;
}

// The bytes are copied (or read) into the table's buffer in pieces of this size, and each piece is
// hashed right after, while it is still in cache: the three digests then cost one pass over
// memory instead of three (two of them over nearly the whole table).
constexpr size_t kChunk = size_t{256} << 10;

// Computes the checksum, decision digest and provenance digest (runtime/table_format.h) of a
// table while its bytes arrive, in order and without gaps, through feed(). The decision and
// provenance digests need the section directory: once the directory bytes have arrived and look
// usable (kinds in order, sections in bounds and ascending), the hasher plans which byte ranges
// feed which digest. When they do not, planned() is false and the loader, which will then reject
// the directory anyway, computes nothing from the plan.
class TableHasher {
 public:
  explicit TableHasher(size_t size) : size_(size) {}

  // Bytes [from, to) of the table at `base` have arrived; `from` is the previous call's `to`.
  void feed(const uint8_t* base, size_t from, size_t to) {
    // The checksum covers the file with its own 16 bytes taken as zero.
    constexpr size_t kSumBegin = fm::kChecksumOffset, kSumEnd = fm::kChecksumOffset + 16;
    static constexpr uint8_t kZeros[16] = {};
    size_t at = from;
    if (at < kSumBegin) {
      const size_t end = std::min(to, kSumBegin);
      checksum_.update(base + at, end - at);
      at = end;
    }
    if (at < to && at < kSumEnd) {
      const size_t end = std::min(to, kSumEnd);
      checksum_.update(kZeros, end - at);
      at = end;
    }
    checksum_.update(base + at, to - at);

    if (!planned_ && !unplannable_ && (to >= kMaxDirectoryEnd || to == size_)) plan(base, to);
    if (planned_) {
      for (; segment_ < segment_count_ && segments_[segment_].offset <= to; ++segment_) {
        const Segment& s = segments_[segment_];
        if (!prefixed_) {  // each section is preceded by its kind (u32) and length (u64)
          decision_.update(&s.kind, sizeof(s.kind));
          decision_.update(&s.length, sizeof(s.length));
          prefixed_ = true;
        }
        const uint64_t begin = std::max<uint64_t>(s.offset, fed_), end = s.offset + s.length;
        decision_.update(base + begin, std::min<uint64_t>(end, to) - begin);
        if (end > to) break;
        prefixed_ = false;
      }
      if (provenance_.offset < to && provenance_.offset + provenance_.length > fed_) {
        const uint64_t begin = std::max<uint64_t>(provenance_.offset, fed_);
        const uint64_t end = std::min<uint64_t>(provenance_.offset + provenance_.length, to);
        provenance_digest_.update(base + begin, end - begin);
      }
      fed_ = to;
    }
  }

  XXH128_hash_t checksum() const { return checksum_.digest(); }
  bool planned() const { return planned_; }
  XXH128_hash_t decision_digest() const { return decision_.digest(); }
  XXH128_hash_t provenance_digest() const { return provenance_digest_.digest(); }

 private:
  static constexpr size_t kMaxDirectoryEnd =
      sizeof(fm::Header) + fm::kMaxSectionCount * sizeof(fm::SectionEntry);

  struct Segment {
    uint32_t kind;
    uint64_t offset, length;
  };

  // `base` holds [0, available); the directory must lie in it.
  void plan(const uint8_t* base, size_t available) {
    unplannable_ = true;
    if (available < sizeof(fm::Header)) return;
    fm::Header h;
    std::memcpy(&h, base, sizeof(h));
    if (h.section_count < fm::kSectionCount || h.section_count > fm::kMaxSectionCount) return;
    if (sizeof(fm::Header) + h.section_count * sizeof(fm::SectionEntry) > available) return;
    uint64_t previous_end = 0;
    for (uint32_t i = 0; i < h.section_count; ++i) {
      fm::SectionEntry e;
      std::memcpy(&e, base + sizeof(fm::Header) + i * sizeof(e), sizeof(e));
      if (e.kind != i + 1 || !in_range(e.offset, e.length, size_) || e.offset < previous_end) {
        return;
      }
      previous_end = e.offset + e.length;
      if (e.kind == fm::kProvenance) {
        provenance_ = {e.kind, e.offset, e.length};
      } else {
        segments_[segment_count_++] = {e.kind, e.offset, e.length};
      }
    }
    unplannable_ = false;
    planned_ = true;
  }

  size_t size_;
  Xxh128 checksum_, decision_, provenance_digest_;
  bool planned_ = false, unplannable_ = false;
  Segment segments_[fm::kMaxSectionCount] = {};  // decision digest input, in file order
  uint32_t segment_count_ = 0;
  uint32_t segment_ = 0;   // the first segment not completely fed
  bool prefixed_ = false;  // segments_[segment_]'s kind and length are fed
  Segment provenance_{};
  uint64_t fed_ = 0;  // bytes [0, fed_) went through the plan
};

}  // namespace replaygate::detail
