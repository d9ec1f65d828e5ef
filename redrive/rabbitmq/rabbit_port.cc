// The redrive port on RabbitMQ: consume, publish with confirms, ack (rabbit_port.h).
#include "redrive/rabbitmq/rabbit_port.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

namespace replaygate::redrive::rabbitmq {

// The two connections (../shared/SERVERS.md: deliveries interleave with confirms on one).
struct AmqpLinks {
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

namespace {

using Clock = std::chrono::steady_clock;
using Links = AmqpLinks;

// Connects both connections, selects confirms, makes the park and hold queues (apply only) and
// starts consuming. "" or why not.
std::string connect(const PortOptions& o, const AmqpUrl& url, Links* links) {
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
  links->consume = Connection::open(url, consume_settings, &error);
  if (!links->consume) return error;
  links->publish = Connection::open(url, publish_settings, &error);
  if (!links->publish) return error;
  links->publisher = std::make_unique<Publisher>(*links->publish);
  if (!links->publisher->select(&error)) return error;
  if (!links->publish->queue_depth(o.queue, &error)) {
    return o.exclusive ? "the plan queue " + o.queue +
                             " does not exist or cannot be read (its letters were moved back by "
                             "a cancel, or it was deleted by hand): " +
                             error
                       : "the dead-letter queue does not exist or cannot be read: " + error;
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
  const uint64_t window = std::min<uint64_t>(65535, (o.keeps ? o.max_unacked : 0) + o.prefetch);
  if (!links->consumer->start(o.queue, static_cast<uint16_t>(window), &error, o.exclusive)) {
    if (o.exclusive && error.find("ACCESS_REFUSED") != std::string::npos) {
      return "another gate is consuming " + o.queue +
             " (a plan runs in one gate at a time, so that its cap and counts hold): " + error;
    }
    return error;
  }
  return "";
}

// Waits `ms` on the publishing connection's socket (heartbeats, alarms), never sleeping blind.
// `tick` (tests): the pause point "rate_wait" between the deadline check and the time left.
void wait_on(Links& links, int ms, const std::function<void()>& tick) {
  if (ms <= 0 || !links.publish || links.publish->lost()) {
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return;
  }
  const auto end = Clock::now() + std::chrono::milliseconds(ms);
  while (Clock::now() < end && !links.publish->lost()) {
    if (tick) tick();
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
std::optional<DeadLetter::Refusal> refuse_target(const PortOptions& o, const std::string& exchange,
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

RabbitPort::RabbitPort(PortOptions options, std::function<void(const std::string&)> note,
                       const TestPoints* test_points)
    : o_(std::move(options)),
      note_(std::move(note)),
      test_points_(test_points),
      links_(std::make_unique<AmqpLinks>()) {}

RabbitPort::~RabbitPort() = default;

std::string RabbitPort::open() {
  unsettled_.clear();
  cancelled_.clear();
  // After a lost connection its node may be the one that went: the next one first.
  const size_t first = opened_ ? (current_ + 1) % o_.urls.size() : 0;
  std::string errors;
  for (size_t i = 0; i < o_.urls.size(); ++i) {
    current_ = (first + i) % o_.urls.size();
    const std::string error = connect(o_, o_.urls[current_], links_.get());
    if (error.empty()) {
      opened_ = true;
      return "";
    }
    errors += (errors.empty() ? "" : "; ") + error;
  }
  links_->drop();
  return errors;
}

bool RabbitPort::up() const { return links_->up(); }

std::string RabbitPort::lost_reason(bool where) const {
  const AmqpLinks& links = *links_;
  if (!where) {
    return links.consume && links.consume->lost() ? links.consume->lost_reason()
                                                  : links.publish->lost_reason();
  }
  return links.consume && links.consume->lost()
             ? "consuming connection: " + links.consume->lost_reason()
         : links.publish ? "publishing connection: " + links.publish->lost_reason()
                         : "connection lost";
}

void RabbitPort::close() {
  links_->drop();
  unsettled_.clear();  // the broker took them back with the connection
}

Port::Next RabbitPort::next(size_t n, int timeout_ms, int linger_ms, std::vector<Letter>* out,
                            std::string* error) {
  out->clear();
  if (!cancelled_.empty()) {
    *error = cancelled_;
    return Next::kCancelled;
  }
  n = std::max<size_t>(n, 1);
  while (hands_.size() < n) hands_.push_back(std::make_unique<InHand>());
  Clock::time_point linger_end;
  for (size_t i = 0; i < n; ++i) {
    // After the first, what has arrived by the end of the linger (then only what is there).
    const int wait_ms = i == 0 ? timeout_ms
                               : static_cast<int>(std::max<int64_t>(
                                     0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                            linger_end - Clock::now())
                                            .count()));
    std::string why;
    const Consumer::Next got = links_->consumer->next(&hands_[i]->delivery, wait_ms, &why);
    if (got != Consumer::Next::kDelivery) {
      if (i == 0) {
        *error = why;
        return got == Consumer::Next::kTimeout     ? Next::kTimeout
               : got == Consumer::Next::kCancelled ? Next::kCancelled
                                                   : Next::kLost;
      }
      if (got == Consumer::Next::kCancelled) cancelled_ = why;
      break;  // the block is what came: a lost connection is seen on the next call
    }
    if (i == 0) linger_end = Clock::now() + std::chrono::milliseconds(linger_ms);
    Letter& letter = out->emplace_back();
    letter.slot = static_cast<uint32_t>(i);
    fill(*hands_[i], letter);
    unsettled_.insert(letter.handle);
    if (!letter.refuse_peek.empty()) break;  // looking at more would cost them an attempt
  }
  return Next::kLetters;
}

void RabbitPort::fill(InHand& hand, Letter& letter) {
  const amqp_envelope_t& env = hand.delivery.envelope();
  letter.handle = env.delivery_tag;
  if (!o_.apply && !o_.allow_peek && has_header(env, "x-delivery-count")) {
    letter.refuse_peek =
        "refusing to peek further: " + o_.queue +
        " is a quorum queue (its deliveries carry x-delivery-count), where a dry run uses "
        "up a delivery attempt of every letter it sees and can drop one at its delivery "
        "limit; give --allow-peek to accept that (--management URL shows the limit)";
    return;
  }
  EnvelopeRecord& record = hand.record;
  envelope_to_record(env, o_.limits, &record);
  DeadLetter& dead = letter.dead;
  dead.record = std::string_view(record.record).substr(0, record.record_size);
  dead.problem = record.problem;
  dead.message_id = record.message_id;
  dead.replay_target_known = o_.replay_routing_key.has_value() || !record.died_in.empty();
  dead.redelivered = env.redelivered != 0;
  dead.replays = record.replays;
  dead.body_digest = record.body_digest;
  hand.replay_key = o_.replay_routing_key.value_or(record.died_in);
  dead.refuse_target = [this, &hand](const Table& decided_on, const Input& input) {
    return refuse_target(o_, o_.replay_exchange.value_or(""), hand.replay_key, decided_on, input);
  };
  const amqp_basic_properties_t& p = env.message.properties;
  if ((p._flags & AMQP_BASIC_TIMESTAMP_FLAG) != 0) {
    letter.timestamp = static_cast<int64_t>(p.timestamp);
  }
  // Its last delivery: the broker drops (or dead-letters) a letter returned with its
  // x-delivery-count at the limit, so it is held now, whatever the filters or the mode. An
  // unreadable count counts as the limit (fail closed).
  if (o_.delivery_limit && has_header(env, "x-delivery-count")) {
    const int64_t count = header_int(env, "x-delivery-count").value_or(*o_.delivery_limit);
    letter.must_move = count >= *o_.delivery_limit;
    if (letter.must_move && dead.problem.empty()) {
      dead.hold_rule = "gate:last_delivery_attempt";
      dead.problem = "its last delivery attempt (x-delivery-count " + std::to_string(count) +
                     ", delivery limit " + std::to_string(*o_.delivery_limit) +
                     "): returned, the broker would drop it";
    }
  }
}

void RabbitPort::wait(int ms, const std::function<void()>& tick) { wait_on(*links_, ms, tick); }

std::string RabbitPort::target(const Letter& letter, Action action) const {
  if (action == Action::kRepublish) {
    return target_text(o_.replay_exchange.value_or(""), hands_[letter.slot]->replay_key);
  }
  return target_text("", action == Action::kPark ? o_.park_queue : o_.hold_queue);
}

std::optional<std::string> RabbitPort::refuse_move(const Letter& letter, Action action) const {
  if (action == Action::kRepublish) return std::nullopt;
  const std::string& queue = action == Action::kPark ? o_.park_queue : o_.hold_queue;
  if (queue != hands_[letter.slot]->record.died_in) return std::nullopt;
  return "left in " + o_.queue + ", unacked: its " + std::string(action_name(action)) + " queue '" +
         queue + "' is the queue it died in (its consumer would run it again); choose another " +
         (action == Action::kPark ? "--park-queue" : "--hold-queue");
}

PublishRequest RabbitPort::request(const Move& m) {
  const InHand& hand = *hands_[m.letter->slot];
  const amqp_envelope_t& env = hand.delivery.envelope();
  PublishRequest r;
  move_headers_.clear();
  if (m.action == Action::kRepublish) {
    r.exchange = o_.replay_exchange.value_or("");
    r.routing_key = hand.replay_key;
    move_headers_.push_back({"x-replay", true, m.copy_replay, ""});  // the value claimed
  } else {
    r.routing_key = m.action == Action::kPark ? o_.park_queue : o_.hold_queue;
    move_headers_.push_back({"x-replaygate-verb", false, 0, m.verb});
    move_headers_.push_back({"x-replaygate-rule", false, 0, m.rule});
    move_headers_.push_back({"x-replaygate-reason", false, 0, m.reason.substr(0, 4096)});
    move_headers_.push_back({"x-replaygate-from", false, 0, o_.queue});
  }
  r.properties = republish_properties(env, move_headers_, &header_storage_);
  r.body = env.message.body;
  return r;
}

namespace {

MoveAnswer answer_of(const PublishOutcome& published) {
  MoveAnswer answer;
  answer.result = std::string(publish_result_name(published.result));
  answer.detail = published.detail;
  switch (published.result) {
    case PublishResult::kConfirmed:
      answer.outcome = MoveAnswer::Outcome::kDone;
      answer.detail = "publisher confirm";
      break;
    case PublishResult::kReturned:
      answer.outcome = MoveAnswer::Outcome::kNotDone;
      answer.unroutable = true;
      break;
    case PublishResult::kNacked:
      answer.outcome = MoveAnswer::Outcome::kNotDone;
      break;
    case PublishResult::kChannelClosed:
    case PublishResult::kTimeout:
      answer.outcome = MoveAnswer::Outcome::kUnknown;
      break;
    case PublishResult::kLost:
      answer.outcome = MoveAnswer::Outcome::kUnknown;
      answer.lost = true;
      break;
  }
  return answer;
}

}  // namespace

std::vector<MoveAnswer> RabbitPort::act(const std::vector<Move>& block) {
  const std::vector<PublishOutcome> published = links_->publisher->publish_block(
      block.size(), [&](size_t i) { return request(block[i]); }, o_.confirm_timeout_ms,
      [&](const std::string& reason) {
        if (note_) {
          note_("publishing is blocked by the broker (" + reason +
                "): waiting for the alarm to clear");
        }
      },
      [&](size_t) {
        if (test_points_ != nullptr) test_points_->at("published");
      });
  std::vector<MoveAnswer> answers;
  answers.reserve(published.size());
  for (const PublishOutcome& p : published) answers.push_back(answer_of(p));
  return answers;
}

std::vector<std::string> RabbitPort::settle(const std::vector<const Letter*>& block) {
  std::vector<std::string> errors(block.size());
  std::set<uint64_t> tags;
  for (const Letter* letter : block) tags.insert(letter->handle);
  // One `multiple` ack up to the highest tag below which every letter handed out is settled
  // now; single acks for the others (a letter kept unacked on purpose is never spanned).
  uint64_t through = 0;
  for (const uint64_t tag : unsettled_) {
    if (tags.count(tag) == 0) break;
    through = tag;
  }
  std::string error;
  if (through > 0 && !links_->consumer->ack(through, &error, true)) {
    for (std::string& e : errors) e = error;
    return errors;
  }
  unsettled_.erase(unsettled_.begin(), unsettled_.upper_bound(through));
  for (size_t i = 0; i < block.size(); ++i) {
    const uint64_t tag = block[i]->handle;
    if (tag <= through) continue;
    if (links_->consumer->ack(tag, &errors[i])) unsettled_.erase(tag);
  }
  return errors;
}

void RabbitPort::give_back(const Letter& letter) {
  std::string error;
  if (links_->up()) links_->consumer->requeue(letter.handle, &error);
  unsettled_.erase(letter.handle);
}

std::optional<uint32_t> RabbitPort::depth() {
  std::string error;
  return links_->publish->queue_depth(o_.queue, &error);
}

Port::HeldDepth RabbitPort::held_depth() {
  HeldDepth out;
  // Only queues connect() made sure of: a passive declare of a missing queue is a channel error
  // the broker logs, once a second for a dry run that never creates them.
  if (!o_.apply && !o_.delivery_limit) return out;
  std::string error;
  if (std::optional<uint32_t> n = links_->publish->queue_depth(o_.hold_queue, &error)) {
    out.held = *n;
  }
  if (std::optional<uint32_t> n = links_->publish->queue_depth(o_.park_queue, &error)) {
    out.parked = *n;
  }
  return out;
}

std::optional<Port::TargetDepth> RabbitPort::replay_target_depth(const Letter& letter) {
  if (!o_.replay_exchange.value_or("").empty()) return std::nullopt;  // not a queue
  std::string error;
  const std::string& queue = hands_[letter.slot]->replay_key;
  const std::optional<uint32_t> depth = links_->publish->queue_depth(queue, &error);
  if (!depth) return std::nullopt;
  return TargetDepth{queue, *depth};
}

std::string RabbitPort::pass_over_cost() const {
  if (!o_.delivery_limit) return "";
  return "it has a delivery limit of " + std::to_string(*o_.delivery_limit) +
         ", every letter passed over goes back with one attempt used";
}

}  // namespace replaygate::redrive::rabbitmq
