// The live RabbitMQ gate's loop: consume, decide, claim, publish with confirms, ack
// (rabbit_gate.h).
#include "redrive/rabbitmq/rabbit_gate.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/plural.h"

namespace replaygate::redrive::rabbitmq {
namespace {

using Clock = std::chrono::steady_clock;

// The test hooks: $REPLAYGATE_TEST_CRASH_AT dies as a kill -9 would, at one named step;
// $REPLAYGATE_TEST_PAUSE_AT=STEP:FILE creates FILE at the first STEP and waits (at most 120 s)
// until the test removes it, so that a test can stop the broker at an exact point.
void crash_point(const GateOptions& o, std::string_view step) {
  if (!o.crash_at.empty() && o.crash_at == step) ::kill(::getpid(), SIGKILL);
  static bool paused = false;
  if (paused || o.pause_at.empty() || o.pause_at != step) return;
  paused = true;
  std::ofstream(o.pause_file).put('\n');
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  while (std::filesystem::exists(o.pause_file) && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

struct Links {
  std::unique_ptr<Connection> consume, publish;
  std::unique_ptr<Consumer> consumer;
  std::unique_ptr<Publisher> publisher;
  bool up() const { return consume && publish && !consume->lost() && !publish->lost(); }
  void drop() {
    consumer.reset();
    publisher.reset();
    consume.reset();
    publish.reset();
  }
};

// Connects both connections, selects confirms, makes the park and hold queues (apply only) and
// starts consuming. "" or why not.
std::string connect(const GateOptions& o, Links* links) {
  links->drop();
  std::string error;
  Settings consume_settings = o.settings, publish_settings = o.settings;
  consume_settings.connection_name = "replaygate gate (consume " + o.queue + ")";
  // The rate wait services the publishing connection's socket only (a wait on the consuming one
  // would take the next delivery). When a letter may wait longer than half the heartbeat interval,
  // the consuming connection goes without heartbeats, so the broker does not close it mid-wait;
  // the publishing connection's heartbeats still detect a lost broker (both are then reconnected).
  if (o.max_rate > 0 && o.settings.heartbeat > 0 && 1.0 / o.max_rate > o.settings.heartbeat / 2.0) {
    consume_settings.heartbeat = 0;
  }
  publish_settings.connection_name = "replaygate gate (publish)";
  links->consume = Connection::open(o.url, consume_settings, &error);
  if (!links->consume) return error;
  links->publish = Connection::open(o.url, publish_settings, &error);
  if (!links->publish) return error;
  links->publisher = std::make_unique<Publisher>(*links->publish);
  if (!links->publisher->select(&error)) return error;
  if (!links->publish->queue_depth(o.queue, &error)) {
    return "the dead-letter queue does not exist or cannot be read: " + error;
  }
  if (o.apply || o.delivery_limit) {  // a dry run may have to hold a letter's last delivery
    for (const std::string* q : {&o.park_queue, &o.hold_queue}) {
      if (!links->publish->ensure_queue(*q, &error)) return error;
    }
  }
  if (o.apply) {
    if (o.replay_exchange && !links->publish->exchange_exists(*o.replay_exchange, &error)) {
      return "--replay-exchange: " + error;
    }
  }
  links->consumer = std::make_unique<Consumer>(*links->consume);
  if (o.delivery_limit) return links->consumer->start_pull(o.queue) ? "" : "cannot pull";
  // Skipped and dry-run letters stay unacked: the prefetch must leave room for them. Without
  // them the window stays small, so no delivery waits long in it (the broker's consumer timeout
  // closes a channel whose delivery stays unacked for 30 minutes) and other gates get their share.
  const bool keeps = !o.apply || o.message_id || o.topic || o.error_class || o.since;
  const uint64_t window = std::min<uint64_t>(65535, (keeps ? o.max_unacked : 0) + o.prefetch);
  if (!links->consumer->start(o.queue, static_cast<uint16_t>(window), &error)) return error;
  return "";
}

// Waits `ms` on the publishing connection's socket (heartbeats, alarms), never sleeping blind.
// `hooks` (tests): the pause point "rate_wait" between the deadline check and the time left.
void wait_on(Links& links, int ms, const GateOptions* hooks = nullptr) {
  if (ms <= 0 || !links.publish || links.publish->lost()) {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return;
  }
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < end && !links.publish->lost()) {
    if (hooks != nullptr) crash_point(*hooks, "rate_wait");
    // A thread preempted since the check above finds the deadline passed: a negative timeval
    // is "invalid parameter" to librabbitmq, which would drop a healthy connection.
    const int left = std::max<int>(
        0, static_cast<int>(
               std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count()));
    amqp_frame_t frame;
    timeval tv{left / 1000, (left % 1000) * 1000};
    const int status = amqp_simple_wait_frame_noblock(links.publish->state(), &frame, &tv);
    if (status == AMQP_STATUS_TIMEOUT) break;
    if (status != AMQP_STATUS_OK) {
      links.publish->set_lost(std::string("waiting on its socket: ") + amqp_error_string2(status));
      break;
    }
    links.publish->handle_async_method(frame);
  }
}

bool has_header(const amqp_envelope_t& env, std::string_view name) {
  const amqp_basic_properties_t& p = env.message.properties;
  if ((p._flags & AMQP_BASIC_HEADERS_FLAG) == 0) return false;
  for (int i = 0; i < p.headers.num_entries; ++i) {
    const amqp_bytes_t key = p.headers.entries[i].key;
    if (std::string_view(static_cast<const char*>(key.bytes), key.len) == name) return true;
  }
  return false;
}

// An integer header's value (x-delivery-count is a long on 3.10, may be narrower elsewhere).
std::optional<int64_t> header_int(const amqp_envelope_t& env, std::string_view name) {
  const amqp_basic_properties_t& p = env.message.properties;
  if ((p._flags & AMQP_BASIC_HEADERS_FLAG) == 0) return std::nullopt;
  for (int i = 0; i < p.headers.num_entries; ++i) {
    const amqp_table_entry_t& e = p.headers.entries[i];
    if (std::string_view(static_cast<const char*>(e.key.bytes), e.key.len) != name) continue;
    return integer_field(e.value);
  }
  return std::nullopt;
}

std::string target_text(const std::string& exchange, const std::string& routing_key) {
  if (exchange.empty()) return "queue '" + routing_key + "' (default exchange)";
  return "exchange '" + exchange + "' routing key '" + routing_key + "'";
}

// Why a replay of a letter decided on `input` may not go to `routing_key` through `exchange`, or
// nullopt (docs/gate.md, "A replay is held instead when"). A message published straight into the
// dead-letter queue chooses its own x-death: it must not steer a replay into the queue the gate
// drains, its park or hold queue, or a work queue other than the one its decision was made for.
std::optional<DeadLetter::Refusal> refuse_target(const GateOptions& o, const std::string& exchange,
                                                 const std::string& routing_key, const Table& table,
                                                 const Input& input) {
  if (exchange.empty()) {
    for (const auto& [queue, what] :
         {std::pair{&o.queue, "the dead-letter queue this gate drains (--queue)"},
          std::pair{&o.park_queue, "the park queue"}, std::pair{&o.hold_queue, "the hold queue"}}) {
      if (routing_key != *queue) continue;
      return DeadLetter::Refusal{
          "gate:target_is_gate_queue",
          "the replay would go to '" + routing_key + "', " + what +
              ": a replay goes back to the work queue the letter died in, never to a queue "
              "this gate drains or fills"};
    }
  }
  if (o.replay_routing_key) return std::nullopt;  // the operator chose it, for every letter
  const uint32_t field = table.field_index("topic");
  if (field == Table::kNoField) return std::nullopt;  // the policy decides for no queue
  const Input::Slot slot = input.slot(field);
  const std::string where =
      "the letter's most recent x-death names '" + routing_key + "' as the queue it died in";
  if (slot.state != Input::Slot::State::kString) {
    return DeadLetter::Refusal{"gate:target_mismatch",
                               where + ", but its decision was made without a topic"};
  }
  if (slot.s == routing_key) return std::nullopt;
  if (const auto it = o.topic_map.find(routing_key);
      it != o.topic_map.end() && it->second == slot.s) {
    return std::nullopt;
  }
  return DeadLetter::Refusal{
      "gate:target_mismatch",
      where + ", but its decision was made for topic '" + std::string(slot.s) +
          "': a replay goes only to the queue its decision was made for (or one the mapping "
          "maps to that topic)"};
}

}  // namespace

int run_gate(SharedTable& shared, const ParserFactory& make_parser, Redrive& redrive,
             const GateOptions& o, const GateHooks& hooks, GateStats* stats) {
  SharedTable::Reader reader(shared);
  if (!reader.ok()) {
    stats->stop_reason = "no free reader slot on the table";
    return 2;
  }
  const auto note = [&](const std::string& text) {
    if (hooks.note) hooks.note(text);
  };
  Links links;
  if (const std::string error = connect(o, &links); !error.empty()) {
    stats->stop_reason = error;
    return 2;
  }
  uint64_t generation = shared.generation();
  std::unique_ptr<inputs::RecordParser> parser;
  {
    SharedTable::Guard pinned = reader.acquire();
    parser = make_parser(pinned.table());
    stats->per_verb.assign(pinned.table().verb_count(), 0);
  }
  const auto start = Clock::now();
  auto last_progress = start;
  auto next_allowed = start;
  auto idle_since = start;
  uint64_t kept_unacked = 0;
  bool found_message = false;  // --message-id: the letter was seen
  int exit_code = 0;
  Delivery delivery;
  EnvelopeRecord record;
  std::vector<amqp_table_entry_t> header_storage;
  const auto progress = [&](bool force) {
    const auto now = Clock::now();
    if (!force && now - last_progress < std::chrono::seconds(1)) return;
    last_progress = now;
    const double seconds = std::chrono::duration<double>(now - start).count();
    stats->rate = seconds > 0 ? static_cast<double>(stats->handled) / seconds : 0;
    std::string error;
    if (links.up()) stats->queue_depth = links.publish->queue_depth(o.queue, &error);
    if (hooks.progress) hooks.progress(*stats);
  };
  const auto stop = [&](std::string reason, int code) {
    stats->stop_reason = std::move(reason);
    exit_code = std::max(exit_code, code);
  };

  for (;;) {
    if (hooks.stop_requested && hooks.stop_requested()) {
      stop("stopped by a signal", 0);
      break;
    }
    if (stats->handled >= o.max) {
      stop("handled " + plural(o.max, "letter") + " (--max)", 0);
      break;
    }
    if (kept_unacked >= o.max_unacked) {
      stop(std::to_string(kept_unacked) + " letters kept unacked (skipped" +
               std::string(o.apply ? "" : " or seen in this dry run") + "; --max-unacked)",
           0);
      break;
    }
    if (hooks.maybe_reload) hooks.maybe_reload();
    if (!links.up()) {
      if (!o.apply) {
        stop("the broker connection was lost: " + (links.consume && links.consume->lost()
                                                       ? links.consume->lost_reason()
                                                       : links.publish->lost_reason()),
             2);
        break;
      }
      // Reconnect with backoff; unacked letters went back to the queue with the connection.
      const auto give_up = Clock::now() + std::chrono::seconds(o.reconnect_for_s);
      int backoff_ms = 250;
      // Which connection went, and why: the first reconnect note says the real cause.
      std::string error = links.consume && links.consume->lost()
                              ? "consuming connection: " + links.consume->lost_reason()
                          : links.publish ? "publishing connection: " + links.publish->lost_reason()
                                          : "connection lost";
      bool reconnected = false;
      while (Clock::now() < give_up && !(hooks.stop_requested && hooks.stop_requested())) {
        note("reconnecting to " + o.url.describe() + " in " + std::to_string(backoff_ms) + " ms (" +
             error + ")");
        links.drop();
        std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
        error = connect(o, &links);
        if (error.empty()) {
          reconnected = true;
          break;
        }
        backoff_ms = std::min(backoff_ms * 2, 10000);
      }
      if (!reconnected) {
        stop("cannot reconnect to the broker within " + std::to_string(o.reconnect_for_s) +
                 " s: " + error,
             2);
        break;
      }
      ++stats->reconnects;
      kept_unacked = 0;  // the broker took them back
      note("reconnected");
      idle_since = Clock::now();
    }
    // Rate: wait on the socket until the next letter is allowed.
    if (o.max_rate > 0) {
      const auto now = Clock::now();
      if (now < next_allowed) {
        // In slices, so that a stop (SIGTERM) or a reload is seen within 200 ms at any rate.
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next_allowed - now);
        wait_on(links, static_cast<int>(std::min<int64_t>(left.count(), 200)), &o);
        continue;
      }
    }
    std::string error;
    const Consumer::Next next = links.consumer->next(&delivery, 200, &error);
    progress(false);
    if (next == Consumer::Next::kTimeout) {
      wait_on(links, 1);  // heartbeats on the publishing connection while the queue is idle
      if (!o.follow && Clock::now() - idle_since >= std::chrono::milliseconds(o.idle_exit_ms)) {
        stop("no letter for " + std::to_string(o.idle_exit_ms) + " ms: the queue is drained" +
                 std::string(kept_unacked > 0 ? " (of what this run may take)" : ""),
             0);
        break;
      }
      continue;
    }
    if (next == Consumer::Next::kCancelled) {
      stop(error, 2);
      break;
    }
    if (next == Consumer::Next::kLost) continue;  // reconnect above
    idle_since = Clock::now();
    ++stats->received;
    const amqp_envelope_t& env = delivery.envelope();

    SharedTable::Guard pinned = reader.acquire();
    const Table& table = pinned.table();
    if (shared.generation() != generation) {
      generation = shared.generation();
      parser = make_parser(table);
    }
    if (!o.apply && !o.allow_peek && has_header(env, "x-delivery-count")) {
      stop("refusing to peek further: " + o.queue +
               " is a quorum queue (its deliveries carry x-delivery-count), where a dry run uses "
               "up a delivery attempt of every letter it sees and can drop one at its delivery "
               "limit; give --allow-peek to accept that (--management URL shows the limit)",
           2);
      break;  // this letter returns unacked, as every one a dry run saw
    }
    envelope_to_record(env, o.limits, &record);
    DeadLetter letter;
    letter.record = std::string_view(record.record).substr(0, record.record_size);
    letter.problem = record.problem;
    letter.message_id = record.message_id;
    letter.replay_target_known = o.replay_routing_key.has_value() || !record.died_in.empty();
    letter.redelivered = env.redelivered != 0;
    letter.replays = record.replays;
    letter.body_digest = record.body_digest;
    const std::string replay_exchange = o.replay_exchange.value_or("");
    const std::string replay_key = o.replay_routing_key.value_or(record.died_in);
    letter.refuse_target = [&](const Table& decided_on, const Input& input) {
      return refuse_target(o, replay_exchange, replay_key, decided_on, input);
    };
    // Its last delivery: the broker drops (or dead-letters) a letter returned with its
    // x-delivery-count at the limit, so it is held now, whatever the filters or the mode. An
    // unreadable count counts as the limit (fail closed).
    bool last_attempt = false;
    if (o.delivery_limit && has_header(env, "x-delivery-count")) {
      const int64_t count = header_int(env, "x-delivery-count").value_or(*o.delivery_limit);
      last_attempt = count >= *o.delivery_limit;
      if (last_attempt && letter.problem.empty()) {
        letter.hold_rule = "gate:last_delivery_attempt";
        letter.problem = "its last delivery attempt (x-delivery-count " + std::to_string(count) +
                         ", delivery limit " + std::to_string(*o.delivery_limit) +
                         "): returned, the broker would drop it";
      }
    }

    const auto accept = [&](const Input* input) {
      if (o.message_id && (!letter.message_id || *letter.message_id != *o.message_id)) {
        return false;
      }
      if (o.since) {
        const amqp_basic_properties_t& p = env.message.properties;
        if ((p._flags & AMQP_BASIC_TIMESTAMP_FLAG) == 0 ||
            static_cast<int64_t>(p.timestamp) < *o.since) {
          return false;
        }
      }
      for (const auto& [name, wanted] :
           {std::pair{"topic", &o.topic}, std::pair{"error_class", &o.error_class}}) {
        if (!*wanted) continue;
        if (input == nullptr) return false;
        const uint32_t f = table.field_index(name);
        if (f == Table::kNoField) return false;
        const Input::Slot slot = input->slot(f);
        if (slot.state != Input::Slot::State::kString || slot.s != **wanted) return false;
      }
      crash_point(o, "decided");
      return true;
    };
    LetterStep plan = redrive.step(table, *parser, letter, accept);
    LetterReport report;
    report.ordinal = stats->received;
    report.message_id = letter.message_id;
    report.key = plan.key;
    report.dry_run = !o.apply && !last_attempt;
    if (plan.kind == LetterStep::Kind::kSkip) {
      ++stats->skipped;
      ++kept_unacked;
      if (o.delivery_limit && o.message_id) {
        // Searching on would pass over (and so return) letter after letter, each losing an
        // attempt: stop at the first one that is not the message asked for.
        stop("refusing to search " + o.queue + " for message " + *o.message_id + ": it has a " +
                 "delivery limit of " + std::to_string(*o.delivery_limit) +
                 ", every letter passed over goes back with one attempt used, and the letter at "
                 "its head is " +
                 letter.message_id.value_or("(no message id)"),
             1);
        break;
      }
      continue;  // stays unacked: not seen again in this run
    }
    // A letter held for its last attempt during a --message-id search may be another one.
    const bool wanted = o.message_id && letter.message_id == o.message_id;
    if (wanted) found_message = true;
    if (plan.kind == LetterStep::Kind::kStop) {
      stop(plan.error, 2);
      break;  // the letter stays unacked and returns to the queue
    }
    crash_point(o, "claimed");
    report.verb = std::string(table.verb_name(plan.verb));
    report.effect = effect_name(table.verb_effect(plan.verb));
    report.rule = plan.rule;
    report.reason = plan.reason;
    if (!plan.readable && letter.hold_rule.empty()) ++stats->unreadable;
    // Where it goes.
    std::string exchange, routing_key;
    std::vector<HeaderValue> headers;
    if (plan.kind == LetterStep::Kind::kAckOnly) {
      report.action = "ack";
    } else if (plan.action == Action::kRepublish) {
      report.action = "republish";
      exchange = replay_exchange;
      routing_key = replay_key;
      headers.push_back({"x-replay", true, plan.copy_replay, ""});  // the value claimed
    } else {
      report.action = std::string(action_name(plan.action));
      routing_key = plan.action == Action::kPark ? o.park_queue : o.hold_queue;
      headers.push_back({"x-replaygate-verb", false, 0, report.verb});
      headers.push_back({"x-replaygate-rule", false, 0, plan.rule});
      headers.push_back({"x-replaygate-reason", false, 0, plan.reason.substr(0, 4096)});
      headers.push_back({"x-replaygate-from", false, 0, o.queue});
    }
    if (report.action != "ack") report.target = target_text(exchange, routing_key);
    if (plan.kind == LetterStep::Kind::kAct && plan.action != Action::kRepublish &&
        exchange.empty() && routing_key == record.died_in) {
      // A park or hold queue that is the queue the letter died in hands a `never` letter back to
      // the consumer that failed it: a replay the policy refused. That letter alone stays where
      // it is, unacked like a skipped one (no claim was made for a park or hold), and the run
      // goes on.
      report.outcome = "left in " + o.queue + ", unacked: its " + report.action + " queue '" +
                       routing_key +
                       "' is the queue it died in (its consumer would run it again); choose "
                       "another " +
                       (plan.action == Action::kPark ? "--park-queue" : "--hold-queue");
      report.action = "leave";
      ++stats->left;
      ++kept_unacked;
      if (hooks.letter) hooks.letter(report);
      if (o.message_id) {
        stop("left message " + *o.message_id + " in " + o.queue, 1);
        break;
      }
      continue;
    }

    if (!o.apply && !last_attempt) {
      report.outcome = "dry run: nothing published, claimed or acked";
      ++kept_unacked;
      ++stats->handled;
      ++stats->per_verb[plan.verb];
      if (hooks.letter) hooks.letter(report);
      next_allowed =
          Clock::now() +
          std::chrono::microseconds(o.max_rate > 0 ? static_cast<int64_t>(1e6 / o.max_rate) : 0);
      if (wanted) {
        stop("found message " + *o.message_id, 0);
        break;
      }
      continue;
    }

    if (const std::string why = redrive.record_decision(table, plan, letter, stats->received);
        !why.empty()) {
      stop("cannot write the audit log: " + why, 2);
      break;  // unacked: it returns; a claim made stays `claimed` (held as outcome unknown)
    }
    bool confirmed = false;
    if (plan.kind == LetterStep::Kind::kAckOnly) {
      report.outcome = "acked without publishing: " + plan.reason;
      confirmed = true;
    } else {
      const amqp_basic_properties_t properties =
          republish_properties(env, headers, &header_storage);
      const PublishOutcome published = links.publisher->publish(
          exchange, routing_key, properties, env.message.body, o.confirm_timeout_ms,
          [&](const std::string& reason) {
            note("publishing is blocked by the broker (" + reason +
                 "): waiting for the alarm to clear");
          },
          [&] { crash_point(o, "published"); });
      if (published.result == PublishResult::kConfirmed) {
        confirmed = true;
        crash_point(o, "confirmed");
        report.outcome = "published to " + report.target + ", publisher confirm";
      } else if (published.result == PublishResult::kReturned &&
                 plan.action == Action::kRepublish) {
        // Nothing took the replay: move the letter to the hold queue, saying so. The claim stays
        // `claimed` (an operator releases it once the target exists); the decision entry's result
        // says both what happened to the replay and where the letter went.
        const std::string returned = "the replay to " + report.target + " was returned (" +
                                     published.detail + "): no queue took it";
        const uint32_t held_verb = table.default_verb();
        plan.action = Action::kHold;
        plan.rule = "gate:unroutable";
        plan.reason = returned;
        headers = {{"x-replaygate-verb", false, 0, std::string(table.verb_name(held_verb))},
                   {"x-replaygate-rule", false, 0, plan.rule},
                   {"x-replaygate-reason", false, 0, plan.reason},
                   {"x-replaygate-from", false, 0, o.queue}};
        const amqp_basic_properties_t hold_properties =
            republish_properties(env, headers, &header_storage);
        const PublishOutcome moved = links.publisher->publish(
            "", o.hold_queue, hold_properties, env.message.body, o.confirm_timeout_ms);
        if (moved.result != PublishResult::kConfirmed) {
          report.outcome = returned + "; the move to " + o.hold_queue + " was " +
                           std::string(publish_result_name(moved.result)) + " " + moved.detail;
          if (hooks.letter) hooks.letter(report);
          stop("cannot move an unroutable replay to " + o.hold_queue + ": " +
                   std::string(publish_result_name(moved.result)) + " " + moved.detail,
               2);
          break;
        }
        plan.verb = held_verb;
        report.action = "hold";
        report.verb = std::string(table.verb_name(held_verb));
        report.effect = effect_name(table.verb_effect(held_verb));
        report.rule = plan.rule;
        report.reason = plan.reason;
        report.target = target_text("", o.hold_queue);
        report.outcome = returned + "; moved to " + report.target + ", publisher confirm";
        // Not a confirmed replay: the ledger keeps the claim as it is.
        confirmed = false;
      } else {
        // Nacked, channel closed (404: a missing exchange), no confirm in time, connection lost:
        // the letter is not acked. It goes back to the dead-letter queue as it was.
        report.outcome = "not acked: the publish to " + report.target + " was " +
                         std::string(publish_result_name(published.result)) +
                         (published.detail.empty() ? "" : " (" + published.detail + ")");
        std::string requeue_error;
        if (links.up()) links.consumer->requeue(env.delivery_tag, &requeue_error);
        if (published.result == PublishResult::kLost && !links.up()) {
          // The letter went back to the queue with the connection. Reconnect at the top of the
          // loop and go on: on redelivery the ledger's claim (not `confirmed`) holds it as outcome
          // unknown, so a publish that did reach the broker is never repeated.
          report.outcome += "; the letter returns to its queue with the connection";
          if (hooks.letter) hooks.letter(report);
          if (const std::string why = redrive.record_outcome(plan, false, report.outcome);
              !why.empty()) {
            stop("cannot record the outcome: " + why, 2);
            break;
          }
          continue;
        }
        if (hooks.letter) hooks.letter(report);
        stop(report.outcome, 2);
        break;
      }
    }
    // The result entry says what was done, where to, and why (the decision entry has the rule).
    if (const std::string why = redrive.record_outcome(
            plan, confirmed && plan.action == Action::kRepublish,
            report.outcome + (report.reason.empty() ? "" : "; reason: " + report.reason));
        !why.empty()) {
      stop("cannot record the outcome: " + why, 2);
      break;  // unacked: on redelivery the ledger says what happened
    }
    crash_point(o, "recorded");
    std::string ack_error;
    if (!links.consumer->ack(env.delivery_tag, &ack_error)) {
      // The connection went down between the record and the ack: the letter is redelivered after
      // the reconnect, and the ledger (confirmed, this message) acks it without publishing again.
      if (!links.up()) {
        report.outcome +=
            "; the ack was lost with the connection: the letter returns, and the "
            "ledger acks it on redelivery without publishing again";
        if (hooks.letter) hooks.letter(report);
        continue;
      }
      stop(ack_error, 2);
      break;
    }
    crash_point(o, "acked");
    ++stats->handled;
    ++stats->per_verb[plan.verb];
    if (plan.kind == LetterStep::Kind::kAckOnly) {
      ++stats->acked_only;
    } else if (plan.action == Action::kRepublish) {
      ++stats->republished;
    } else if (plan.action == Action::kPark) {
      ++stats->parked;
    } else {
      ++stats->held;
    }
    if (hooks.letter) hooks.letter(report);
    next_allowed = Clock::now() + std::chrono::microseconds(
                                      o.max_rate > 0 ? static_cast<int64_t>(1e6 / o.max_rate) : 0);
    if (o.max_target_depth && plan.action == Action::kRepublish && exchange.empty()) {
      std::string depth_error;
      const std::optional<uint32_t> depth = links.publish->queue_depth(routing_key, &depth_error);
      if (depth && *depth > *o.max_target_depth) {
        stop("queue '" + routing_key + "' holds " + std::to_string(*depth) +
                 " messages, more than --max-target-depth " + std::to_string(*o.max_target_depth),
             0);
        break;
      }
    }
    if (wanted) {
      stop("handled message " + *o.message_id, 0);
      break;
    }
  }
  if (o.message_id && !found_message && exit_code == 0) {
    stats->stop_reason += "; message " + *o.message_id + " was not among the " +
                          plural(stats->received, "letter") +
                          " seen (not in the queue, or further back than --max-unacked)";
    exit_code = 1;
  }
  progress(true);
  stats->finished = true;
  if (exit_code == 0 && (stats->unreadable > 0 || stats->left > 0)) exit_code = 1;
  return exit_code;
}

}  // namespace replaygate::redrive::rabbitmq
