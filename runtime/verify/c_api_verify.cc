// The verified loads of the C API (replaygate_verify.h) over replaygate::verify.
#include <cstring>
#include <new>
#include <string>
#include <string_view>

#include "runtime/c_api_handles.h"
#include "runtime/verify/replaygate_verify.h"
#include "runtime/verify/signed_table.h"

namespace {

namespace rv = replaygate::verify;
using replaygate::LoadStatus;
using replaygate::SharedTable;
using replaygate::Table;

constexpr uint32_t kMaxReaders = 4096;  // as rg_shared_open

using replaygate::detail::fail;
using replaygate::detail::ok;

static_assert(rv::kRequireSignedFlag == RG_TRUST_REQUIRE_SIGNED);

// Builds the trust options; RG_OK or RG_ERR_ARGUMENT with the message.
rg_status trust_of(const char* const* keys, size_t nkeys, const char* trust_state, uint32_t flags,
                   rv::TrustOptions* out, rg_error* err) {
  std::string error;
  if (!rv::trust_options_from(keys, nkeys, trust_state, flags, out, &error)) {
    return fail(err, RG_ERR_ARGUMENT, error);
  }
  return RG_OK;
}

using replaygate::detail::guarded;

}  // namespace

extern "C" {

rg_status rg_table_load_verified(const char* path, const char* const* trusted_keys, size_t nkeys,
                                 const char* trust_state, uint32_t flags, rg_table** out,
                                 rg_error* err) {
  if (out == nullptr) return fail(err, RG_ERR_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (path == nullptr) return fail(err, RG_ERR_ARGUMENT, "path is NULL");
  return guarded(err, [&] {
    rv::TrustOptions trust;
    if (rg_status s = trust_of(trusted_keys, nkeys, trust_state, flags, &trust, err); s != RG_OK) {
      return s;
    }
    LoadStatus status;
    std::unique_ptr<Table> table = rv::load_table_file(path, trust, nullptr, &status);
    if (table == nullptr) {
      return fail(err, replaygate::detail::status_of(status), status.message);
    }
    *out = const_cast<rg_table*>(
        replaygate::detail::handle_of(SharedTable::make_entry(std::move(table)).release()));
    return ok(err);
  });
}

rg_status rg_shared_open_verified(const char* path, const char* const* trusted_keys, size_t nkeys,
                                  const char* trust_state, uint32_t flags, uint32_t max_readers,
                                  rg_shared** out, rg_error* err) {
  if (out == nullptr) return fail(err, RG_ERR_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (path == nullptr) return fail(err, RG_ERR_ARGUMENT, "path is NULL");
  if (max_readers > kMaxReaders) {
    return fail(err, RG_ERR_ARGUMENT,
                "max_readers " + std::to_string(max_readers) + " is over the limit of " +
                    std::to_string(kMaxReaders));
  }
  return guarded(err, [&] {
    rv::TrustOptions trust;
    if (rg_status s = trust_of(trusted_keys, nkeys, trust_state, flags, &trust, err); s != RG_OK) {
      return s;
    }
    LoadStatus status;
    auto shared = rv::open_shared(
        path, trust, max_readers == 0 ? SharedTable::kDefaultMaxReaders : max_readers, &status);
    if (shared == nullptr) return fail(err, replaygate::detail::status_of(status), status.message);
    *out = new rg_shared{std::move(shared)};
    return ok(err);
  });
}

}  // extern "C"
