// `replaygate decide --plan PLAN` on a dump (docs/plans.md, "Running a plan"): act on the plan's
// letters only, each decided again, every act claimed, audited and recorded under the plan's
// digest, so that a rerun resumes and never acts twice.
//
// Before any record: the plan file must hash to its digest, the table must be the one the plan
// was built on, the ledger must know the plan, not cancelled, not expired, with the approvals it
// needs (signatures checked against the users file): else exit 2 and nothing is acted on.
//
// Each record is one of (the `plan` member of its output line):
//   act      its identity is the plan's and its decision is the plan's: the decision stands (a
//            create verb is claimed in the ledger by its idempotency key first, as decide --ledger)
//   held     plan:decision_mismatch (same identity, another verb or rule), plan:changed (not the
//            plan's identity, but the message id of a planned letter: body or inputs differ),
//            plan:duplicate (a copy beyond the plan's count), plan:no_key (a create verb without
//            an idempotency key), ledger:already_replayed (the claim was lost)
//   skipped  plan:not_in_plan (no identity or message id of the plan: never touched, no verb),
//            plan:done_earlier (an earlier run of this plan handled this copy), plan:cap
// The k-th copy of an identity in this run is the k-th copy of the dump: a copy the ledger's
// progress already counts (done + held + changed of that identity) was handled by an earlier run.
//
// Per block, in this order, each durable before the next: claims (one transaction) ->
// decision entries (one audit append) -> claims marked recorded -> progress (one
// record_plan_progress) -> plan_progress entries -> the block's lines on standard output. A crash
// after the claims and before the progress: the rerun loses those claims (held as
// ledger:already_replayed, counted done): the ledger never grants a second replay.
#include "tools/cli/plan_run.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "inputs/formats.h"
#include "pipeline/stream.h"
#include "redrive/plan/run_rules.h"
#include "redrive/test_points.h"
#include "runtime/codes.h"
#include "tools/cli/commands.h"
#include "tools/cli/plan_common.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"

namespace replaygate::cli {
namespace {

using nlohmann::json;

// Records per block: each block costs four fsyncs (claims, decisions, progress, progress
// entries); 256 ran 10,000 letters in 2.3 s, 4096 in 1.4 s.
constexpr size_t kPlanBlock = 4096;

struct Planned {
  plan::PlanLetter letter;
};

// One identity's state in this run.
struct Seen {
  int64_t in_run = 0;   // copies seen so far in this run
  int64_t before = -1;  // handled by earlier runs (the ledger's progress); -1: not yet asked
};

// One record of a block.
struct Step {
  uint64_t n = 0;
  bool readable = false;
  plan::PlanLetter letter;  // readable: as it is now
  const Planned* planned = nullptr;
  std::string progress_identity;  // the row its progress goes to ("" : none)
  bool changed = false;           // readable, not planned, a planned message id
  int64_t copy = 0;               // its k (1-based) among copies of progress_identity
  std::string plan_state;         // act, held, skipped
  std::string rule, reason;       // held / skipped: why
  std::string verb, effect;
  bool claim = false, claimed = false;
  bool resumed = false;  // its claim was this plan's, by an earlier run for this letter: done
  int64_t generation = 0;
};

struct Counts {
  uint64_t records = 0, acted = 0, replayed = 0, held = 0, mismatch = 0, changed = 0, duplicate = 0,
           skipped = 0, not_in_plan = 0, done_earlier = 0, capped = 0;
};

int refuse(const std::string& message) {
  std::fprintf(stderr, "replaygate decide: refused: %s; nothing acted on\n", message.c_str());
  return kExitUsage;
}

class PlanRun {
 public:
  PlanRun(const PlanRunOptions& o, const Table& table, ledger::Ledger& l,
          const plan::PlanRead& plan, std::unordered_map<std::string, Planned> letters,
          std::unordered_map<std::string, std::string> by_message_id, int64_t done_before)
      : o_(o),
        table_(table),
        ledger_(l),
        plan_(plan),
        letters_(std::move(letters)),
        by_message_id_(std::move(by_message_id)),
        done_before_(done_before),
        checksum_(table.checksum_hex()) {
    test_points_.from_environment();
  }

  // Classifies, claims, records and prints one block: "" or why the run must stop.
  std::string block(std::vector<Step>& steps) {
    if (std::string why = cancelled(); !why.empty()) return why;
    if (std::string why = fetch_progress(steps); !why.empty()) return why;
    for (Step& s : steps) classify(s);
    if (std::string why = claim(steps); !why.empty()) return why;
    test_points_.at("plan_claimed");
    if (std::string why = record(steps); !why.empty()) return why;
    for (const Step& s : steps) print(s);
    return std::fflush(stdout) == 0 ? "" : "cannot write to standard output";
  }

  const Counts& counts() const { return counts_; }
  Step make_step(uint64_t n) {
    Step s;
    s.n = n;
    return s;
  }

  // Finds the record's place in the plan (readable records only).
  void place(Step& s) {
    const auto it = letters_.find(s.letter.identity);
    if (it != letters_.end()) {
      s.planned = &it->second;
      s.progress_identity = s.letter.identity;
    } else if (s.letter.message_id && by_message_id_.count(*s.letter.message_id) > 0) {
      s.changed = true;
      s.progress_identity = s.letter.identity;
    }
    if (!s.progress_identity.empty()) s.copy = ++seen_[s.progress_identity].in_run;
  }

 private:
  std::string worker() const { return "decide --plan " + plan_.header.plan_id; }

  // Appends through one Appender held for the run (append_batch(path) re-reads the whole log
  // each time: a run of 10,000 letters took 20 s that way).
  std::string append(std::vector<json> entries) {
    if (appender_ == nullptr) {
      std::string error;
      appender_ = audit::Appender::open(o_.audit, nullptr, &error);
      if (appender_ == nullptr) return error;
    }
    const audit::AppendResult appended = appender_->append_batch(std::move(entries));
    std::fputs(audit::removed_tail_note(o_.audit, appended).c_str(), stderr);
    return appended.ok ? "" : appended.error;
  }

  std::string cancelled() { return plan::stop_reason(ledger_, plan_.digest); }

  std::string fetch_progress(const std::vector<Step>& steps) {
    std::vector<std::string> ask;
    for (const Step& s : steps) {
      if (s.progress_identity.empty()) continue;
      Seen& seen = seen_[s.progress_identity];
      if (seen.before < 0) {
        seen.before = 0;  // asked once per identity: later rows are this run's own
        ask.push_back(s.progress_identity);
      }
    }
    if (ask.empty()) return "";
    ledger::Result<std::vector<ledger::PlanLetterProgress>> rows =
        ledger_.plan_progress(plan_.digest, ask);
    if (!rows) return rows.error().message;
    for (size_t i = 0; i < ask.size() && i < rows.value().size(); ++i) {
      const ledger::PlanLetterProgress& p = rows.value()[i];
      seen_[ask[i]].before = p.done + p.held + p.changed;
    }
    return "";
  }

  void hold(Step& s, const std::string& rule, const std::string& reason) {
    s.plan_state = "held";
    s.rule = rule;
    s.reason = reason;
    s.verb = std::string(table_.verb_name(table_.default_verb()));
    s.effect = effect_name(table_.verb_effect(table_.default_verb()));
    ++counts_.held;
  }
  void skip(Step& s, const std::string& why, uint64_t* count) {
    s.plan_state = "skipped";
    s.rule = why;
    ++counts_.skipped;
    ++*count;
  }

  void classify(Step& s) {
    if (s.progress_identity.empty()) return skip(s, "plan:not_in_plan", &counts_.not_in_plan);
    if (s.copy <= seen_[s.progress_identity].before) {
      return skip(s, "plan:done_earlier", &counts_.done_earlier);
    }
    if (s.changed) {
      ++counts_.changed;
      return hold(s, "plan:changed", plan::changed_reason(*s.letter.message_id));
    }
    const plan::PlanLetter& p = s.planned->letter;
    if (s.copy > p.count) {
      ++counts_.duplicate;
      return hold(s, "plan:duplicate", plan::duplicate_reason(s.copy, p.count));
    }
    if (plan_.header.cap > 0 &&
        done_before_ + static_cast<int64_t>(counts_.acted) >= plan_.header.cap) {
      return skip(s, "plan:cap", &counts_.capped);
    }
    if (s.letter.decision.verb != p.decision.verb || s.letter.decision.rule != p.decision.rule) {
      ++counts_.mismatch;
      return hold(s, "plan:decision_mismatch",
                  plan::mismatch_reason(s.letter.decision, p.decision));
    }
    s.plan_state = "act";
    s.verb = s.letter.decision.verb;
    s.effect = s.letter.decision.effect;
    s.rule = s.letter.decision.rule;
    s.claim = s.effect == "create";
    if (s.claim && (!s.letter.idempotency_key || s.letter.idempotency_key->empty())) {
      s.claim = false;
      hold(s, "plan:no_key", "a create verb without an idempotency key: no once-only replay");
      return;
    }
    ++counts_.acted;
  }

  std::string claim(std::vector<Step>& steps) {
    std::vector<ledger::Claim> claims;
    std::vector<Step*> asked;
    for (Step& s : steps) {
      if (!s.claim) continue;
      ledger::Claim c;
      c.key = *s.letter.idempotency_key;
      c.policy = std::string(table_.policy_id());
      c.revision = table_.revision();
      c.table_checksum = checksum_;
      c.rule = s.rule;
      c.message_id = s.letter.message_id.value_or("");
      c.worker = worker();
      claims.push_back(std::move(c));
      asked.push_back(&s);
    }
    if (claims.empty()) return "";
    ledger::Result<std::vector<ledger::ClaimOutcome>> won = ledger_.claim_batch(claims);
    if (!won) return won.error().message;
    for (size_t i = 0; i < asked.size(); ++i) {
      Step& s = *asked[i];
      if (won.value()[i].won) {
        s.claimed = true;
        s.generation = won.value()[i].holder.generation;
        ++counts_.replayed;
      } else {
        // Claimed before by this plan for this very letter (an earlier run that died after its
        // claims): the plan's act happened, so it counts as done. Any other holder (another
        // letter with the same key, another run): held. Either way no second replay.
        const ledger::Record& holder = won.value()[i].holder;
        const bool ours =
            holder.worker == worker() && holder.message_id == s.letter.message_id.value_or("");
        --counts_.acted;
        hold(s, "ledger:already_replayed",
             "idempotency key " + *s.letter.idempotency_key + " was replayed already (by " +
                 holder.worker +
                 (holder.message_id.empty() ? "" : ", message " + holder.message_id) + ")");
        s.resumed = ours;  // progress: done
      }
    }
    return "";
  }

  std::string record(const std::vector<Step>& steps) {
    std::vector<json> decisions;
    std::vector<std::pair<std::string, int64_t>> marks;
    std::map<std::string, ledger::PlanLetterProgress> progress;
    for (const Step& s : steps) {
      if (s.plan_state == "skipped") continue;
      audit::DecisionEntry e;
      e.operator_name = o_.operator_name;
      e.source = o_.input == "-" ? "standard input" : o_.input;
      e.record = s.n;
      e.message_id = s.letter.message_id ? json(*s.letter.message_id) : json(nullptr);
      e.operation_id = nullptr;
      e.action = s.verb;
      e.effect = s.effect;
      e.rule = s.rule;
      e.policy = std::string(table_.policy_id());
      e.policy_revision = table_.revision();
      e.table_checksum = checksum_;
      e.record_revision = nullptr;
      e.idempotency_key = s.letter.idempotency_key;
      if (s.claimed) {
        e.claim_generation = s.generation;
        marks.emplace_back(*s.letter.idempotency_key, s.generation);
      }
      decisions.push_back(audit::to_json(e));
      ledger::PlanLetterProgress& p = progress[s.progress_identity];
      p.digest = plan_.digest;
      p.identity = s.progress_identity;
      if (s.rule == "plan:changed") {
        ++p.changed;
      } else if (s.plan_state == "act" || s.resumed) {
        ++p.done;
      } else {
        ++p.held;
      }
      p.last_outcome = s.plan_state == "act" ? (s.claimed ? "replay claimed" : "decided " + s.verb)
                                             : "held " + s.rule;
    }
    if (decisions.empty()) return "";
    if (std::string why = append(std::move(decisions)); !why.empty()) return why;
    std::vector<ledger::PlanLetterProgress> rows;
    std::vector<json> entries;
    for (auto& [identity, p] : progress) {
      entries.push_back(plan::progress_entry(p, o_.operator_name, ledger_.scope()));
      rows.push_back(std::move(p));
    }
    // The claims marked `recorded` and the block's progress: one transaction.
    if (ledger::Status st = ledger_.mark_batch_with_progress(marks, ledger::State::kRecorded, rows);
        !st) {
      return st.error().message;
    }
    test_points_.at("plan_progress_recorded");
    return append(std::move(entries));
  }

  void print(const Step& s) {
    json line{{"n", s.n}, {"plan", s.plan_state}};
    line["message_id"] = s.letter.message_id ? json(*s.letter.message_id) : json(nullptr);
    if (s.plan_state == "skipped") {
      line["why"] = s.rule;
    } else {
      line["identity"] = s.letter.identity;
      line["verb"] = s.verb;
      line["effect"] = s.effect;
      line["rule"] = s.rule;
      if (!s.reason.empty()) line["reason"] = s.reason;
      if (s.claim) line["claimed"] = s.claimed;
    }
    std::printf("%s\n", line.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  }

  const PlanRunOptions& o_;
  const Table& table_;
  ledger::Ledger& ledger_;
  const plan::PlanRead& plan_;
  std::unordered_map<std::string, Planned> letters_;
  std::unordered_map<std::string, std::string> by_message_id_;
  std::unordered_map<std::string, Seen> seen_;
  int64_t done_before_ = 0;
  std::string checksum_;
  Counts counts_;
  redrive::TestPoints test_points_;
  std::unique_ptr<audit::Appender> appender_;
};

// The plan and everything it must satisfy before a record is read: kExitOk or 2 (printed).
int open_plan(const PlanRunOptions& o, const Table& table, ledger::Ledger& l, plan::PlanRead* read,
              std::unordered_map<std::string, Planned>* letters,
              std::unordered_map<std::string, std::string>* by_message_id) {
  plan::RunCheck check;
  check.plan_path = o.plan;
  check.users_path = o.users;
  check.table_checksum = table.checksum_hex();
  plan::PlanIndex index;
  if (const std::string why = plan::open_for_run(check, l, read, &index); !why.empty()) {
    return refuse(why);
  }
  for (auto& [identity, letter] : index.letters) letters->emplace(identity, Planned{letter});
  *by_message_id = std::move(index.by_message_id);
  return kExitOk;
}

}  // namespace

int run_decide_plan(const PlanRunOptions& o) {
  if (o.ledger.empty()) return refuse("--plan needs --ledger LEDGER (progress is kept there)");
  if (o.audit.empty()) return refuse("--plan needs --audit LOG (every act is recorded there)");
  if (o.users.empty()) return refuse("--plan needs --users FILE (the approvals are checked)");
  std::string format_error;
  const inputs::InputFormat* format = inputs::choose_input_format(o.format, &format_error);
  if (format == nullptr) return refuse(format_error);
  std::unique_ptr<Table> table;
  if (const int code = open_table(o.policy, o.table, &table, nullptr, &o.trust); code != kExitOk) {
    return code;
  }
  std::unique_ptr<ledger::Ledger> l = open_plan_ledger(o.ledger, o.scope, false);
  if (l == nullptr) return kExitUsage;
  plan::PlanRead read;
  std::unordered_map<std::string, Planned> letters;
  std::unordered_map<std::string, std::string> by_message_id;
  if (const int code = open_plan(o, *table, *l, &read, &letters, &by_message_id); code != kExitOk) {
    return code;
  }
  if (read.header.source.rfind("rabbitmq:", 0) == 0) {
    return refuse("the plan's letters are frozen in RabbitMQ (source " + read.header.source +
                  "), not in a dump: run it with `gate rabbitmq --plan`");
  }
  ledger::Result<ledger::PlanCounts> before = l->plan_counts(read.digest);
  if (!before) return refuse(before.error().message);
  RecordReading reading;
  if (const int code =
          open_record_parser(*format, o.format.mapping, *table, "nothing acted on", &reading);
      code != kExitOk) {
    return code;
  }
  int fd = STDIN_FILENO;
  if (o.input != "-" && (fd = ::open(o.input.c_str(), O_RDONLY | O_CLOEXEC)) < 0) {
    return refuse("cannot open " + o.input + ": " + std::strerror(errno));
  }
  const std::string source_name = read.header.source;
  PlanRun run(o, *table, *l, read, std::move(letters), std::move(by_message_id),
              before.value().done);
  pipeline::FileSource source(fd, format->json_array, format->array_member);
  Input input(*table);
  inputs::RecordMeta meta;
  std::string problem, stopped;
  std::vector<Step> steps;
  bool end = false;
  while (!end && stopped.empty()) {
    steps.clear();
    while (steps.size() < kPlanBlock) {
      pipeline::SourceRecord record;
      const inputs::LineReader::Status status = source.next(&record);
      if (status == inputs::LineReader::Status::kEnd) {
        end = true;
        break;
      }
      if (status == inputs::LineReader::Status::kError) {
        stopped = "cannot read " + o.input + ": " + source.error_text();
        break;
      }
      Step s = run.make_step(record.number);
      input.clear();
      if (status == inputs::LineReader::Status::kLine &&
          reading.parser->parse(record.text, input, &meta, &problem)) {
        s.readable = true;
        s.letter = plan::letter_of(*table, input, message_id_of(meta), record.text, source_name,
                                   table->decide(input), record.number);
        run.place(s);
      }
      steps.push_back(std::move(s));
    }
    if (!steps.empty() && stopped.empty()) stopped = run.block(steps);
  }
  if (fd != STDIN_FILENO) ::close(fd);
  const Counts& c = run.counts();
  std::fprintf(
      stderr,
      "plan %s: acted on %llu (replays claimed %llu), held %llu (decision mismatch %llu, "
      "changed %llu, duplicate %llu), skipped %llu (not in the plan %llu, done by an "
      "earlier run %llu, over the cap %llu)\n",
      read.digest.c_str(), static_cast<unsigned long long>(c.acted),
      static_cast<unsigned long long>(c.replayed), static_cast<unsigned long long>(c.held),
      static_cast<unsigned long long>(c.mismatch), static_cast<unsigned long long>(c.changed),
      static_cast<unsigned long long>(c.duplicate), static_cast<unsigned long long>(c.skipped),
      static_cast<unsigned long long>(c.not_in_plan),
      static_cast<unsigned long long>(c.done_earlier), static_cast<unsigned long long>(c.capped));
  if (!stopped.empty()) {
    std::fprintf(stderr,
                 "replaygate decide: stopped: %s; the lines above were acted on and recorded, "
                 "the rest was not (a rerun resumes)\n",
                 stopped.c_str());
    return kExitUsage;
  }
  int code = c.mismatch + c.changed + c.duplicate > 0 ? kExitFindings : kExitOk;
  // Planned copies the dump did not hold (another dump, a cut one): the plan is not done.
  if (c.capped == 0) {
    const ledger::Result<ledger::PlanCounts> after = l->plan_counts(read.digest);
    if (!after) return refuse(after.error().message);
    const int64_t pending = read.summary.copies - after.value().done - after.value().held;
    if (pending > 0) {
      std::fprintf(stderr,
                   "replaygate decide: %lld planned cop(ies) neither done nor held were not in "
                   "%s; `plan status` lists them as pending\n",
                   static_cast<long long>(pending),
                   o.input == "-" ? "standard input" : o.input.c_str());
      code = kExitFindings;
    }
  }
  return code;
}

}  // namespace replaygate::cli
