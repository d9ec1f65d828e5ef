// AmqpTestClient: synchronous librabbitmq 0.11 calls for tests (see amqp_test_client.h).
#include "amqp_test_client.h"

#include <amqp_tcp_socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

namespace replaygate::gate::testing {
namespace {

// Declares, gets, acks and rejects go on one channel; publishes on another in confirm mode.
constexpr amqp_channel_t kOps = 1;
constexpr amqp_channel_t kPub = 2;
constexpr int kConfirmTimeoutS = 30;

amqp_bytes_t bytes(const std::string& s) {
  amqp_bytes_t b;
  b.len = s.size();
  b.bytes = const_cast<char*>(s.data());
  return b;
}

std::string text(amqp_bytes_t b) {
  return b.len ? std::string(static_cast<const char*>(b.bytes), b.len) : std::string();
}

// An amqp_table_t over `fields`, which must outlive it.
class Table {
 public:
  explicit Table(const Fields& fields) {
    entries_.resize(fields.size());
    for (std::size_t i = 0; i < fields.size(); ++i) {
      amqp_table_entry_t& e = entries_[i];
      e.key = bytes(fields[i].first);
      if (const auto* s = std::get_if<std::string>(&fields[i].second)) {
        e.value.kind = AMQP_FIELD_KIND_UTF8;
        e.value.value.bytes = bytes(*s);
      } else {
        e.value.kind = AMQP_FIELD_KIND_I64;
        e.value.value.i64 = std::get<int64_t>(fields[i].second);
      }
    }
    table_.num_entries = static_cast<int>(entries_.size());
    table_.entries = entries_.empty() ? nullptr : entries_.data();
  }
  const amqp_table_t& table() const { return table_; }

 private:
  std::vector<amqp_table_entry_t> entries_;
  amqp_table_t table_{};
};

// An integer field as int64 (false for other kinds).
bool as_int64(const amqp_field_value_t& v, int64_t* out) {
  switch (v.kind) {
    case AMQP_FIELD_KIND_I8:
      *out = v.value.i8;
      return true;
    case AMQP_FIELD_KIND_U8:
      *out = v.value.u8;
      return true;
    case AMQP_FIELD_KIND_I16:
      *out = v.value.i16;
      return true;
    case AMQP_FIELD_KIND_U16:
      *out = v.value.u16;
      return true;
    case AMQP_FIELD_KIND_I32:
      *out = v.value.i32;
      return true;
    case AMQP_FIELD_KIND_U32:
      *out = v.value.u32;
      return true;
    case AMQP_FIELD_KIND_I64:
      *out = v.value.i64;
      return true;
    case AMQP_FIELD_KIND_U64:
    case AMQP_FIELD_KIND_TIMESTAMP:
      *out = static_cast<int64_t>(v.value.u64);
      return true;
    default:
      return false;
  }
}

// A header value as text (Message::headers documents the forms). Never recurses.
std::string field_text(const amqp_field_value_t& v) {
  int64_t i = 0;
  if (v.kind == AMQP_FIELD_KIND_U64 || v.kind == AMQP_FIELD_KIND_TIMESTAMP) {
    return std::to_string(v.value.u64);
  }
  if (as_int64(v, &i)) return std::to_string(i);
  std::ostringstream out;
  switch (v.kind) {
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES:
      return text(v.value.bytes);
    case AMQP_FIELD_KIND_BOOLEAN:
      return v.value.boolean ? "true" : "false";
    case AMQP_FIELD_KIND_F32:
      out << v.value.f32;
      return out.str();
    case AMQP_FIELD_KIND_F64:
      out << v.value.f64;
      return out.str();
    case AMQP_FIELD_KIND_DECIMAL:
      out << v.value.decimal.value << "e-" << static_cast<int>(v.value.decimal.decimals);
      return out.str();
    case AMQP_FIELD_KIND_ARRAY:
      return "array(" + std::to_string(v.value.array.num_entries) + ")";
    case AMQP_FIELD_KIND_TABLE:
      return "table(" + std::to_string(v.value.table.num_entries) + ")";
    case AMQP_FIELD_KIND_VOID:
      return "";
    default:
      return "?";
  }
}

const amqp_field_value_t* find(const amqp_table_t& t, const char* key) {
  const std::size_t n = std::strlen(key);
  for (int i = 0; i < t.num_entries; ++i) {
    const amqp_bytes_t& k = t.entries[i].key;
    if (k.len == n && std::memcmp(k.bytes, key, n) == 0) return &t.entries[i].value;
  }
  return nullptr;
}

// Copies what a test needs out of a basic.get-ok and its content.
Message to_message(const amqp_message_t& m, bool redelivered) {
  Message out;
  out.body = text(m.body);
  out.redelivered = redelivered;
  const amqp_basic_properties_t& p = m.properties;
  if (p._flags & AMQP_BASIC_MESSAGE_ID_FLAG) out.message_id = text(p.message_id);
  if (!(p._flags & AMQP_BASIC_HEADERS_FLAG)) return out;
  for (int i = 0; i < p.headers.num_entries; ++i) {
    out.headers[text(p.headers.entries[i].key)] = field_text(p.headers.entries[i].value);
  }
  const amqp_field_value_t* deaths = find(p.headers, "x-death");
  if (deaths && deaths->kind == AMQP_FIELD_KIND_ARRAY) {
    for (int i = 0; i < deaths->value.array.num_entries; ++i) {
      const amqp_field_value_t& d = deaths->value.array.entries[i];
      if (d.kind != AMQP_FIELD_KIND_TABLE) continue;
      const amqp_field_value_t* q = find(d.value.table, "queue");
      out.x_death_queues.push_back(q ? field_text(*q) : "");
      const amqp_field_value_t* c = find(d.value.table, "count");
      int64_t count = 0;
      out.x_death_counts.push_back(c && as_int64(*c, &count) ? count : -1);
    }
  }
  return out;
}

timeval remaining(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      deadline - std::chrono::steady_clock::now());
  const long us = left.count() > 0 ? static_cast<long>(left.count()) : 0;
  timeval tv;
  tv.tv_sec = us / 1000000;
  tv.tv_usec = us % 1000000;
  return tv;
}

}  // namespace

NestedArrayHeader::NestedArrayHeader(std::string key, std::size_t depth)
    : key_(std::move(key)), levels_(depth + 1) {
  static const char kLeaf[] = "x";
  for (std::size_t i = 0; i < depth; ++i) {
    levels_[i].kind = AMQP_FIELD_KIND_ARRAY;
    levels_[i].value.array.num_entries = 1;
    levels_[i].value.array.entries = &levels_[i + 1];
  }
  levels_[depth].kind = AMQP_FIELD_KIND_UTF8;
  levels_[depth].value.bytes.len = 1;
  levels_[depth].value.bytes.bytes = const_cast<char*>(kLeaf);
  entry_.key = bytes(key_);
  entry_.value = levels_[0];
  table_.num_entries = 1;
  table_.entries = &entry_;
}

void AmqpTestClient::drop_connection() {
  if (conn_) amqp_destroy_connection(conn_);  // closes the socket without a handshake
  conn_ = nullptr;
}

void AmqpTestClient::close() {
  if (!conn_) return;
  amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
  drop_connection();
}

std::string AmqpTestClient::reply_error(const std::string& what, const amqp_rpc_reply_t& reply,
                                        amqp_channel_t channel) {
  switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL:
      return "";
    case AMQP_RESPONSE_NONE:
      drop_connection();
      return what + ": no RPC reply (connection dropped)";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION: {
      // Timeouts and socket errors leave the connection unusable.
      std::string e = what + ": " + amqp_error_string2(reply.library_error);
      drop_connection();
      return e + " (connection dropped)";
    }
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      break;
  }
  if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    const auto* m = static_cast<const amqp_channel_close_t*>(reply.reply.decoded);
    std::string e = what + ": " + std::to_string(m->reply_code) + " " + text(m->reply_text);
    amqp_channel_close_ok_t ok{};
    amqp_send_method(conn_, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
    const std::string reopen = open_channel(channel);
    if (!reopen.empty()) e += " (and then " + reopen + ")";
    return e;
  }
  if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
    const auto* m = static_cast<const amqp_connection_close_t*>(reply.reply.decoded);
    std::string e =
        what + ": connection closed: " + std::to_string(m->reply_code) + " " + text(m->reply_text);
    amqp_connection_close_ok_t ok{};
    amqp_send_method(conn_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
    drop_connection();
    return e;
  }
  return what + ": unexpected server method " + amqp_method_name(reply.reply.id);
}

std::string AmqpTestClient::rpc_error(const std::string& what, amqp_channel_t channel) {
  const std::string e = reply_error(what, amqp_get_rpc_reply(conn_), channel);
  return e.empty() ? what + ": failed without an error reply" : e;
}

std::string AmqpTestClient::open_channel(amqp_channel_t channel) {
  // Not through reply_error: a failing channel.open must not recurse into another reopen.
  const bool opened = amqp_channel_open(conn_, channel) != nullptr;
  amqp_rpc_reply_t r = amqp_get_rpc_reply(conn_);
  if (!opened || r.reply_type != AMQP_RESPONSE_NORMAL) {
    drop_connection();
    return "channel.open " + std::to_string(channel) + " failed (connection dropped)";
  }
  if (channel == kPub) {
    const bool selected = amqp_confirm_select(conn_, channel) != nullptr;
    r = amqp_get_rpc_reply(conn_);
    if (!selected || r.reply_type != AMQP_RESPONSE_NORMAL) {
      drop_connection();
      return "confirm.select failed (connection dropped)";
    }
    next_seq_ = 1;  // sequence numbers restart on every confirm-mode channel
  }
  return "";
}

std::string AmqpTestClient::connect(const std::string& url) {
  close();
  std::vector<char> buf(url.begin(), url.end());
  buf.push_back('\0');
  amqp_connection_info info;
  amqp_default_connection_info(&info);
  if (amqp_parse_url(buf.data(), &info) != AMQP_STATUS_OK) return "cannot parse URL " + url;
  if (info.ssl) return "amqps is not supported by the test client: " + url;
  if (std::strcmp(info.host, "127.0.0.1") != 0) {
    return std::string("refusing host ") + info.host + ": tests talk to 127.0.0.1 only";
  }
  // "amqp://host:port/" names the empty vhost in the URI spec; the node has only "/".
  const char* vhost = info.vhost && *info.vhost ? info.vhost : "/";
  const std::string where = "127.0.0.1:" + std::to_string(info.port);
  conn_ = amqp_new_connection();
  if (!conn_) return "amqp_new_connection failed";
  amqp_socket_t* socket = amqp_tcp_socket_new(conn_);
  if (!socket) {
    drop_connection();
    return "amqp_tcp_socket_new failed";
  }
  const timeval open_timeout{5, 0};
  const int rc = amqp_socket_open_noblock(socket, info.host, info.port, &open_timeout);
  if (rc != AMQP_STATUS_OK) {
    drop_connection();
    return "cannot connect to " + where + ": " + amqp_error_string2(rc);
  }
  const timeval rpc_timeout{30, 0};
  amqp_set_rpc_timeout(conn_, &rpc_timeout);
  // No heartbeats: tests may wait between library calls.
  const amqp_rpc_reply_t login = amqp_login(conn_, vhost, 0, AMQP_DEFAULT_FRAME_SIZE, 0,
                                            AMQP_SASL_METHOD_PLAIN, info.user, info.password);
  if (login.reply_type != AMQP_RESPONSE_NORMAL) {
    const std::string e = reply_error("login to " + where, login, 0);
    drop_connection();
    return e;
  }
  for (amqp_channel_t ch : {kOps, kPub}) {
    const std::string e = open_channel(ch);
    if (!e.empty()) return e;
  }
  return "";
}

std::string AmqpTestClient::declare_queue(const std::string& name, bool durable,
                                          const Fields& args) {
  if (!conn_) return "not connected";
  amqp_maybe_release_buffers(conn_);
  const Table t(args);
  if (!amqp_queue_declare(conn_, kOps, bytes(name), 0, durable, 0, 0, t.table())) {
    return rpc_error("queue.declare " + name, kOps);
  }
  return "";
}

std::string AmqpTestClient::declare_exchange(const std::string& name, const std::string& type,
                                             bool durable) {
  if (!conn_) return "not connected";
  amqp_maybe_release_buffers(conn_);
  if (!amqp_exchange_declare(conn_, kOps, bytes(name), bytes(type), 0, durable, 0, 0,
                             amqp_empty_table)) {
    return rpc_error("exchange.declare " + name, kOps);
  }
  return "";
}

std::string AmqpTestClient::bind(const std::string& queue, const std::string& exchange,
                                 const std::string& routing_key) {
  if (!conn_) return "not connected";
  amqp_maybe_release_buffers(conn_);
  if (!amqp_queue_bind(conn_, kOps, bytes(queue), bytes(exchange), bytes(routing_key),
                       amqp_empty_table)) {
    return rpc_error("queue.bind " + queue + " to " + exchange, kOps);
  }
  return "";
}

std::string AmqpTestClient::wait_for_confirm(uint64_t seq) {
  // No amqp_publisher_confirm_wait in 0.11: read frames until the ack that covers `seq`.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kConfirmTimeoutS);
  std::string returned;  // a basic.return comes before the ack of an unroutable message
  for (;;) {
    amqp_frame_t frame;
    timeval tv = remaining(deadline);
    const int rc = amqp_simple_wait_frame_noblock(conn_, &frame, &tv);
    if (rc == AMQP_STATUS_TIMEOUT) {
      return "no confirm for publish " + std::to_string(seq) + " within " +
             std::to_string(kConfirmTimeoutS) + " s";
    }
    if (rc != AMQP_STATUS_OK) {
      const std::string e = std::string("waiting for a confirm: ") + amqp_error_string2(rc);
      drop_connection();
      return e + " (connection dropped)";
    }
    if (frame.frame_type != AMQP_FRAME_METHOD) continue;
    const amqp_method_t& method = frame.payload.method;
    if (method.id == AMQP_CONNECTION_CLOSE_METHOD || method.id == AMQP_CHANNEL_CLOSE_METHOD) {
      amqp_rpc_reply_t r{};
      r.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
      r.reply = method;
      return reply_error("basic.publish", r, frame.channel);
    }
    if (frame.channel != kPub) continue;
    if (method.id == AMQP_BASIC_RETURN_METHOD) {
      const auto* m = static_cast<const amqp_basic_return_t*>(method.decoded);
      returned = "unroutable: " + std::to_string(m->reply_code) + " " + text(m->reply_text);
      amqp_message_t content;
      const amqp_rpc_reply_t r = amqp_read_message(conn_, kPub, &content, 0);
      if (r.reply_type != AMQP_RESPONSE_NORMAL) return reply_error("basic.return", r, kPub);
      amqp_destroy_message(&content);
      continue;
    }
    if (method.id == AMQP_BASIC_ACK_METHOD || method.id == AMQP_BASIC_NACK_METHOD) {
      const bool ack = method.id == AMQP_BASIC_ACK_METHOD;
      uint64_t tag = 0;
      bool multiple = false;
      if (ack) {
        const auto* m = static_cast<const amqp_basic_ack_t*>(method.decoded);
        tag = m->delivery_tag;
        multiple = m->multiple;
      } else {
        const auto* m = static_cast<const amqp_basic_nack_t*>(method.decoded);
        tag = m->delivery_tag;
        multiple = m->multiple;
      }
      // The broker merges acks (multiple); an ack for an earlier publish is not ours.
      if (tag == seq || (multiple && tag > seq)) {
        if (!ack) return "the broker nacked publish " + std::to_string(seq);
        return returned;
      }
    }
  }
}

std::string AmqpTestClient::publish_with(const std::string& exchange,
                                         const std::string& routing_key, const std::string& body,
                                         const amqp_table_t* headers, const std::string& message_id,
                                         bool persistent) {
  if (!conn_) return "not connected";
  amqp_maybe_release_buffers(conn_);
  amqp_basic_properties_t props{};
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
  props.delivery_mode = persistent ? 2 : 1;
  if (!message_id.empty()) {
    props._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
    props.message_id = bytes(message_id);
  }
  if (headers && headers->num_entries > 0) {
    props._flags |= AMQP_BASIC_HEADERS_FLAG;
    props.headers = *headers;
  }
  const int rc = amqp_basic_publish(conn_, kPub, bytes(exchange), bytes(routing_key),
                                    /*mandatory=*/1, /*immediate=*/0, &props, bytes(body));
  if (rc != AMQP_STATUS_OK) {
    // The method frame may be out without its header frame: the stream is unusable.
    const std::string e = std::string("basic.publish: ") + amqp_error_string2(rc);
    drop_connection();
    return e + " (connection dropped)";
  }
  return wait_for_confirm(next_seq_++);
}

std::string AmqpTestClient::publish(const std::string& exchange, const std::string& routing_key,
                                    const std::string& body, const Fields& headers,
                                    const std::string& message_id, bool persistent) {
  const Table t(headers);
  return publish_with(exchange, routing_key, body, &t.table(), message_id, persistent);
}

std::string AmqpTestClient::publish_raw_headers(const std::string& exchange,
                                                const std::string& routing_key,
                                                const std::string& body,
                                                const amqp_table_t& headers,
                                                const std::string& message_id, bool persistent) {
  return publish_with(exchange, routing_key, body, &headers, message_id, persistent);
}

std::string AmqpTestClient::dead_letter(const std::string& queue, std::size_t count) {
  if (!conn_) return "not connected";
  for (std::size_t i = 0; i < count; ++i) {
    amqp_maybe_release_buffers(conn_);
    const amqp_rpc_reply_t r = amqp_basic_get(conn_, kOps, bytes(queue), /*no_ack=*/0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) return reply_error("basic.get " + queue, r, kOps);
    if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) {
      return queue + " held " + std::to_string(i) + " messages, not " + std::to_string(count);
    }
    const uint64_t tag = static_cast<const amqp_basic_get_ok_t*>(r.reply.decoded)->delivery_tag;
    amqp_message_t m;
    const amqp_rpc_reply_t read = amqp_read_message(conn_, kOps, &m, 0);
    if (read.reply_type != AMQP_RESPONSE_NORMAL)
      return reply_error("reading from " + queue, read, kOps);
    amqp_destroy_message(&m);
    const int rc = amqp_basic_reject(conn_, kOps, tag, /*requeue=*/0);
    if (rc != AMQP_STATUS_OK) {
      const std::string e = std::string("basic.reject: ") + amqp_error_string2(rc);
      drop_connection();
      return e + " (connection dropped)";
    }
  }
  // The queue handles the rejects before this reply, and routes the dead letters then.
  amqp_maybe_release_buffers(conn_);
  if (!amqp_queue_declare(conn_, kOps, bytes(queue), /*passive=*/1, 0, 0, 0, amqp_empty_table)) {
    return rpc_error("queue.declare (passive) " + queue, kOps);
  }
  return "";
}

std::vector<Message> AmqpTestClient::get_all(const std::string& queue, std::string* error) {
  std::vector<Message> out;
  std::string e;
  while (e.empty()) {
    if (!conn_) {
      e = "not connected";
      break;
    }
    amqp_maybe_release_buffers(conn_);
    const amqp_rpc_reply_t r = amqp_basic_get(conn_, kOps, bytes(queue), /*no_ack=*/0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
      e = reply_error("basic.get " + queue, r, kOps);
      break;
    }
    if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) break;
    const auto* ok = static_cast<const amqp_basic_get_ok_t*>(r.reply.decoded);
    const uint64_t tag = ok->delivery_tag;
    const bool redelivered = ok->redelivered;
    amqp_message_t m;
    const amqp_rpc_reply_t read = amqp_read_message(conn_, kOps, &m, 0);
    if (read.reply_type != AMQP_RESPONSE_NORMAL) {
      e = reply_error("reading from " + queue, read, kOps);
      break;
    }
    out.push_back(to_message(m, redelivered));
    amqp_destroy_message(&m);
    const int rc = amqp_basic_ack(conn_, kOps, tag, /*multiple=*/0);
    if (rc != AMQP_STATUS_OK) {
      e = std::string("basic.ack: ") + amqp_error_string2(rc) + " (connection dropped)";
      drop_connection();
    }
  }
  if (error) *error = e;
  return out;
}

long AmqpTestClient::message_count(const std::string& queue, std::string* error) {
  std::string e = "not connected";
  if (conn_) {
    amqp_maybe_release_buffers(conn_);
    const amqp_queue_declare_ok_t* ok =
        amqp_queue_declare(conn_, kOps, bytes(queue), /*passive=*/1, 0, 0, 0, amqp_empty_table);
    if (ok) {
      if (error) error->clear();
      return static_cast<long>(ok->message_count);
    }
    e = rpc_error("queue.declare (passive) " + queue, kOps);
  }
  if (error) *error = e;
  return -1;
}

std::string AmqpTestClient::wait_for_count(const std::string& queue, long expected,
                                           int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::string e;
    const long n = message_count(queue, &e);
    if (n == expected) return "";
    if (!conn_ || std::chrono::steady_clock::now() >= deadline) {
      return queue + ": " +
             (e.empty() ? std::to_string(n) + " messages, not " + std::to_string(expected) : e) +
             " after " + std::to_string(timeout_ms) + " ms";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string AmqpTestClient::purge_queue(const std::string& queue, long* purged) {
  if (!conn_) return "not connected";
  amqp_maybe_release_buffers(conn_);
  const amqp_queue_purge_ok_t* ok = amqp_queue_purge(conn_, kOps, bytes(queue));
  if (!ok) return rpc_error("queue.purge " + queue, kOps);
  if (purged) *purged = static_cast<long>(ok->message_count);
  return "";
}

std::string AmqpTestClient::delete_queue(const std::string& queue) {
  if (!conn_) return "not connected";
  amqp_maybe_release_buffers(conn_);
  if (!amqp_queue_delete(conn_, kOps, bytes(queue), /*if_unused=*/0, /*if_empty=*/0)) {
    return rpc_error("queue.delete " + queue, kOps);
  }
  return "";
}

std::string AmqpTestClient::delete_exchange(const std::string& exchange) {
  if (!conn_) return "not connected";
  amqp_maybe_release_buffers(conn_);
  if (!amqp_exchange_delete(conn_, kOps, bytes(exchange), /*if_unused=*/0)) {
    return rpc_error("exchange.delete " + exchange, kOps);
  }
  return "";
}

}  // namespace replaygate::gate::testing
