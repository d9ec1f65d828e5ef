// The C API's handle types, for the runtime's C API (runtime/c_api.cc) and the C API's verified
// loads (runtime/verify/c_api_verify.cc, which build the same handles): LoadError -> rg_status,
// and the rg_error fillers both use. In: the runtime's public types; out: the handles and the
// status helpers. Not installed (runtime/CMakeLists.txt installs the C and C++ API headers only):
// the C API's own extensions include it, out of runtime/internal/, which no other folder includes.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>

#include "runtime/reload.h"
#include "runtime/replaygate.h"
#include "runtime/table.h"

struct rg_shared {
  std::unique_ptr<replaygate::SharedTable> shared;
};

namespace replaygate::detail {

// rg_table is an incomplete C type; its pointers are SharedTable::Entry pointers.
inline const SharedTable::Entry* entry_of(const rg_table* t) {
  return reinterpret_cast<const SharedTable::Entry*>(t);
}
inline const rg_table* handle_of(const SharedTable::Entry* e) {
  return reinterpret_cast<const rg_table*>(e);
}

// LoadError and rg_status share their values 0..9; the verifier's errors map to 15..17.
inline rg_status status_of(const LoadStatus& status) {
  switch (status.error) {
    case LoadError::kSignature:
      return RG_ERR_SIGNATURE;
    case LoadError::kRollback:
      return RG_ERR_ROLLBACK;
    case LoadError::kExpired:
      return RG_ERR_EXPIRED;
    default:
      return status.ok() ? RG_OK : static_cast<rg_status>(status.error);
  }
}

// Fills *err (may be NULL) with `status` and `message` (cut to fit) and returns `status`.
inline rg_status fail(rg_error* err, rg_status status, std::string_view message) {
  if (err != nullptr) {
    err->status = status;
    const size_t n = std::min(message.size(), sizeof err->message - 1);
    std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
  }
  return status;
}

// Clears *err (may be NULL) and returns RG_OK.
inline rg_status ok(rg_error* err) {
  if (err != nullptr) {
    err->status = RG_OK;
    err->message[0] = '\0';
  }
  return RG_OK;
}

// Internal linkage: the runtime builds both with and without exceptions, and each translation
// unit keeps its own copy.
namespace {
// Runs `f` (which returns rg_status), turning std::bad_alloc into RG_ERR_NO_MEMORY when the
// runtime is built with exceptions (without them, allocation failure terminates).
template <typename F>
rg_status guarded(rg_error* err, F&& f) {
#if defined(__cpp_exceptions)
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(err, RG_ERR_NO_MEMORY, "out of memory");
  } catch (...) {
    return fail(err, RG_ERR_NO_MEMORY, "unexpected error");
  }
#else
  (void)err;
  return f();
#endif
}
}  // namespace

}  // namespace replaygate::detail
