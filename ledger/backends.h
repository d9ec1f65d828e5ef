// Internal to ledger/: the backends' constructors and the checks they share. Never included
// outside ledger/.
#pragma once

#include <string>
#include <string_view>

#include "ledger/ledger.h"

namespace replaygate::ledger::internal {

// `path` is a file path (the "sqlite:" prefix already removed).
Result<std::unique_ptr<Ledger>> open_sqlite(const std::string& path, const Options& options);
// `conninfo` is a libpq connection URI.
Result<std::unique_ptr<Ledger>> open_postgres(const std::string& conninfo, const Options& options);
// migrate_ledger() per backend: the same arguments.
Result<Migrated> migrate_sqlite(const std::string& path, const Options& options);
Result<Migrated> migrate_postgres(const std::string& conninfo, const Options& options);

// The refusals of another schema version, the same words on both backends (`describe` names the
// ledger): older than kSchemaVersion ("... run `replaygate ledger migrate ...`") or newer ("...
// upgrade replaygate").
Error schema_version_error(const std::string& describe, long long version);

// mark's refusal of moving (key, generation), found in `current` (nullopt: no such row), to
// `state`, the same words on both backends; nullopt when the mark may go ahead.
std::optional<Error> mark_refusal(const std::string& describe, std::string_view key,
                                  std::int64_t generation, std::optional<State> current,
                                  State state);

// Valid UTF-8 (no overlongs, no surrogates) without NUL bytes.
bool clean_text(std::string_view s);

// The fixed-width text of format_time, and back (nullopt unless exactly that form).
std::optional<Time> parse_stored_time(std::string_view text);

// The layout of one row, shared by the backends' SQL: the columns in this order.
inline constexpr const char* kColumns =
    "scope, key, generation, state, policy, revision, table_checksum, rule, message_id, worker, "
    "claimed_at, updated_at, released_by, release_reason, released_at, copy_replay, body_digest, "
    "recorded_at";

Error error(ErrorCode code, std::string message);

// The names of the fields in which two records of one plan digest differ, ", "-separated (""
// when they agree): record_plan's conflict message on both backends.
std::string differing_fields(const PlanRecord& a, const PlanRecord& b);

}  // namespace replaygate::ledger::internal
