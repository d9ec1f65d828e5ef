// --trusted-key / --require-signed / --trust-state and the CLI's one verified table load.
#include "tools/cli/trust.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>

#include "common/escape.h"
#include "tools/cli/commands.h"

namespace replaygate::cli {

void add_trust_options(CLI::App& sub, TrustFlags* flags, bool acting) {
  sub.add_option("--trusted-key", flags->trusted_keys,
                 "A public key file (replaygate key generate) the table must be signed by; "
                 "repeat for rotation. With a key pinned an unsigned table is refused")
      ->allow_extra_args(false);  // one file per --trusted-key: never the next positional
  sub.add_flag("--require-signed", flags->require_signed,
               "Refuse every table unless it is signed by a --trusted-key (so a configuration "
               "that lost its keys fails closed)");
  if (acting) {
    sub.add_option("--trust-state", flags->trust_state,
                   "Directory of rollback state: refuse a table older than (or conflicting with) "
                   "one activated here before, and record this one");
  }
}

bool read_trust(const TrustFlags& flags, verify::TrustOptions* trust) {
  trust->require_signed = flags.require_signed;
  trust->trust_state = flags.trust_state;
  trust->policy_id = flags.policy_id;
  for (const std::string& path : flags.trusted_keys) {
    trust->keys.emplace_back();
    std::string error;
    if (!verify::read_public_key(path, &trust->keys.back(), &error)) {
      std::fprintf(stderr, "replaygate: error: --trusted-key: %s\n", escape_control(error).c_str());
      return false;
    }
  }
  return true;
}

int load_table_trusted(const std::string& path, const TrustFlags& flags,
                       std::unique_ptr<Table>* table, verify::Verified* info, LoadStatus* failure) {
  table->reset();
  verify::TrustOptions trust;
  if (!read_trust(flags, &trust)) return kExitUsage;
  LoadStatus status;
  *table = verify::load_table_file(path, trust, info, &status);
  if (*table == nullptr) {
    std::fprintf(stderr, "%s\n", describe_load_failure(path, status).c_str());
    if (failure != nullptr) *failure = status;
    return kExitUsage;
  }
  return kExitOk;
}

std::string describe_load_failure(const std::string& path, const LoadStatus& status) {
  // The loader's messages may already start with the error's name ("truncated: ..."): say it once.
  const std::string name = load_error_name(status.error);
  std::string out = "replaygate: cannot load table " + path + ": ";
  if (status.message.empty()) return out + name;
  if (status.message.rfind(name + ":", 0) == 0) return out + status.message;
  return out + name + ": " + status.message;
}

bool parse_utc_time(const std::string& text, int64_t* seconds) {
  struct tm tm {};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0' || text.size() != 20) return false;
  struct tm normalised = tm;  // timegm() normalises its argument in place
  const time_t t = ::timegm(&normalised);
  if (t < 0) return false;
  // strptime accepts out-of-range days that timegm normalises (2027-02-31): refuse them.
  struct tm back {};
  if (::gmtime_r(&t, &back) == nullptr || back.tm_mday != tm.tm_mday || back.tm_mon != tm.tm_mon) {
    return false;
  }
  *seconds = static_cast<int64_t>(t);
  return true;
}

}  // namespace replaygate::cli
