// XXH3-128 streaming updates compiled for AVX2, chosen at run time by the table loader.
//
// Why: the loader hashes every table byte twice (checksum and decision digest; see
// runtime/table_format.h). The header-only xxhash builds for the baseline x86-64 target (SSE2),
// about 14 GB/s here; the AVX2 kernel is about 2.5x faster, which at 1,000,000 rows (130 MB) is
// ~12 ms of a 50 ms load budget. The digests are the same bit for bit whatever kernel computes
// them (XXH3's vector kernels are exact equivalents), so the format does not change.
//
// How: everything xxhash defines here is static (XXH_INLINE_ALL) and compiled under a target
// pragma, so no AVX2 code can leak into another translation unit through a shared inline
// function. The C headers xxhash pulls in are included before the pragma for the same reason.
// Callers check xxh3_wide_available() (the CPU has AVX2) before calling xxh3_wide_update().
#include "runtime/internal/xxh3_wide.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RG_XXH3_WIDE 1
#include <immintrin.h>  // xxhash includes it only when the whole build targets AVX2
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#define XXH_VECTOR XXH_AVX2
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate::detail {
void xxh3_wide_update(void* state, const void* data, size_t size) noexcept {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state), data, size);
}
}  // namespace replaygate::detail

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

namespace replaygate::detail {

bool xxh3_wide_available() noexcept {
#ifdef RG_XXH3_WIDE
  static const bool available = __builtin_cpu_supports("avx2");
  return available;
#else
  return false;
#endif
}

#ifndef RG_XXH3_WIDE
void xxh3_wide_update(void*, const void*, size_t) noexcept { abort(); }  // never called
#endif

}  // namespace replaygate::detail
