// Private to the runtime: an AVX2 build of XXH3-128's streaming update, used by the loader when
// the CPU has AVX2 (runtime/internal/xxh3_wide.cc says why). Not installed; included only by
// runtime/*.cc (tests may include it).
#pragma once

#include <cstddef>

namespace replaygate::detail {

// True when this build has the AVX2 kernel and the CPU running it supports AVX2.
bool xxh3_wide_available() noexcept;

// XXH3_128bits_update(state, data, size) with the AVX2 kernel: `state` is an XXH3_state_t reset
// by XXH3_128bits_reset (its layout does not depend on the kernel). Only when available() holds.
void xxh3_wide_update(void* state, const void* data, size_t size) noexcept;

}  // namespace replaygate::detail
