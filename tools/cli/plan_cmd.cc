// `replaygate plan build|show|verify|status` (docs/plans.md): a frozen, reviewed set of dead
// letters. build writes the plan file from a dump (from a RabbitMQ queue with --amqp:
// plan_build_amqp.cc); show renders what it will do per verb; verify
// checks the file, its approvals and the ledger; status reads its progress. The audited acts
// (approve, cancel) are in plan_acts.cc; execution is `decide --plan` (plan_run.cc).
#include "tools/cli/plan_cmd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "inputs/formats.h"
#include "pipeline/stream.h"
#include "redrive/plan/spool.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/plan_common.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

using nlohmann::json;

// What a verb's effect means for the operator reviewing the plan (the seed design's words).
std::string work_of(const std::string& effect) {
  if (effect == "create") return "creates work";
  if (effect == "copy") return "copies";
  if (effect == "read") return "reads";
  return "no work";
}

}  // namespace

bool plan_build_passes(const PlanOptions& o, const Table& table, const Input& input,
                       const Decision& d, const std::optional<std::string_view>& message_id) {
  const auto input_is = [&](const char* name, const std::string& want) {
    const uint32_t f = table.field_index(name);
    return f != Table::kNoField && input.state(f) == Input::Slot::State::kString &&
           input.slot(f).s == want;
  };
  if (o.topic_set && !input_is("topic", o.topic)) return false;
  if (o.error_class_set && !input_is("error_class", o.error_class)) return false;
  if (o.rule_set && table.rule_name(d) != o.rule) return false;
  if (!o.message_ids.empty()) {
    if (!message_id) return false;
    if (std::find(o.message_ids.begin(), o.message_ids.end(), *message_id) == o.message_ids.end()) {
      return false;
    }
  }
  return true;
}

int record_built_plan(const PlanOptions& o) {
  if (o.ledger.empty()) return kExitOk;
  std::unique_ptr<ledger::Ledger> l = open_plan_ledger(o.ledger, o.scope, true);
  if (l == nullptr) return kExitUsage;
  const plan::PlanRead read = plan::read_plan_file(o.out, {});
  if (!read.ok) return plan_usage(read.error);
  if (const std::string why = ensure_recorded(*l, read, o.author, o.audit); !why.empty()) {
    return plan_usage(why + "; the plan file " + o.out + " is written but not recorded");
  }
  return kExitOk;
}

namespace {

int check_build_options(const PlanOptions& o, int64_t* approvals, std::chrono::microseconds* ttl,
                        uint64_t* cap, double* rate) {
  if (o.policy.empty() == o.table.empty()) {
    return plan_usage("give exactly one of --policy POLICY.yaml or --table TABLE.rgt");
  }
  if (o.input.empty() && !o.amqp_set) {
    return plan_usage(
        "give the dump to plan (DUMP, or - for standard input), or --amqp URL --queue DLQ");
  }
  if (o.out.empty()) return plan_usage("--plan PLAN is required (where the plan file is written)");
  if (!o.author_set) return plan_usage("--author NAME is required (who built the plan)");
  if (const std::string why = operator_error(o.author, "--author"); !why.empty()) {
    return plan_usage(why);
  }
  if (!o.amqp_set && (!o.queue.empty() || o.allow_peek)) {
    return plan_usage("--queue and --allow-peek go with --amqp URL (a RabbitMQ build)");
  }
  if (o.since_set && !o.amqp_set) {
    return plan_usage(
        "--since applies to a gate's queue (the broker's timestamp); a dump's records carry none: "
        "select them with --topic, --error-class, --rule or --message-id");
  }
  if (o.ledger.empty() != o.audit.empty() && !(o.amqp_set && !o.audit.empty())) {
    return plan_usage("--ledger and --audit go together (the plan is recorded in both)");
  }
  const std::optional<std::chrono::microseconds> parsed = ledger::parse_duration(o.expires_in);
  if (!parsed || parsed->count() <= 0) {
    return plan_usage("--expires-in '" + o.expires_in +
                      "' is not a duration: write a whole number and one unit, d, h, m or s, e.g. "
                      "--expires-in 24h");
  }
  *ttl = *parsed;
  const CountOption approvals_option{"--approvals", 1, 16, ""};
  uint64_t count = plan::kPolicyApprovals;
  if (o.approvals_set && !parse_count(approvals_option, o.approvals, &count)) {
    return plan_usage(count_error(approvals_option, o.approvals) + " (the policy asks " +
                      std::to_string(plan::kPolicyApprovals) + "; --approvals may only raise it)");
  }
  *approvals = static_cast<int64_t>(count);
  const CountOption cap_option{"--cap", 0, uint64_t{1} << 62, ""};
  if (o.cap_set && !parse_count(cap_option, o.cap, cap)) {
    return plan_usage(count_error(cap_option, o.cap));
  }
  char* end = nullptr;
  errno = 0;
  *rate = o.rate_set ? std::strtod(o.rate.c_str(), &end) : 0;
  if (o.rate_set &&
      (end == o.rate.c_str() || *end != '\0' || errno != 0 || !(*rate >= 0) || *rate > 1e9)) {
    return plan_usage("--rate takes letters per second (a number >= 0; 0: no limit), not '" +
                      o.rate + "'");
  }
  return kExitOk;
}

int run_build(const PlanOptions& o) {
  int64_t approvals = 0;
  std::chrono::microseconds ttl{};
  uint64_t cap = 0;
  double rate = 0;
  if (const int code = check_build_options(o, &approvals, &ttl, &cap, &rate); code != kExitOk) {
    return code;
  }
  if (o.amqp_set) return run_plan_build_amqp(o, {approvals, ttl, cap, rate, o.block});
  std::string format_error;
  const inputs::InputFormat* format = inputs::choose_input_format(o.format, &format_error);
  if (format == nullptr) return plan_usage(format_error);
  std::unique_ptr<Table> table;
  if (const int code = open_table(o.policy, o.table, &table, nullptr, &o.trust); code != kExitOk) {
    return code;
  }
  RecordReading reading;
  if (const int code =
          open_record_parser(*format, o.format.mapping, *table, "no plan written", &reading);
      code != kExitOk) {
    return code;
  }
  int fd = STDIN_FILENO;
  if (o.input != "-" && (fd = ::open(o.input.c_str(), O_RDONLY | O_CLOEXEC)) < 0) {
    return plan_usage("cannot open " + o.input + ": " + std::strerror(errno));
  }
  struct stat in_st {
  }, out_st{};
  if (::fstat(fd, &in_st) == 0 && ::stat(o.out.c_str(), &out_st) == 0 &&
      in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino) {
    if (fd != STDIN_FILENO) ::close(fd);
    return plan_usage("--plan " + o.out + " is the dump being planned: the plan would replace " +
                      "it; choose another file");
  }
  pipeline::FileSource source(fd, format->json_array, format->array_member);
  Input input(*table);
  inputs::RecordMeta meta;
  std::string problem;
  plan::LetterSet letters(o.out + ".spool");
  uint64_t records = 0, unreadable = 0;
  const std::string letter_source = o.source.empty() ? std::string(kDumpSource) : o.source;
  for (;;) {
    pipeline::SourceRecord record;
    const inputs::LineReader::Status status = source.next(&record);
    if (status == inputs::LineReader::Status::kEnd) break;
    if (status == inputs::LineReader::Status::kError) {
      if (fd != STDIN_FILENO) ::close(fd);
      return plan_usage("cannot read " + o.input + ": " + source.error_text() +
                        "; no plan written");
    }
    ++records;
    if (status == inputs::LineReader::Status::kTooLarge) {
      ++unreadable;
      continue;
    }
    input.clear();
    if (!reading.parser->parse(record.text, input, &meta, &problem)) {
      ++unreadable;  // never planned: an unreadable letter is held, not replayed
      continue;
    }
    const Decision d = table->decide(input);
    if (!plan_build_passes(o, *table, input, d, message_id_of(meta))) continue;
    plan::PlanLetter l = plan::letter_of(*table, input, message_id_of(meta), record.text,
                                         letter_source, d, record.number);
    if (!letters.add(l)) {
      if (fd != STDIN_FILENO) ::close(fd);
      return plan_usage(letters.error() + "; no plan written");
    }
  }
  if (fd != STDIN_FILENO) ::close(fd);
  plan::PlanHeader h;
  h.created_at = plan::now_text();
  h.expires_at = ledger::format_time(*ledger::parse_time(h.created_at) + ttl);
  h.source = letter_source;
  h.author = o.author;
  h.plan_id = plan::new_plan_id(h.source, h.author, h.created_at);
  h.input_format = std::string(format->name);
  h.policy = std::string(table->policy_id());
  h.policy_revision = table->revision();
  h.table_checksum = table->checksum_hex();
  h.cap = static_cast<int64_t>(cap);
  h.rate = rate;
  h.required_approvals = approvals;
  h.filters = json::object();
  h.filters["input"] = o.input;
  if (o.topic_set) h.filters["topic"] = o.topic;
  if (o.error_class_set) h.filters["error_class"] = o.error_class;
  if (o.rule_set) h.filters["rule"] = o.rule;
  if (!o.message_ids.empty()) h.filters["message_id"] = o.message_ids;
  plan::PlanWriter writer(o.out);
  if (!writer.begin(h)) return plan_usage(writer.error() + "; no plan written");
  if (!letters.write(writer, note_shared_key))
    return plan_usage(letters.error() + "; no plan written");
  const std::string digest = writer.finish();
  if (digest.empty()) return plan_usage(writer.error() + "; no plan written");
  if (const int code = record_built_plan(o); code != kExitOk) return code;
  std::printf("%s\n", digest.c_str());
  return plan_say(kExitOk, "wrote " + o.out + ": " + std::to_string(writer.summary().letters) +
                               " letter(s), " + std::to_string(writer.summary().copies) +
                               " cop(ies) of " + std::to_string(records) + " record(s) (" +
                               std::to_string(unreadable) +
                               " unreadable, never planned); it needs " +
                               std::to_string(approvals) + " approval(s) besides " + o.author);
}

// Reads a plan whose content must hash to the digest it carries: 0, or 1 (edited) / 2 (unreadable)
// with the message printed.
int read_checked(const std::string& path, plan::PlanRead* out,
                 const std::function<bool(const plan::PlanLetter&)>& on_letter = {}) {
  *out = plan::read_plan_file(path, on_letter);
  if (!out->ok) return plan_usage(out->error);
  return kExitOk;
}

int run_show(const PlanOptions& o) {
  if (o.output != "text" && o.output != "json") {
    return plan_usage("--output must be text or json, not '" + o.output + "'");
  }
  plan::PlanRead read;
  if (const int code = read_checked(o.plan_path, &read); code != kExitOk) return code;
  const plan::PlanHeader& h = read.header;
  if (o.output == "json") {
    json j{{"digest", read.digest},
           {"digest_matches", read.digest_matches()},
           {"header", plan::to_json(h)},
           {"summary", plan::to_json(read.summary)}};
    json verbs = json::object();
    for (const auto& [verb, c] : read.summary.by_verb) {
      verbs[verb] = {{"effect", c.effect},
                     {"work", work_of(c.effect)},
                     {"letters", c.letters},
                     {"copies", c.copies}};
    }
    j["by_verb"] = verbs;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("plan %s  %s\n", h.plan_id.c_str(), read.digest.c_str());
    std::printf("source %s  author %s  created %s  expires %s\n", h.source.c_str(),
                h.author.c_str(), h.created_at.c_str(), h.expires_at.c_str());
    std::printf("policy %s revision %lld  table %s\n", h.policy.c_str(),
                static_cast<long long>(h.policy_revision), h.table_checksum.c_str());
    std::printf("cap %lld  rate %g  approvals needed %lld\n", static_cast<long long>(h.cap), h.rate,
                static_cast<long long>(std::max(h.required_approvals, plan::kPolicyApprovals)));
    std::printf("letters %lld (copies %lld)\n", static_cast<long long>(read.summary.letters),
                static_cast<long long>(read.summary.copies));
    for (const auto& [verb, c] : read.summary.by_verb) {
      std::printf("  %-16s %-7s %lld letter(s), %lld cop(ies): %s\n", verb.c_str(),
                  c.effect.c_str(), static_cast<long long>(c.letters),
                  static_cast<long long>(c.copies), work_of(c.effect).c_str());
    }
    if (!read.digest_matches()) {
      std::printf("EDITED: the content hashes to %s, not the digest it carries\n",
                  read.computed_digest.c_str());
    }
  }
  return read.digest_matches() ? kExitOk : kExitFindings;
}

int run_verify(const PlanOptions& o) {
  plan::Users users;
  if (const std::string why = plan::read_users_file(o.users, &users); !why.empty()) {
    return plan_usage(why);
  }
  plan::PlanRead read;
  if (const int code = read_checked(o.plan_path, &read); code != kExitOk) return code;
  std::unique_ptr<ledger::Ledger> l = open_plan_ledger(o.ledger, o.scope, false);
  if (l == nullptr) return kExitUsage;
  std::string error;
  const plan::PlanVerdict v = plan::verify_against(*l, read, users, std::nullopt, &error);
  if (!error.empty()) return plan_usage(error);
  if (o.output == "json") {
    json findings = json::array();
    for (const plan::Finding& f : v.findings) {
      findings.push_back({{"code", f.code}, {"message", f.message}});
    }
    std::printf("%s\n", json{{"valid", v.valid},
                             {"digest", read.computed_digest},
                             {"required", v.required},
                             {"approved_by", v.approved_by},
                             {"findings", findings}}
                            .dump()
                            .c_str());
  } else {
    for (const plan::Finding& f : v.findings)
      std::printf("%s: %s\n", f.code.c_str(), f.message.c_str());
    std::string by;
    for (const std::string& a : v.approved_by) by += (by.empty() ? "" : ", ") + a;
    std::printf("%s: %s (%zu of %lld approval(s)%s)\n", o.plan_path.c_str(),
                v.valid ? "valid" : "NOT valid", v.approved_by.size(),
                static_cast<long long>(v.required), by.empty() ? "" : (": " + by).c_str());
  }
  return v.valid ? kExitOk : kExitFindings;
}

int run_status(const PlanOptions& o) {
  plan::PlanRead read;
  if (const int code = read_checked(o.plan_path, &read); code != kExitOk) return code;
  std::unique_ptr<ledger::Ledger> l = open_plan_ledger(o.ledger, o.scope, false);
  if (l == nullptr) return kExitUsage;
  ledger::Result<std::optional<ledger::PlanRecord>> known = l->plan(read.computed_digest);
  if (!known) return plan_usage(known.error().message);
  if (!known.value()) {
    return plan_usage("the ledger " + l->describe() + " has no plan " + read.computed_digest +
                      " (never recorded: build it with --ledger, or approve it)");
  }
  ledger::Result<ledger::PlanCounts> counts = l->plan_counts(read.computed_digest);
  if (!counts) return plan_usage(counts.error().message);
  ledger::Result<std::vector<ledger::PlanApproval>> approvals =
      l->plan_approvals(read.computed_digest);
  if (!approvals) return plan_usage(approvals.error().message);
  const ledger::PlanCounts& c = counts.value();
  const int64_t pending = std::max<int64_t>(0, read.summary.copies - c.done - c.held);
  const ledger::PlanRecord& r = *known.value();
  std::string state =
      r.cancelled_at ? "cancelled by " + r.cancelled_by + " at " +
                           ledger::format_time(*r.cancelled_at) + ": " + r.cancel_reason
      : read.header.expires_at <= plan::now_text() ? "expired at " + read.header.expires_at
      : pending == 0                               ? "done"
                                                   : "open";
  json approved = json::array();
  for (const ledger::PlanApproval& a : approvals.value()) {
    approved.push_back({{"approver", a.approver},
                        {"key_id", a.key_id},
                        {"approved_at", ledger::format_time(a.approved_at)},
                        {"recorded_at", ledger::format_time(a.recorded_at)},
                        {"reason", a.reason}});
  }
  if (o.output == "json") {
    std::printf("%s\n", json{{"digest", read.computed_digest},
                             {"state", state},
                             {"letters", read.summary.letters},
                             {"copies", read.summary.copies},
                             {"done", c.done},
                             {"pending", pending},
                             {"held", c.held},
                             {"changed", c.changed},
                             {"approvals", approved}}
                            .dump()
                            .c_str());
    return kExitOk;
  }
  std::printf("plan %s  %s\n", read.header.plan_id.c_str(), read.computed_digest.c_str());
  std::printf("state %s\n", state.c_str());
  std::printf("done %lld  pending %lld  held %lld  changed %lld  (of %lld cop(ies))\n",
              static_cast<long long>(c.done), static_cast<long long>(pending),
              static_cast<long long>(c.held), static_cast<long long>(c.changed),
              static_cast<long long>(read.summary.copies));
  for (const ledger::PlanApproval& a : approvals.value()) {
    std::printf("approved by %s at %s (key %s): %s\n", a.approver.c_str(),
                ledger::format_time(a.approved_at).c_str(), a.key_id.c_str(), a.reason.c_str());
  }
  if (approvals.value().empty()) std::printf("no approvals\n");
  return kExitOk;
}

}  // namespace

Runner setup_plan(CLI::App& sub) {
  auto o = std::make_shared<PlanOptions>();
  sub.require_subcommand(1);
  sub.footer(
      "Plans (docs/plans.md): a frozen, reviewed set of dead letters, approved by a second\n"
      "person and executed exactly: `decide --plan` over a dump, `gate rabbitmq --plan` over the\n"
      "plan queue a RabbitMQ build froze its letters into. Exit: 0 success (verify: valid), 1 "
      "findings\n"
      "(verify: not valid; show: the plan was edited), 2 usage or I/O errors.");
  CLI::App* build = sub.add_subcommand("build",
                                       "Write a plan of a dump's letters, or of a RabbitMQ "
                                       "dead-letter queue's (--amqp URL --queue DLQ:\n"
                                       "the planned letters are moved into DLQ.plan.<plan id>)");
  build->add_option("DUMP", o->input, "The dump to plan (- reads standard input)");
  build->add_option("--policy", o->policy, "Compile this policy in memory and use it");
  build->add_option("--table", o->table, "Use this compiled table (.rgt)");
  CLI::Option* input_format =
      build->add_option("--input-format", o->format.input_format, "Record format, as for decide");
  build->add_option("--mapping", o->format.mapping, "Mapping file, as for decide");
  build->add_option("--plan", o->out, "Write the plan file here");
  CLI::Option* author = build->add_option("--author", o->author, "Who builds the plan");
  CLI::Option* topic = build->add_option("--topic", o->topic, "Only letters of this topic");
  CLI::Option* error_class =
      build->add_option("--error-class", o->error_class, "Only letters of this error class");
  CLI::Option* since =
      build->add_option("--since", o->since,
                        "With --amqp: only letters with an AMQP timestamp at or after this time "
                        "(refused for a dump: its records carry none)");
  CLI::Option* rule = build->add_option("--rule", o->rule, "Only letters this rule decides");
  build->add_option("--message-id", o->message_ids,
                    "Only the letter with this message id "
                    "(repeatable)");
  CLI::Option* cap = build->add_option("--cap", o->cap, "Act on at most N letters (0: every one)");
  CLI::Option* rate = build->add_option("--rate", o->rate, "Letters per second (0: no limit)");
  build->add_option("--expires-in", o->expires_in, "The plan expires after this (default 24h)");
  CLI::Option* approvals = build->add_option(
      "--approvals", o->approvals, "Approvals needed besides the author (may only raise 1)");
  build->add_option("--source", o->source,
                    "The letters' source in their identity (default 'dump'; the same for the run)");
  CLI::Option* amqp = build->add_option(
      "--amqp", o->amqp,
      "Plan a RabbitMQ dead-letter queue instead of a dump: broker URL "
      "amqp://USER:PASS@HOST:PORT/VHOST; the planned letters are moved into QUEUE.plan.ID");
  build->add_option("--queue", o->queue, "With --amqp: the dead-letter queue to plan");
  build->add_flag("--allow-peek", o->allow_peek,
                  "With --amqp: allow a quorum queue, where every letter left uses up a delivery "
                  "attempt");
  build
      ->add_option("--block-max", o->block,
                   "With --amqp: letters moved, confirmed and audited together (default 1000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{10000}));
  build->add_option("--ledger", o->ledger, "Record the plan in this ledger (with --audit)");
  build->add_option("--ledger-scope", o->scope, "Ledger scope (default 'default')");
  build->add_option("--audit", o->audit, "Record the plan in this audit log (with --ledger)");
  add_trust_options(*build, &o->trust, /*acting=*/false);

  CLI::App* show = sub.add_subcommand("show", "Render per verb what a plan will do");
  show->add_option("PLAN", o->plan_path, "The plan file")->required();
  show->add_option("--output", o->output, "text (default) or json");

  CLI::App* verify = sub.add_subcommand("verify", "Check a plan and its approvals");
  verify->add_option("PLAN", o->plan_path, "The plan file")->required();
  verify->add_option("--users", o->users, "The users file (approvers and their keys)")->required();
  verify->add_option("--ledger", o->ledger, "The ledger holding its approvals")->required();
  verify->add_option("--ledger-scope", o->scope, "Ledger scope (default 'default')");
  verify->add_option("--output", o->output, "text (default) or json");

  CLI::App* status = sub.add_subcommand("status", "A plan's progress and approvals");
  status->add_option("PLAN", o->plan_path, "The plan file")->required();
  status->add_option("--ledger", o->ledger, "The ledger")->required();
  status->add_option("--ledger-scope", o->scope, "Ledger scope (default 'default')");
  status->add_option("--output", o->output, "text (default) or json");

  CLI::App* approve = sub.add_subcommand("approve", "Approve a plan (signed, audited)");
  approve->add_option("PLAN", o->plan_path, "The plan file")->required();
  CLI::Option* approver = approve->add_option("--operator", o->operator_name, "The approver");
  approve->add_option("--sign-key", o->sign_key, "The approver's secret key file")->required();
  CLI::Option* reason = approve->add_option("--reason", o->reason, "Why it is approved");
  approve->add_option("--users", o->users, "The users file")->required();
  approve->add_option("--ledger", o->ledger, "The ledger")->required();
  approve->add_option("--ledger-scope", o->scope, "Ledger scope (default 'default')");
  approve->add_option("--audit", o->audit, "The audit log")->required();

  CLI::App* cancel = sub.add_subcommand("cancel", "Cancel a plan (audited)");
  cancel->add_option("PLAN", o->plan_path, "The plan file")->required();
  CLI::Option* canceller = cancel->add_option("--operator", o->operator_name, "Who cancels");
  CLI::Option* cancel_reason = cancel->add_option("--reason", o->reason, "Why");
  cancel->add_option("--ledger", o->ledger, "The ledger")->required();
  cancel->add_option("--ledger-scope", o->scope, "Ledger scope (default 'default')");
  cancel->add_option("--audit", o->audit, "The audit log")->required();
  CLI::Option* cancel_amqp = cancel->add_option(
      "--amqp", o->amqp,
      "A RabbitMQ plan: move what is left in its queue back to the dead-letter queue (broker "
      "URL amqp://USER:PASS@HOST:PORT/VHOST)");

  return [=] {
    o->format.input_format_set = input_format->count() > 0;
    o->author_set = author->count() > 0;
    o->topic_set = topic->count() > 0;
    o->error_class_set = error_class->count() > 0;
    o->since_set = since->count() > 0;
    o->rule_set = rule->count() > 0;
    o->cap_set = cap->count() > 0;
    o->rate_set = rate->count() > 0;
    o->approvals_set = approvals->count() > 0;
    o->amqp_set = amqp->count() > 0 || cancel_amqp->count() > 0;
    if (build->parsed()) return run_build(*o);
    if (show->parsed()) return run_show(*o);
    if (verify->parsed()) return run_verify(*o);
    if (status->parsed()) return run_status(*o);
    if (approve->parsed()) {
      o->operator_given = approver->count() > 0;
      o->reason_given = reason->count() > 0;
      return run_plan_approve(*o);
    }
    o->operator_given = canceller->count() > 0;
    o->reason_given = cancel_reason->count() > 0;
    return run_plan_cancel(*o);
  };
}

}  // namespace replaygate::cli
