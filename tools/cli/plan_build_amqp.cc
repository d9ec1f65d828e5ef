// `plan build --amqp URL --queue DLQ` and the RabbitMQ half of `plan cancel` (docs/plans.md,
// "Building a plan on RabbitMQ"): decide every letter of a dead-letter queue, plan the ones the
// filters select and freeze them, moved with publisher confirms into the plan's queue
// (redrive/rabbitmq/plan_freeze.h); a cancel moves them back.
//
// Crash safety: PLAN.tmp is written header first and fsynced before the first move, so a rerun
// of the same build that finds it knows the plan id of the build that stopped, moves that plan
// queue's letters back to the dead-letter queue (audited plan_returned), removes PLAN.tmp and
// builds afresh. A kill between a move's confirm and its ack leaves a copy in both queues: the
// rerun plans both (one identity, counted twice) and a run's ledger claim stops a second replay.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inputs/formats.h"
#include "redrive/plan/spool.h"
#include "redrive/rabbitmq/amqp_client.h"
#include "redrive/rabbitmq/plan_freeze.h"
#include "redrive/test_points.h"
#include "tools/cli/commands.h"
#include "tools/cli/plan_cmd.h"
#include "tools/cli/plan_common.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

namespace rmq = redrive::rabbitmq;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// librabbitmq decodes nested header tables recursively: the broker work runs on a large stack
// (redrive/rabbitmq/amqp_client.h), as the gate's does.
constexpr size_t kStackBytes = size_t{64} << 20;

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Who moves letters, and where the audit entries go.
struct MoveAudit {
  std::string operator_name, scope, log;
  std::string plan_id;
  std::optional<std::string> digest;  // a cancel's return: the plan's digest
};

// The audit entry of a block of moves.
std::string audit_moves(const MoveAudit& a, const char* act, const std::string& from,
                        const std::string& to, size_t count,
                        const std::vector<std::string>* identities) {
  audit::PlanEntry e;
  e.operator_name = a.operator_name;
  e.act = act;
  e.scope = a.scope;
  e.fields = {
      {"plan_id", a.plan_id}, {"from", from}, {"to", to}, {"count", static_cast<int64_t>(count)}};
  if (a.digest) e.fields["digest"] = *a.digest;
  if (identities != nullptr) e.fields["identities"] = *identities;
  if (const std::string why = append_entries(a.log, {audit::to_json(e)}); !why.empty()) {
    return "cannot append the " + std::string(act) + " entry to " + a.log + ": " + why;
  }
  return "";
}

// What returning a plan queue's letters came to.
struct Returned {
  uint64_t moved = 0;
  bool deleted = false;   // the plan queue is gone
  std::string left_note;  // not deleted: why
};

// Moves every letter of the plan queue DLQ.plan.ID back to DLQ (plan_returned per block), then
// deletes the plan queue when it is empty. "" or why not (then *out says what was moved).
std::string return_letters(const rmq::AmqpUrl& url, const std::string& dlq, const MoveAudit& a,
                           size_t block, const redrive::TestPoints* points, Returned* out) {
  rmq::MoverOptions mo;
  mo.url = url;
  mo.from = plan::plan_queue_name(dlq, a.plan_id);
  mo.to = dlq;
  mo.allow_peek = true;  // the plan queue is classic: nothing counts attempts there
  mo.test_points = points;
  mo.step = "return";
  rmq::QueueMover mover(mo);
  bool missing = false;
  if (std::string why = mover.open(&missing); !why.empty()) {
    if (missing) {
      out->deleted = true;  // nothing to return: the plan queue was never made, or is gone
      return "";
    }
    return mo.from + ": " + why;
  }
  const auto flush = [&]() {
    const size_t n = mover.taken();
    if (const std::string why = mover.move_taken(
            [&]() { return audit_moves(a, "plan_returned", mo.from, mo.to, n, nullptr); });
        !why.empty()) {
      return why;
    }
    out->moved += n;
    return std::string();
  };
  for (;;) {
    rmq::SeenLetter seen;
    std::string error;
    const rmq::QueueMover::Next next = mover.next(&seen, &error);
    if (next == rmq::QueueMover::Next::kEmpty) break;
    if (next != rmq::QueueMover::Next::kLetter) return mo.from + ": " + error;
    mover.take();
    if (mover.taken() >= block) {
      if (std::string why = flush(); !why.empty()) return why;
    }
  }
  if (std::string why = flush(); !why.empty()) return why;
  if (const std::string why = mover.delete_if_empty(mo.from); why.empty()) {
    out->deleted = true;
  } else {
    out->left_note = why;
  }
  return "";
}

// What a freeze saw.
struct Counts {
  uint64_t seen = 0, unreadable = 0, frozen = 0;
};

struct BuildContext {
  const PlanOptions& o;
  const Table& table;
  RecordReading& reading;
  const plan::PlanHeader& header;
  rmq::AmqpUrl url;
  std::optional<int64_t> since;
  size_t block = 1000;
  const redrive::TestPoints* points = nullptr;
};

// Consumes the dead-letter queue and moves the letters the filters select into the plan queue.
// "" or why not (*refused: the queue is a quorum queue and peeks are not allowed; *opened false:
// the broker was not reached or the plan queue not declared, so nothing can have moved).
std::string freeze(const BuildContext& c, plan::LetterSet* planned, Counts* counts, bool* refused,
                   bool* opened) {
  const plan::PlanHeader& h = c.header;
  rmq::MoverOptions mo;
  mo.url = c.url;
  mo.from = c.o.queue;
  mo.to = plan::plan_queue_name(c.o.queue, h.plan_id);
  mo.plan_id = h.plan_id;
  mo.allow_peek = c.o.allow_peek;
  mo.test_points = c.points;
  rmq::QueueMover mover(mo);
  if (const std::string why = mover.open(); !why.empty()) return c.o.queue + ": " + why;
  *opened = true;
  const MoveAudit audit{c.o.author, c.o.scope, c.o.audit, h.plan_id, std::nullopt};
  std::vector<std::string> identities;
  const auto flush = [&]() {
    if (const std::string why = mover.move_taken([&]() {
          return audit_moves(audit, "plan_frozen", mo.from, mo.to, identities.size(), &identities);
        });
        !why.empty()) {
      return why;
    }
    counts->frozen += identities.size();
    identities.clear();
    return std::string();
  };
  Input input(c.table);
  inputs::RecordMeta meta;
  Clock::time_point last_note = Clock::now();
  for (;;) {
    if (Clock::now() - last_note >= std::chrono::seconds(1)) {
      last_note = Clock::now();
      plan_say(kExitOk, "seen " + std::to_string(counts->seen) + " letter(s) of " + c.o.queue +
                            ", moved " + std::to_string(counts->frozen) + " into " + mo.to);
    }
    rmq::SeenLetter seen;
    std::string error;
    const rmq::QueueMover::Next next = mover.next(&seen, &error);
    if (next == rmq::QueueMover::Next::kEmpty) break;
    if (next == rmq::QueueMover::Next::kRefused) {
      *refused = true;
      return "refusing to build: " + error;
    }
    if (next != rmq::QueueMover::Next::kLetter) return c.o.queue + ": " + error;
    ++counts->seen;
    const rmq::EnvelopeRecord& r = *seen.record;
    std::string problem = r.problem;
    input.clear();
    if (problem.empty() &&
        !c.reading.parser->parse(std::string_view(r.record).substr(0, r.record_size), input, &meta,
                                 &problem)) {
      if (problem.empty()) problem = "unreadable";
    }
    if (!problem.empty()) {
      ++counts->unreadable;  // never planned: it stays in the dead-letter queue
      continue;
    }
    const Decision d = c.table.decide(input);
    const std::optional<std::string_view> id =
        r.message_id ? std::optional<std::string_view>(*r.message_id) : std::nullopt;
    if (c.since && (!seen.timestamp || *seen.timestamp < *c.since)) continue;
    if (!plan_build_passes(c.o, c.table, input, d, id)) continue;
    plan::PlanLetter l =
        plan::letter_with_digest(c.table, input, id, r.body_digest, h.source, d, 0);
    identities.push_back(l.identity);
    if (!planned->add(l)) return planned->error();
    mover.take();
    if (mover.taken() >= c.block) {
      if (std::string why = flush(); !why.empty()) return why;
    }
  }
  return flush();
}

// A build that stopped before its plan file was complete (PLAN.tmp is there): moves its plan
// queue's letters back and removes PLAN.tmp. kExitOk, or the exit code with the message printed.
int recover(const PlanOptions& o, const rmq::AmqpUrl& url, const std::string& source, size_t block,
            const redrive::TestPoints* points) {
  const std::string tmp = o.out + ".tmp";
  std::string error;
  const std::optional<plan::PlanHeader> h = plan::read_unfinished_header(tmp, &error);
  if (!h) {
    // Not even the header: the build stopped before its first move (it syncs the header first).
    if (::unlink(tmp.c_str()) != 0) return plan_usage("cannot remove " + tmp);
    return kExitOk;
  }
  if (h->source != source) {
    return plan_usage(tmp + " is an unfinished build of " + h->source + ", not of " + source +
                      ": rerun that build to recover it, or choose another --plan");
  }
  plan_say(kExitOk, "recovering the unfinished build " + h->plan_id + " (" + tmp +
                        "): moving the letters of " + plan::plan_queue_name(o.queue, h->plan_id) +
                        " back to " + o.queue);
  Returned returned;
  const MoveAudit audit{o.author, o.scope, o.audit, h->plan_id, std::nullopt};
  if (const std::string why = return_letters(url, o.queue, audit, block, points, &returned);
      !why.empty()) {
    return plan_usage("cannot recover the unfinished build " + h->plan_id + ": " + why + " (" +
                      std::to_string(returned.moved) + " moved back so far; " + tmp +
                      " is kept: rerun to finish)");
  }
  if (!returned.deleted) {
    plan_say(kExitOk, "note: " + plan::plan_queue_name(o.queue, h->plan_id) +
                          " is not deleted: " + returned.left_note);
  }
  if (::unlink(tmp.c_str()) != 0) return plan_usage("cannot remove " + tmp);
  plan_say(kExitOk, "recovered: " + std::to_string(returned.moved) + " letter(s) moved back to " +
                        o.queue + "; building afresh");
  return kExitOk;
}

plan::PlanHeader header_of(const PlanOptions& o, const BuildLimits& lim, const Table& table,
                           const std::string& source) {
  plan::PlanHeader h;
  h.created_at = plan::now_text();
  h.expires_at = ledger::format_time(*ledger::parse_time(h.created_at) + lim.ttl);
  h.source = source;
  h.author = o.author;
  h.plan_id = plan::new_plan_id(h.source, h.author, h.created_at);
  h.input_format = "rabbitmq";
  h.policy = std::string(table.policy_id());
  h.policy_revision = table.revision();
  h.table_checksum = table.checksum_hex();
  h.cap = static_cast<int64_t>(lim.cap);
  h.rate = lim.rate;
  h.required_approvals = lim.approvals;
  h.filters = json::object();
  h.filters["input"] = source;
  if (o.topic_set) h.filters["topic"] = o.topic;
  if (o.error_class_set) h.filters["error_class"] = o.error_class;
  if (o.rule_set) h.filters["rule"] = o.rule;
  if (o.since_set) h.filters["since"] = o.since;
  if (!o.message_ids.empty()) h.filters["message_id"] = o.message_ids;
  return h;
}

// The checks of a RabbitMQ build's own options: kExitOk or the usage code (printed).
int check_amqp_options(const PlanOptions& o, rmq::AmqpUrl* url, std::optional<int64_t>* since) {
  if (!o.input.empty()) {
    return plan_usage("give the dump to plan or --amqp URL --queue DLQ, not both");
  }
  if (o.queue.empty()) {
    return plan_usage("--queue DLQ is required with --amqp (the dead-letter queue to plan)");
  }
  if (o.audit.empty()) {
    return plan_usage(
        "--audit LOG is required with --amqp (every move into the plan's queue is audited)");
  }
  if (o.format.input_format_set && o.format.input_format != "rabbitmq") {
    return plan_usage("--input-format: a RabbitMQ queue's letters are 'rabbitmq' records");
  }
  if (!o.source.empty()) {
    return plan_usage("--source: a RabbitMQ plan's source is rabbitmq:/VHOST/QUEUE, not chosen");
  }
  if (o.format.mapping.empty()) {
    return plan_usage(
        "--mapping is required with --amqp (the rabbitmq mapping the gate runs with)");
  }
  std::string problem;
  const std::optional<rmq::AmqpUrl> parsed = rmq::parse_amqp_url(o.amqp, &problem);
  if (!parsed) return plan_usage("--amqp: " + problem);
  *url = *parsed;
  if (o.since_set) {
    int64_t seconds = 0;
    if (!parse_utc_time(o.since, &seconds)) {
      return plan_usage("--since '" + o.since +
                        "' is not an RFC 3339 UTC time (2026-12-01T00:00:00Z)");
    }
    *since = seconds;
  }
  if (const std::string why = check_audit_log(o.audit); !why.empty()) {
    return plan_usage("--audit: " + why + "; nothing moved");
  }
  // AMQP names a queue in at most 255 bytes: the plan queue's name must fit.
  if (const std::string longest = plan::plan_queue_name(o.queue, std::string(12, 'f'));
      longest.size() > 255) {
    return plan_usage("--queue: the plan queue's name (" + o.queue + ".plan.<plan id>) would be " +
                      std::to_string(longest.size()) +
                      " bytes, more than the 255 AMQP allows; nothing moved");
  }
  if (exists(o.out)) {
    return plan_usage(o.out +
                      " exists: a RabbitMQ build never overwrites a plan (its letters are frozen "
                      "in its queue: `plan cancel` moves them back); choose another --plan");
  }
  return kExitOk;
}

// The build once the table and the parser are open, on the large stack.
int build(const BuildContext& c, const BuildLimits& lim) {
  const PlanOptions& o = c.o;
  if (exists(o.out + ".tmp")) {
    if (const int code = recover(o, c.url, c.header.source, c.block, c.points); code != kExitOk) {
      return code;
    }
  }
  plan::PlanWriter writer(o.out);
  if (!writer.begin(c.header) || !writer.sync()) {
    return plan_usage(writer.error() + "; nothing moved, no plan written");
  }
  plan::LetterSet planned(o.out + ".spool");
  Counts counts;
  bool refused = false;
  const std::string plan_queue = plan::plan_queue_name(o.queue, c.header.plan_id);
  bool opened = false;
  if (const std::string why = freeze(c, &planned, &counts, &refused, &opened); !why.empty()) {
    if (!opened) {
      // Nothing moved (the plan file's .tmp goes with the writer): a rerun starts afresh.
      return plan_usage(why + "; nothing moved, no plan written");
    }
    // Undo: what was frozen goes back (the letters not moved went back with the connection).
    Returned returned;
    const MoveAudit audit{o.author, o.scope, o.audit, c.header.plan_id, std::nullopt};
    const std::string undo = return_letters(c.url, o.queue, audit, c.block, c.points, &returned);
    if (!undo.empty()) {
      writer.keep_unfinished();
      return plan_usage(why + "; moving the frozen letters back failed too (" + undo +
                        "): " + plan_queue + " holds them; rerun the same build to recover (" +
                        writer.tmp_path() + " names its plan id)");
    }
    if (refused) {
      return plan_usage(why + "; nothing planned, nothing moved");
    }
    return plan_usage(why + "; no plan written: the " + std::to_string(returned.moved) +
                      " letter(s) frozen so far are back in " + o.queue);
  }
  if (!planned.write(writer, note_shared_key)) {
    writer.keep_unfinished();
    return plan_usage(planned.error() + "; rerun the same build to move the frozen letters back");
  }
  const std::string digest = writer.finish();
  if (digest.empty()) {
    writer.keep_unfinished();
    return plan_usage(writer.error() + "; rerun the same build to move the frozen letters back");
  }
  if (const int code = record_built_plan(o); code != kExitOk) return code;
  std::printf("%s\n", digest.c_str());
  const uint64_t left = counts.seen - counts.frozen;
  return plan_say(kExitOk, "wrote " + o.out + ": " + std::to_string(writer.summary().letters) +
                               " letter(s), " + std::to_string(writer.summary().copies) +
                               " cop(ies); moved " + std::to_string(counts.frozen) + " of " +
                               std::to_string(counts.seen) + " letter(s) seen into " + plan_queue +
                               "; left " + std::to_string(left) + " in " + o.queue + " (" +
                               std::to_string(counts.unreadable) +
                               " unreadable, never planned); it needs " +
                               std::to_string(lim.approvals) + " approval(s) besides " + o.author);
}

// The broker and the dead-letter queue of a RabbitMQ plan, from --amqp and the plan's source
// (rabbitmq:/VHOST/QUEUE): "" or why not.
std::string plan_target(const PlanOptions& o, const plan::PlanRead& read, rmq::AmqpUrl* url,
                        std::string* queue) {
  const std::string& source = read.header.source;
  const std::string prefix = "rabbitmq:/";
  const size_t slash = source.find('/', prefix.size());
  if (read.header.input_format != "rabbitmq" || !source.starts_with(prefix) ||
      slash == std::string::npos) {
    return "--amqp: the plan's letters are not from RabbitMQ (its source is " + source +
           "); nothing done";
  }
  *queue = source.substr(slash + 1);
  std::string problem;
  const std::optional<rmq::AmqpUrl> parsed = rmq::parse_amqp_url(o.amqp, &problem);
  if (!parsed) return "--amqp: " + problem + "; nothing done";
  *url = *parsed;
  if (plan::rabbitmq_source(url->vhost, *queue) != source) {
    return "--amqp: the plan's letters are in " + source + ", not on the vhost '" + url->vhost +
           "' of " + url->describe() + "; nothing done";
  }
  return "";
}

}  // namespace

int run_plan_build_amqp(const PlanOptions& o, const BuildLimits& lim) {
  rmq::AmqpUrl url;
  std::optional<int64_t> since;
  if (const int code = check_amqp_options(o, &url, &since); code != kExitOk) return code;
  redrive::TestPoints points;
  if (const std::string why = points.from_environment(); !why.empty()) return plan_usage(why);
  std::unique_ptr<Table> table;
  if (const int code = open_table(o.policy, o.table, &table, nullptr, &o.trust); code != kExitOk) {
    return code;
  }
  inputs::InputFormatOptions format_options = o.format;
  format_options.input_format = "rabbitmq";
  format_options.input_format_set = true;
  std::string format_error;
  const inputs::InputFormat* format = inputs::choose_input_format(format_options, &format_error);
  if (format == nullptr) return plan_usage(format_error);
  RecordReading reading;
  if (const int code = open_record_parser(*format, o.format.mapping, *table,
                                          "no plan written, nothing moved", &reading);
      code != kExitOk) {
    return code;
  }
  const plan::PlanHeader header =
      header_of(o, lim, *table, plan::rabbitmq_source(url.vhost, o.queue));
  const BuildContext c{o, *table, reading, header, url, since, lim.block, &points};
  int code = kExitUsage;
  if (!rmq::run_with_stack(kStackBytes, [&] { code = build(c, lim); })) {
    return plan_usage("cannot start the broker thread");
  }
  return code;
}

std::string check_plan_amqp(const PlanOptions& o, const plan::PlanRead& read) {
  std::string queue;
  rmq::AmqpUrl url;
  return plan_target(o, read, &url, &queue);
}

int return_plan_letters_amqp(const PlanOptions& o, const plan::PlanRead& read) {
  std::string queue;
  rmq::AmqpUrl url_value;
  if (const std::string why = plan_target(o, read, &url_value, &queue); !why.empty()) {
    return plan_usage(why);
  }
  if (const std::string why = check_audit_log(o.audit); !why.empty()) {
    return plan_usage("--audit: " + why + "; nothing moved back");
  }
  const rmq::AmqpUrl* url = &url_value;
  redrive::TestPoints points;
  if (const std::string why = points.from_environment(); !why.empty()) return plan_usage(why);
  const MoveAudit audit{o.operator_name, o.scope, o.audit, read.header.plan_id, read.digest};
  const std::string plan_queue = plan::plan_queue_name(queue, read.header.plan_id);
  Returned returned;
  std::string why;
  if (!rmq::run_with_stack(kStackBytes, [&] {
        why = return_letters(*url, queue, audit, 1000, &points, &returned);
      })) {
    return plan_usage("cannot start the broker thread");
  }
  if (!why.empty()) {
    return plan_usage("moving the letters of " + plan_queue + " back to " + queue + ": " + why +
                      " (" + std::to_string(returned.moved) +
                      " moved so far; rerun the cancel with --amqp to finish)");
  }
  return plan_say(kExitOk,
                  "moved " + std::to_string(returned.moved) + " letter(s) from " + plan_queue +
                      " back to " + queue + "; " +
                      (returned.deleted ? plan_queue + " is deleted"
                                        : plan_queue + " is not deleted: " + returned.left_note));
}

}  // namespace replaygate::cli
