// What the plan subcommands share (plan_common.h).
#include "tools/cli/plan_common.h"

#include <cstdio>
#include <filesystem>

#include "audit/audit_log.h"
#include "audit/reader.h"
#include "redrive/test_points.h"
#include "runtime/codes.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"

namespace replaygate::cli {

void note_shared_key(std::string_view key, uint64_t replays) {
  plan_say(kExitOk, "note: " + std::to_string(replays) +
                        " planned replays share the idempotency key '" + std::string(key) +
                        "': the ledger lets one of them replay, the others are held");
}

int plan_usage(const std::string& message) {
  std::fprintf(stderr, "replaygate plan: error: %s\n", message.c_str());
  return kExitUsage;
}

int plan_say(int code, const std::string& message) {
  std::fprintf(stderr, "replaygate plan: %s\n", message.c_str());
  return code;
}

std::unique_ptr<ledger::Ledger> open_plan_ledger(const std::string& url, const std::string& scope,
                                                 bool create) {
  ledger::Options lo;
  lo.scope = scope;
  lo.create = create;
  ledger::Result<std::unique_ptr<ledger::Ledger>> opened = ledger::open_ledger(url, lo);
  if (!opened) {
    std::fprintf(stderr, "replaygate plan: error: %s (%s)\n", opened.error().message.c_str(),
                 std::string(ledger::error_code_name(opened.error().code)).c_str());
    return nullptr;
  }
  return std::move(opened.value());
}

std::string append_entries(const std::string& log, std::vector<nlohmann::json> entries) {
  const audit::AppendResult appended = audit::append_batch(log, std::move(entries));
  std::fputs(audit::removed_tail_note(log, appended).c_str(), stderr);
  return appended.ok ? "" : appended.error;
}

std::string check_audit_log(const std::string& log) {
  std::string error;
  return audit::Appender::open(log, nullptr, &error) ? "" : error;
}

audit::PlanEntry recorded_entry(const ledger::PlanRecord& r, const std::string& operator_name,
                                const std::string& scope) {
  audit::PlanEntry e;
  e.operator_name = operator_name;
  e.act = "plan_recorded";
  e.scope = scope;
  e.fields = {{"digest", r.digest},
              {"author", r.author},
              {"source", r.source},
              {"table_checksum", r.table_checksum},
              {"letters", r.letters},
              {"copies", r.copies},
              {"created_at", ledger::format_time(r.created_at)},
              {"expires_at", ledger::format_time(r.expires_at)}};
  return e;
}

void test_point(std::string_view step) {
  static const redrive::TestPoints points = [] {
    redrive::TestPoints p;
    p.from_environment();
    return p;
  }();
  points.at(step);
}

bool plan_entry_logged(const std::string& log, std::string_view act, std::string_view digest,
                       std::string_view approver, std::string* error) {
  std::error_code ec;
  if (!std::filesystem::exists(log, ec)) return false;
  std::string bytes;
  if (!read_whole_file(log, SIZE_MAX, &bytes, error)) return false;
  audit::EntryReader reader(bytes, audit::EntryReader::Lines::kAll);
  audit::ReadEntry e;
  while (reader.next(&e)) {
    const nlohmann::json& o = e.object;
    if (o.value("kind", "") != "plan" || o.value("act", "") != act) continue;
    if (o.value("digest", "") != digest) continue;
    if (!approver.empty() && o.value("approver", "") != approver) continue;
    return true;
  }
  return false;
}

std::string ensure_recorded(ledger::Ledger& l, const plan::PlanRead& plan,
                            const std::string& operator_name, const std::string& audit) {
  ledger::Result<std::optional<ledger::PlanRecord>> known = l.plan(plan.digest);
  if (!known) return known.error().message;
  if (known.value()) {
    // An approval is written after the plan's entry: with one, the entry is there.
    ledger::Result<std::vector<ledger::PlanApproval>> approvals = l.plan_approvals(plan.digest);
    if (!approvals) return approvals.error().message;
    if (!approvals.value().empty()) return "";
    std::string error;
    if (plan_entry_logged(audit, "plan_recorded", plan.digest, "", &error)) return "";
    if (!error.empty()) return error;
    return append_entries(
        audit, {audit::to_json(recorded_entry(*known.value(), operator_name, l.scope()))});
  }
  const ledger::PlanRecord r = plan::plan_record_of(plan);
  if (ledger::Status s = l.record_plan(r); !s) return s.error().message;
  test_point("plan_recorded");
  return append_entries(audit, {audit::to_json(recorded_entry(r, operator_name, l.scope()))});
}

}  // namespace replaygate::cli
