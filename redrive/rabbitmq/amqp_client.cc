// librabbitmq 0.11 connections, consuming and confirmed publishing for the gate (amqp_client.h).
#include "redrive/rabbitmq/amqp_client.h"

#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <vector>

namespace replaygate::redrive::rabbitmq {
namespace {

std::string bytes_text(amqp_bytes_t b) {
  return b.len == 0 ? std::string() : std::string(static_cast<const char*>(b.bytes), b.len);
}

amqp_bytes_t as_bytes(const std::string& s) {
  amqp_bytes_t b;
  b.len = s.size();
  b.bytes = const_cast<char*>(s.data());
  return b;
}

timeval to_timeval(int ms) {
  if (ms < 0) ms = 0;
  timeval tv{};
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  return tv;
}

// RFC 3986 percent-decoding; false on a bad escape.
bool percent_decode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = hex(in[i + 1]), lo = hex(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

}  // namespace

std::string percent_encode(std::string_view in) {
  static const char* digits = "0123456789ABCDEF";
  std::string out;
  for (const char c : in) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(digits[u >> 4]);
      out.push_back(digits[u & 15]);
    }
  }
  return out;
}

std::string AmqpUrl::describe() const {
  return "amqp://" + percent_encode(user) + "@" + host + ":" + std::to_string(port) + "/" +
         percent_encode(vhost);
}

std::optional<AmqpUrl> parse_amqp_url(std::string_view text, std::string* problem) {
  AmqpUrl url;
  if (text.starts_with("amqps://")) {
    *problem = "amqps:// (TLS) is not supported by this build; use amqp:// on a trusted network";
    return std::nullopt;
  }
  if (!text.starts_with("amqp://")) {
    *problem =
        "'" + std::string(text) + "' is not an amqp:// URL (amqp://USER:PASS@HOST:PORT/VHOST)";
    return std::nullopt;
  }
  std::string_view rest = text.substr(7);
  std::string_view authority = rest, path;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    authority = rest.substr(0, slash);
    path = rest.substr(slash + 1);
  }
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const size_t colon = userinfo.find(':');
    if (!percent_decode(userinfo.substr(0, colon), &url.user) ||
        (colon != std::string_view::npos &&
         !percent_decode(userinfo.substr(colon + 1), &url.password))) {
      *problem = "the URL's user or password has a bad %-escape";
      return std::nullopt;
    }
  }
  std::string_view host = authority;
  if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    const std::string_view port = authority.substr(colon + 1);
    int value = 0;
    if (port.empty() || port.size() > 5) value = -1;
    for (const char c : port) {
      if (c < '0' || c > '9') value = -1;
      if (value >= 0) value = value * 10 + (c - '0');
    }
    if (value <= 0 || value > 65535) {
      *problem = "the URL's port '" + std::string(port) + "' is not a number from 1 to 65535";
      return std::nullopt;
    }
    url.port = value;
  }
  if (host.empty()) {
    *problem = "the URL has no host (amqp://USER:PASS@HOST:PORT/VHOST)";
    return std::nullopt;
  }
  url.host = std::string(host);
  if (!percent_decode(path, &url.vhost)) {
    *problem = "the URL's vhost has a bad %-escape (write the vhost \"/\" as %2F)";
    return std::nullopt;
  }
  if (url.vhost.empty()) url.vhost = "/";
  return url;
}

std::string Connection::describe(const amqp_rpc_reply_t& reply) {
  switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL:
      return "ok";
    case AMQP_RESPONSE_NONE:
      return "the broker sent no reply";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      return amqp_error_string2(reply.library_error);
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const auto* m = static_cast<const amqp_connection_close_t*>(reply.reply.decoded);
        return "the broker closed the connection: " + std::to_string(m->reply_code) + " " +
               bytes_text(m->reply_text);
      }
      if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const auto* m = static_cast<const amqp_channel_close_t*>(reply.reply.decoded);
        return "the broker closed the channel: " + std::to_string(m->reply_code) + " " +
               bytes_text(m->reply_text);
      }
      return "the broker replied with an unexpected method";
  }
  return "unknown reply";
}

std::unique_ptr<Connection> Connection::open(const AmqpUrl& url, const Settings& settings,
                                             std::string* error) {
  std::unique_ptr<Connection> c(new Connection());
  c->state_ = amqp_new_connection();
  if (c->state_ == nullptr) {
    *error = "out of memory making an AMQP connection";
    return nullptr;
  }
  amqp_socket_t* socket = amqp_tcp_socket_new(c->state_);
  if (socket == nullptr) {
    *error = "cannot make a TCP socket";
    return nullptr;
  }
  timeval tv = to_timeval(settings.connect_timeout_ms);
  if (const int status = amqp_socket_open_noblock(socket, url.host.c_str(), url.port, &tv);
      status != AMQP_STATUS_OK) {
    *error = "cannot connect to " + url.describe() + ": " + amqp_error_string2(status);
    return nullptr;
  }
  // connection.blocked (memory and disk alarms) is sent only to clients that say they take it.
  amqp_table_entry_t capability[1];
  capability[0].key = amqp_cstring_bytes("connection.blocked");
  capability[0].value.kind = AMQP_FIELD_KIND_BOOLEAN;
  capability[0].value.value.boolean = 1;
  amqp_table_entry_t properties[2];
  properties[0].key = amqp_cstring_bytes("capabilities");
  properties[0].value.kind = AMQP_FIELD_KIND_TABLE;
  properties[0].value.value.table.num_entries = 1;
  properties[0].value.value.table.entries = capability;
  properties[1].key = amqp_cstring_bytes("connection_name");
  properties[1].value.kind = AMQP_FIELD_KIND_UTF8;
  properties[1].value.value.bytes = as_bytes(settings.connection_name);
  amqp_table_t client_properties;
  client_properties.num_entries = settings.connection_name.empty() ? 1 : 2;
  client_properties.entries = properties;
  const amqp_rpc_reply_t login = amqp_login_with_properties(
      c->state_, url.vhost.c_str(), 3, settings.frame_max, settings.heartbeat, &client_properties,
      AMQP_SASL_METHOD_PLAIN, url.user.c_str(), url.password.c_str());
  if (login.reply_type != AMQP_RESPONSE_NORMAL) {
    *error = "cannot log in to " + url.describe() + ": " + describe(login);
    c->lost_ = true;
    return nullptr;
  }
  if (!c->open_channel(1, error)) return nullptr;
  return c;
}

Connection::~Connection() {
  if (state_ == nullptr) return;
  if (!lost_) {
    amqp_channel_close(state_, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
  }
  amqp_destroy_connection(state_);
}

void Connection::set_lost(std::string why) {
  if (lost_) return;
  lost_ = true;
  lost_reason_ = std::move(why);
}

void Connection::set_blocked(bool blocked, std::string reason) {
  blocked_ = blocked;
  blocked_reason_ = std::move(reason);
}

bool Connection::open_channel(uint16_t channel, std::string* error) {
  amqp_channel_open(state_, channel);
  const amqp_rpc_reply_t reply = amqp_get_rpc_reply(state_);
  if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
    *error = "cannot open channel " + std::to_string(channel) + ": " + describe(reply);
    if (reply.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
        reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
      set_lost(*error);
    }
    return false;
  }
  return true;
}

bool Connection::query_channel(std::string* error) {
  if (query_open_) return true;
  if (!open_channel(2, error)) return false;
  query_open_ = true;
  return true;
}

namespace {

// After a synchronous call on channel 2 failed: a channel.close needs its close-ok (the channel
// is then closed; it is reopened on next use), a connection.close means the connection is gone.
void after_failed_query(Connection& c, const amqp_rpc_reply_t& reply, bool* query_open) {
  if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
      reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    amqp_channel_close_ok_t ok{};
    amqp_send_method(c.state(), 2, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
    *query_open = false;
    return;
  }
  if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
      reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
    amqp_connection_close_ok_t ok{};
    amqp_send_method(c.state(), 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
  }
  c.set_lost(Connection::describe(reply));
}

}  // namespace

std::optional<uint32_t> Connection::queue_depth(const std::string& queue, std::string* error) {
  if (!query_channel(error)) return std::nullopt;
  const amqp_queue_declare_ok_t* ok =
      amqp_queue_declare(state_, 2, as_bytes(queue), 1, 0, 0, 0, amqp_empty_table);
  const amqp_rpc_reply_t reply = amqp_get_rpc_reply(state_);
  if (ok == nullptr || reply.reply_type != AMQP_RESPONSE_NORMAL) {
    *error = "queue '" + queue + "': " + describe(reply);
    after_failed_query(*this, reply, &query_open_);
    return std::nullopt;
  }
  return ok->message_count;
}

bool Connection::ensure_queue(const std::string& queue, std::string* error) {
  std::string missing;
  if (queue_depth(queue, &missing)) return true;
  if (lost_) {
    *error = missing;
    return false;
  }
  if (!query_channel(error)) return false;
  const amqp_queue_declare_ok_t* ok =
      amqp_queue_declare(state_, 2, as_bytes(queue), 0, 1, 0, 0, amqp_empty_table);
  const amqp_rpc_reply_t reply = amqp_get_rpc_reply(state_);
  if (ok == nullptr || reply.reply_type != AMQP_RESPONSE_NORMAL) {
    *error = "cannot declare queue '" + queue + "': " + describe(reply);
    after_failed_query(*this, reply, &query_open_);
    return false;
  }
  return true;
}

bool Connection::declare_queue(const std::string& queue, const amqp_table_t& arguments,
                               std::string* error) {
  if (!query_channel(error)) return false;
  const amqp_queue_declare_ok_t* ok =
      amqp_queue_declare(state_, 2, as_bytes(queue), 0, 1, 0, 0, arguments);
  const amqp_rpc_reply_t reply = amqp_get_rpc_reply(state_);
  if (ok == nullptr || reply.reply_type != AMQP_RESPONSE_NORMAL) {
    *error = "cannot declare queue '" + queue + "': " + describe(reply);
    after_failed_query(*this, reply, &query_open_);
    return false;
  }
  return true;
}

bool Connection::delete_empty_queue(const std::string& queue, std::string* error) {
  std::string missing;
  if (!queue_depth(queue, &missing)) return !lost_;  // no such queue (404), unless the link went
  const amqp_queue_delete_ok_t* ok =
      amqp_queue_delete(state_, 2, as_bytes(queue), /*if_unused=*/1, /*if_empty=*/1);
  const amqp_rpc_reply_t reply = amqp_get_rpc_reply(state_);
  if (ok == nullptr || reply.reply_type != AMQP_RESPONSE_NORMAL) {
    *error = "cannot delete queue '" + queue + "': " + describe(reply);
    after_failed_query(*this, reply, &query_open_);
    return false;
  }
  return true;
}

bool Connection::exchange_exists(const std::string& exchange, std::string* error) {
  if (exchange.empty()) return true;
  if (!query_channel(error)) return false;
  amqp_exchange_declare(state_, 2, as_bytes(exchange), amqp_cstring_bytes("direct"), 1, 0, 0, 0,
                        amqp_empty_table);
  const amqp_rpc_reply_t reply = amqp_get_rpc_reply(state_);
  if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
    *error = "exchange '" + exchange + "': " + describe(reply);
    after_failed_query(*this, reply, &query_open_);
    return false;
  }
  return true;
}

bool Connection::handle_async_method(const amqp_frame_t& frame) {
  if (frame.frame_type != AMQP_FRAME_METHOD) return false;
  switch (frame.payload.method.id) {
    case AMQP_CONNECTION_BLOCKED_METHOD: {
      const auto* m = static_cast<const amqp_connection_blocked_t*>(frame.payload.method.decoded);
      set_blocked(true, bytes_text(m->reason));
      return true;
    }
    case AMQP_CONNECTION_UNBLOCKED_METHOD:
      set_blocked(false, "");
      return true;
    case AMQP_CONNECTION_CLOSE_METHOD: {
      const auto* m = static_cast<const amqp_connection_close_t*>(frame.payload.method.decoded);
      const std::string why = "the broker closed the connection: " + std::to_string(m->reply_code) +
                              " " + bytes_text(m->reply_text);
      amqp_connection_close_ok_t ok{};
      amqp_send_method(state_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
      set_lost(why);
      return true;
    }
    case AMQP_CHANNEL_CLOSE_METHOD:
      if (frame.channel == 2) {
        amqp_channel_close_ok_t ok{};
        amqp_send_method(state_, 2, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
        query_open_ = false;
        return true;
      }
      return false;
    default:
      return false;
  }
}

Delivery::~Delivery() {
  if (filled) amqp_destroy_envelope(&envelope_);
}

bool Consumer::start(const std::string& queue, uint16_t prefetch, std::string* error,
                     bool exclusive) {
  amqp_connection_state_t s = connection_.state();
  if (amqp_basic_qos(s, 1, 0, prefetch, 0) == nullptr) {
    *error = "basic.qos: " + Connection::describe(amqp_get_rpc_reply(s));
    connection_.set_lost(*error);
    return false;
  }
  if (amqp_basic_consume(s, 1, as_bytes(queue), amqp_empty_bytes, 0, /*no_ack=*/0,
                         exclusive ? 1 : 0, amqp_empty_table) == nullptr) {
    const amqp_rpc_reply_t reply = amqp_get_rpc_reply(s);
    *error = "cannot consume queue '" + queue + "': " + Connection::describe(reply);
    connection_.set_lost(*error);  // channel 1 is closed: the caller reconnects or stops
    return false;
  }
  return true;
}

bool Consumer::start_pull(const std::string& queue) {
  pull_queue_ = queue;
  return true;
}

Consumer::Next Consumer::pull(Delivery* delivery, int timeout_ms, std::string* error) {
  amqp_connection_state_t s = connection_.state();
  const amqp_rpc_reply_t reply = amqp_basic_get(s, 1, as_bytes(pull_queue_), /*no_ack=*/0);
  if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
    *error = "basic.get from '" + pull_queue_ + "': " + Connection::describe(reply);
    connection_.set_lost(*error);  // a channel or connection error: reconnect or stop
    return Next::kLost;
  }
  if (reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) {
    // Nothing now: wait on the socket (heartbeats, a connection.close), never a blind sleep.
    amqp_frame_t frame;
    timeval tv = to_timeval(timeout_ms);
    const int status = amqp_simple_wait_frame_noblock(s, &frame, &tv);
    if (status == AMQP_STATUS_OK) {
      connection_.handle_async_method(frame);
    } else if (status != AMQP_STATUS_TIMEOUT) {
      *error = std::string("waiting on the consuming connection: ") + amqp_error_string2(status);
      connection_.set_lost(*error);
      return Next::kLost;
    }
    if (connection_.lost()) {
      *error = connection_.lost_reason();
      return Next::kLost;
    }
    return Next::kTimeout;
  }
  const auto* ok = static_cast<const amqp_basic_get_ok_t*>(reply.reply.decoded);
  amqp_envelope_t& env = delivery->envelope();
  env = {};
  env.channel = 1;
  env.delivery_tag = ok->delivery_tag;
  env.redelivered = ok->redelivered;
  // Copies: amqp_destroy_envelope frees them, and the decoded method lives in the connection's
  // pool, which reading the message reuses.
  env.exchange = amqp_bytes_malloc_dup(ok->exchange);
  env.routing_key = amqp_bytes_malloc_dup(ok->routing_key);
  env.consumer_tag = amqp_empty_bytes;
  const amqp_rpc_reply_t read = amqp_read_message(s, 1, &env.message, 0);
  if (read.reply_type != AMQP_RESPONSE_NORMAL) {
    amqp_bytes_free(env.exchange);
    amqp_bytes_free(env.routing_key);
    env = {};
    *error = "reading a message from '" + pull_queue_ + "': " + Connection::describe(read);
    connection_.set_lost(*error);
    return Next::kLost;
  }
  delivery->filled = true;  // destroyed on the next call or with the Delivery
  return Next::kDelivery;
}

Consumer::Next Consumer::next(Delivery* delivery, int timeout_ms, std::string* error) {
  amqp_connection_state_t s = connection_.state();
  if (delivery->filled) {
    amqp_destroy_envelope(&delivery->envelope());
    delivery->filled = false;
  }
  amqp_maybe_release_buffers(s);
  if (!pull_queue_.empty()) return pull(delivery, timeout_ms, error);
  timeval tv = to_timeval(timeout_ms);
  const amqp_rpc_reply_t reply = amqp_consume_message(s, &delivery->envelope(), &tv, 0);
  if (reply.reply_type == AMQP_RESPONSE_NORMAL) {
    delivery->filled = true;
    return Next::kDelivery;
  }
  if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
      reply.library_error == AMQP_STATUS_TIMEOUT) {
    return Next::kTimeout;
  }
  if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
      reply.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
    amqp_frame_t frame;
    if (amqp_simple_wait_frame(s, &frame) != AMQP_STATUS_OK) {
      *error = "the connection failed";
      connection_.set_lost(*error);
      return Next::kLost;
    }
    if (frame.frame_type == AMQP_FRAME_METHOD) {
      if (frame.payload.method.id == AMQP_BASIC_CANCEL_METHOD) {
        *error = "the broker cancelled the consumer (the queue was deleted?)";
        return Next::kCancelled;
      }
      if (frame.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const auto* m = static_cast<const amqp_channel_close_t*>(frame.payload.method.decoded);
        *error = "the broker closed the consuming channel: " + std::to_string(m->reply_code) + " " +
                 bytes_text(m->reply_text);
        amqp_channel_close_ok_t ok{};
        amqp_send_method(s, frame.channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
        connection_.set_lost(*error);
        return Next::kLost;
      }
      connection_.handle_async_method(frame);
      if (connection_.lost()) {
        *error = connection_.lost_reason();
        return Next::kLost;
      }
    }
    return Next::kTimeout;  // something else (an unblock): wait again
  }
  *error = Connection::describe(reply);
  connection_.set_lost(*error);
  return Next::kLost;
}

bool Consumer::ack(uint64_t delivery_tag, std::string* error, bool through) {
  if (const int status = amqp_basic_ack(connection_.state(), 1, delivery_tag, through ? 1 : 0);
      status != AMQP_STATUS_OK) {
    *error = std::string("basic.ack failed: ") + amqp_error_string2(status);
    connection_.set_lost(*error);
    return false;
  }
  return true;
}

bool Consumer::requeue(uint64_t delivery_tag, std::string* error) {
  if (const int status = amqp_basic_nack(connection_.state(), 1, delivery_tag, 0, 1);
      status != AMQP_STATUS_OK) {
    *error = std::string("basic.nack failed: ") + amqp_error_string2(status);
    connection_.set_lost(*error);
    return false;
  }
  return true;
}

bool Consumer::barrier(std::string* error) {
  amqp_basic_qos(connection_.state(), 1, 0, 0, 0);
  const amqp_rpc_reply_t reply = amqp_get_rpc_reply(connection_.state());
  if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
    *error = "basic.qos: " + Connection::describe(reply);
    connection_.set_lost(*error);
    return false;
  }
  return true;
}

std::string_view publish_result_name(PublishResult result) {
  switch (result) {
    case PublishResult::kConfirmed:
      return "confirmed";
    case PublishResult::kReturned:
      return "returned";
    case PublishResult::kNacked:
      return "nacked";
    case PublishResult::kChannelClosed:
      return "channel closed";
    case PublishResult::kTimeout:
      return "no confirm in time";
    case PublishResult::kLost:
      return "connection lost";
  }
  return "unknown";
}

bool Publisher::select(std::string* error) {
  amqp_connection_state_t s = connection_.state();
  if (amqp_confirm_select(s, 1) == nullptr) {
    *error = "confirm.select: " + Connection::describe(amqp_get_rpc_reply(s));
    connection_.set_lost(*error);
    return false;
  }
  next_sequence_ = 1;
  return true;
}

PublishOutcome Publisher::publish(const std::string& exchange, const std::string& routing_key,
                                  const amqp_basic_properties_t& properties, amqp_bytes_t body,
                                  int timeout_ms,
                                  const std::function<void(const std::string&)>& on_blocked,
                                  const std::function<void()>& after_send) {
  std::vector<PublishOutcome> outcomes = publish_block(
      1,
      [&](size_t) {
        return PublishRequest{exchange, routing_key, properties, body};
      },
      timeout_ms, on_blocked,
      [&](size_t) {
        if (after_send) after_send();
      });
  return std::move(outcomes.front());
}

namespace {

// A publish of a block on the wire, waiting for its confirm.
struct InFlight {
  std::string exchange, routing_key;
  amqp_bytes_t body{};
  bool returned = false, settled = false;
  std::string return_text;
};

bool same_bytes(amqp_bytes_t a, amqp_bytes_t b) {
  return a.len == b.len && (a.len == 0 || std::memcmp(a.bytes, b.bytes, a.len) == 0);
}

}  // namespace

std::vector<PublishOutcome> Publisher::publish_block(
    size_t count, const std::function<PublishRequest(size_t)>& request, int timeout_ms,
    const std::function<void(const std::string&)>& on_blocked,
    const std::function<void(size_t)>& after_send) {
  using Clock = std::chrono::steady_clock;
  amqp_connection_state_t s = connection_.state();
  std::vector<PublishOutcome> outcomes(count);
  std::vector<InFlight> sent;
  sent.reserve(count);
  const uint64_t first = next_sequence_;
  // What is not sent, or not settled when the connection goes, has an unknown outcome.
  const auto lose_rest = [&] {
    for (size_t i = 0; i < count; ++i) {
      if (i < sent.size() && sent[i].settled) continue;
      outcomes[i] = {PublishResult::kLost, connection_.lost_reason()};
    }
    return outcomes;
  };
  for (size_t i = 0; i < count; ++i) {
    if (connection_.lost()) return lose_rest();
    const PublishRequest r = request(i);
    if (const int status =
            amqp_basic_publish(s, 1, as_bytes(r.exchange), as_bytes(r.routing_key),
                               /*mandatory=*/1, /*immediate=*/0, &r.properties, r.body);
        status != AMQP_STATUS_OK) {
      connection_.set_lost(std::string("basic.publish failed: ") + amqp_error_string2(status));
      return lose_rest();
    }
    ++next_sequence_;
    InFlight& f = sent.emplace_back();
    f.exchange = r.exchange;
    f.routing_key = r.routing_key;
    f.body = r.body;
    if (after_send) after_send(i);
  }
  size_t open = sent.size();
  // Settles the publishes an ack or a nack with `tag` covers (`multiple`: every one up to it).
  const auto settle = [&](uint64_t tag, bool multiple, bool ack) {
    for (size_t i = 0; i < sent.size(); ++i) {
      const uint64_t sequence = first + i;
      if (sent[i].settled || !(sequence == tag || (multiple && sequence < tag))) continue;
      sent[i].settled = true;
      --open;
      if (!ack) {
        outcomes[i] = {PublishResult::kNacked, "the broker nacked the publish"};
      } else if (sent[i].returned) {
        outcomes[i] = {PublishResult::kReturned, sent[i].return_text};
      } else {
        outcomes[i] = {PublishResult::kConfirmed, ""};
      }
    }
  };
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto next_note = Clock::now();
  while (open > 0) {
    const auto now = Clock::now();
    if (connection_.blocked()) {
      if (now >= next_note) {
        if (on_blocked) on_blocked(connection_.blocked_reason());
        next_note = now + std::chrono::seconds(1);
      }
      deadline = now + std::chrono::milliseconds(timeout_ms);
    } else if (now >= deadline) {
      for (size_t i = 0; i < sent.size(); ++i) {
        if (sent[i].settled) continue;
        outcomes[i] = {PublishResult::kTimeout,
                       "no publisher confirm within " + std::to_string(timeout_ms) + " ms"};
      }
      return outcomes;
    }
    const int wait_ms =
        static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::min(deadline, now + std::chrono::milliseconds(1000)) - now)
                             .count());
    amqp_frame_t frame;
    timeval tv = to_timeval(std::max(wait_ms, 1));
    const int status = amqp_simple_wait_frame_noblock(s, &frame, &tv);
    if (status == AMQP_STATUS_TIMEOUT) continue;
    if (status != AMQP_STATUS_OK) {
      connection_.set_lost(std::string("waiting for a confirm: ") + amqp_error_string2(status));
      return lose_rest();
    }
    if (frame.frame_type != AMQP_FRAME_METHOD) continue;
    switch (frame.payload.method.id) {
      case AMQP_BASIC_ACK_METHOD: {
        const auto* ack = static_cast<const amqp_basic_ack_t*>(frame.payload.method.decoded);
        settle(ack->delivery_tag, ack->multiple != 0, true);
        continue;
      }
      case AMQP_BASIC_NACK_METHOD: {
        const auto* nack = static_cast<const amqp_basic_nack_t*>(frame.payload.method.decoded);
        settle(nack->delivery_tag, nack->multiple != 0, false);
        continue;
      }
      case AMQP_BASIC_RETURN_METHOD: {
        // A return names no sequence number; it comes before the ack of its publish, and returns
        // come in publish order: it is the first unsettled, unreturned publish with its exchange,
        // routing key and body (two publishes alike in all three go to the same place).
        const auto* ret = static_cast<const amqp_basic_return_t*>(frame.payload.method.decoded);
        const std::string text =
            std::to_string(ret->reply_code) + " " + bytes_text(ret->reply_text);
        const std::string exchange = bytes_text(ret->exchange);
        const std::string routing_key = bytes_text(ret->routing_key);
        amqp_message_t message;
        const amqp_rpc_reply_t read = amqp_read_message(s, frame.channel, &message, 0);
        if (read.reply_type != AMQP_RESPONSE_NORMAL) {
          connection_.set_lost("reading a returned message: " + Connection::describe(read));
          return lose_rest();
        }
        for (InFlight& f : sent) {
          if (f.settled || f.returned || f.exchange != exchange || f.routing_key != routing_key ||
              !same_bytes(f.body, message.body)) {
            continue;
          }
          f.returned = true;
          f.return_text = text;
          break;
        }
        amqp_destroy_message(&message);
        continue;
      }
      case AMQP_CHANNEL_CLOSE_METHOD: {
        if (frame.channel != 1) {
          connection_.handle_async_method(frame);
          continue;
        }
        // A closed channel voids every publish on it not confirmed yet: whether the broker
        // stored one before the close is unknown.
        const auto* m = static_cast<const amqp_channel_close_t*>(frame.payload.method.decoded);
        const std::string text = std::to_string(m->reply_code) + " " + bytes_text(m->reply_text);
        amqp_channel_close_ok_t ok{};
        amqp_send_method(s, 1, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
        std::string error;
        if (!connection_.open_channel(1, &error) || !select(&error)) {
          connection_.set_lost(error);
        }
        for (size_t i = 0; i < sent.size(); ++i) {
          if (!sent[i].settled) outcomes[i] = {PublishResult::kChannelClosed, text};
        }
        return outcomes;
      }
      default:
        connection_.handle_async_method(frame);
        if (connection_.lost()) return lose_rest();
        continue;
    }
  }
  return outcomes;
}

bool run_with_stack(size_t stack_bytes, const std::function<void()>& body) {
  pthread_attr_t attributes;
  if (pthread_attr_init(&attributes) != 0) return false;
  pthread_attr_setstacksize(&attributes, stack_bytes);
  pthread_t thread;
  auto* task = new std::function<void()>(body);
  const int made = pthread_create(
      &thread, &attributes,
      [](void* argument) -> void* {
        auto* f = static_cast<std::function<void()>*>(argument);
        (*f)();
        delete f;
        return nullptr;
      },
      task);
  pthread_attr_destroy(&attributes);
  if (made != 0) {
    delete task;
    return false;
  }
  pthread_join(thread, nullptr);
  return true;
}

}  // namespace replaygate::redrive::rabbitmq
