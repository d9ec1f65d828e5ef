// Moving letters between a dead-letter queue and a plan's queue (plan_freeze.h).
#include "redrive/rabbitmq/plan_freeze.h"

#include <string_view>
#include <utility>

namespace replaygate::redrive::rabbitmq {
namespace {

std::string_view view(amqp_bytes_t b) { return {static_cast<const char*>(b.bytes), b.len}; }

bool has_header(const amqp_envelope_t& env, std::string_view name) {
  const amqp_basic_properties_t& p = env.message.properties;
  if ((p._flags & AMQP_BASIC_HEADERS_FLAG) == 0) return false;
  for (int i = 0; i < p.headers.num_entries; ++i) {
    if (view(p.headers.entries[i].key) == name) return true;
  }
  return false;
}

// The moved letter's properties: the original's, persistent, every header but the queue's own
// (kBrokerOwnedHeaders) and an old x-replaygate-plan, plus x-replaygate-plan: `plan_id` when set.
// Unlike republish_properties(), the gate's other x-replaygate-* markers stay: a freeze keeps the
// letter as it is. The result points into `env`, `plan_id` and *storage.
amqp_basic_properties_t moved_properties(const amqp_envelope_t& env,
                                         const std::optional<std::string>& plan_id,
                                         std::vector<amqp_table_entry_t>* storage) {
  amqp_basic_properties_t p = env.message.properties;
  storage->clear();
  if ((p._flags & AMQP_BASIC_HEADERS_FLAG) != 0) {
    for (int i = 0; i < p.headers.num_entries; ++i) {
      const std::string_view name = view(p.headers.entries[i].key);
      bool drop = name == kPlanHeader;
      for (const char* owned : kBrokerOwnedHeaders) drop = drop || name == owned;
      if (!drop) storage->push_back(p.headers.entries[i]);
    }
  }
  if (plan_id) {
    amqp_table_entry_t e;
    e.key = amqp_cstring_bytes(kPlanHeader);
    e.value.kind = AMQP_FIELD_KIND_UTF8;
    e.value.value.bytes.bytes = const_cast<char*>(plan_id->data());
    e.value.value.bytes.len = plan_id->size();
    storage->push_back(e);
  }
  p.headers.num_entries = static_cast<int>(storage->size());
  p.headers.entries = storage->data();
  p._flags |= AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
  p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  return p;
}

}  // namespace

QueueMover::QueueMover(MoverOptions options) : o_(std::move(options)) {}

QueueMover::~QueueMover() { close(); }

std::string QueueMover::open(bool* from_missing) {
  close();
  std::string error;
  Settings pull_settings = o_.settings, publish_settings = o_.settings;
  pull_settings.connection_name = "replaygate plan (take from " + o_.from + ")";
  publish_settings.connection_name = "replaygate plan (move to " + o_.to + ")";
  pull_ = Connection::open(o_.url, pull_settings, &error);
  if (!pull_) return error;
  publish_ = Connection::open(o_.url, publish_settings, &error);
  if (!publish_) return error;
  publisher_ = std::make_unique<Publisher>(*publish_);
  if (!publisher_->select(&error)) return error;
  const std::optional<uint32_t> depth = publish_->queue_depth(o_.from, &error);
  if (!depth) {
    if (from_missing != nullptr) *from_missing = !publish_->lost();
    return "the queue does not exist or cannot be read: " + error;
  }
  depth_at_open_ = *depth;
  if (o_.plan_id) {
    // The plan queue: classic (a quorum queue would count the gate's deliveries as attempts),
    // durable, never auto-deleted, and no argument that drops or expires letters.
    amqp_table_entry_t type;
    type.key = amqp_cstring_bytes("x-queue-type");
    type.value.kind = AMQP_FIELD_KIND_UTF8;
    type.value.value.bytes = amqp_cstring_bytes("classic");
    const amqp_table_t arguments{1, &type};
    if (!publish_->declare_queue(o_.to, arguments, &error)) return error;
  } else if (!publish_->queue_depth(o_.to, &error)) {
    return "the queue to move letters to does not exist or cannot be read: " + error;
  }
  consumer_ = std::make_unique<Consumer>(*pull_);
  consumer_->start_pull(o_.from);
  return "";
}

QueueMover::Next QueueMover::next(SeenLetter* out, std::string* error) {
  if (!current_) {
    if (spare_.empty()) {
      current_ = std::make_unique<Delivery>();
    } else {
      current_ = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  // A timeout of 0: an empty answer is the end (nothing is waited for).
  const Consumer::Next got = consumer_->next(current_.get(), 0, error);
  if (got == Consumer::Next::kTimeout) return Next::kEmpty;
  if (got != Consumer::Next::kDelivery) return Next::kLost;
  const amqp_envelope_t& env = current_->envelope();
  if (!o_.allow_peek && has_header(env, "x-delivery-count")) {
    *error = o_.from +
             " is a quorum queue (its deliveries carry x-delivery-count), where every letter "
             "looked at and left uses up a delivery attempt and one at its delivery limit can be "
             "dropped; give --allow-peek to accept that";
    return Next::kRefused;
  }
  envelope_to_record(env, o_.limits, &record_);
  out->record = &record_;
  out->timestamp.reset();
  const amqp_basic_properties_t& p = env.message.properties;
  if ((p._flags & AMQP_BASIC_TIMESTAMP_FLAG) != 0) {
    out->timestamp = static_cast<int64_t>(p.timestamp);
  }
  return Next::kLetter;
}

void QueueMover::take() {
  if (current_) taken_.push_back(std::move(current_));
}

std::string QueueMover::move_taken(const std::function<std::string()>& confirmed) {
  if (taken_.empty()) return "";
  std::vector<amqp_table_entry_t> storage;
  const std::vector<PublishOutcome> published = publisher_->publish_block(
      taken_.size(),
      [&](size_t i) {
        const amqp_envelope_t& env = taken_[i]->envelope();
        PublishRequest r;
        r.routing_key = o_.to;
        r.properties = moved_properties(env, o_.plan_id, &storage);
        r.body = env.message.body;
        return r;
      },
      o_.confirm_timeout_ms);
  for (const PublishOutcome& p : published) {
    if (p.result != PublishResult::kConfirmed) {
      return "a move to " + o_.to + " was not confirmed (" +
             std::string(publish_result_name(p.result)) + (p.detail.empty() ? "" : ": ") +
             p.detail + "); its original stays in " + o_.from;
    }
  }
  if (const std::string why = confirmed(); !why.empty()) return why;
  if (o_.test_points != nullptr) o_.test_points->at(o_.step + "_confirmed");
  std::string error;
  for (const std::unique_ptr<Delivery>& d : taken_) {
    if (!consumer_->ack(d->envelope().delivery_tag, &error)) return error;
  }
  if (!consumer_->barrier(&error)) return error;
  for (std::unique_ptr<Delivery>& d : taken_) spare_.push_back(std::move(d));
  taken_.clear();
  if (o_.test_points != nullptr) o_.test_points->at(o_.step + "_acked");
  return "";
}

std::string QueueMover::delete_if_empty(const std::string& name) {
  std::string error;
  if (!publish_ || !publish_->delete_empty_queue(name, &error)) {
    return error.empty() ? "not connected" : error;
  }
  return "";
}

std::optional<uint32_t> QueueMover::depth(const std::string& name, std::string* error) {
  if (!publish_) {
    *error = "not connected";
    return std::nullopt;
  }
  return publish_->queue_depth(name, error);
}

void QueueMover::close() {
  consumer_.reset();
  publisher_.reset();
  taken_.clear();
  current_.reset();
  pull_.reset();
  publish_.reset();
}

}  // namespace replaygate::redrive::rabbitmq
