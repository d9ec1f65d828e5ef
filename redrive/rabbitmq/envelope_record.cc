// AMQP envelope -> management-API record, and republish properties (envelope_record.h).
#include "redrive/rabbitmq/envelope_record.h"

#include <sodium.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string_view>

#include "common/json.h"
#include "common/utf8.h"
#include "inputs/decoding.h"
#include "inputs/records.h"

namespace replaygate::redrive::rabbitmq {
namespace {

std::string_view view(amqp_bytes_t b) {
  return b.len == 0 ? std::string_view()
                    : std::string_view(static_cast<const char*>(b.bytes), b.len);
}

// Writes header values as JSON, bounded in depth and count; the first problem stops it.
class HeaderWriter {
 public:
  HeaderWriter(const Limits& limits, std::string* out) : limits_(limits), out_(*out) {}
  const std::string& problem() const { return problem_; }

  bool table(const amqp_table_t& t, int depth, std::string_view where) {
    if (!enter(depth, where)) return false;
    std::set<std::string_view> names;
    out_ += '{';
    for (int i = 0; i < t.num_entries; ++i) {
      const std::string_view name = view(t.entries[i].key);
      const std::string path = std::string(where) + "/" + std::string(name);
      if (!names.insert(name).second) {
        return fail("header " + quoted(path) + " is in its table twice");
      }
      if (!utf8(name, "a header name in " + quoted(std::string(where)))) return false;
      if (i > 0) out_ += ',';
      append_json_string(out_, name);
      out_ += ':';
      if (!value(t.entries[i].value, depth + 1, path)) return false;
    }
    out_ += '}';
    return true;
  }

 private:
  static std::string quoted(const std::string& s) { return "'" + s + "'"; }

  bool fail(std::string why) {
    problem_ = std::move(why);
    return false;
  }
  bool enter(int depth, std::string_view where) {
    if (depth > limits_.max_depth) {
      return fail("headers nest deeper than " + std::to_string(limits_.max_depth) +
                  " levels (at '" + std::string(where.substr(0, 200)) + "...')");
    }
    return true;
  }
  bool utf8(std::string_view text, const std::string& what) {
    if (first_invalid_utf8(text) != std::string_view::npos) {
      return fail(what + " is not valid UTF-8");
    }
    return true;
  }

  bool value(const amqp_field_value_t& v, int depth, const std::string& where) {
    if (++count_ > limits_.max_headers) {
      return fail("more than " + std::to_string(limits_.max_headers) + " header values");
    }
    char number[64];
    switch (v.kind) {
      case AMQP_FIELD_KIND_BOOLEAN:
        out_ += v.value.boolean ? "true" : "false";
        return true;
      case AMQP_FIELD_KIND_I8:
        out_ += std::to_string(v.value.i8);
        return true;
      case AMQP_FIELD_KIND_U8:
        out_ += std::to_string(v.value.u8);
        return true;
      case AMQP_FIELD_KIND_I16:
        out_ += std::to_string(v.value.i16);
        return true;
      case AMQP_FIELD_KIND_U16:
        out_ += std::to_string(v.value.u16);
        return true;
      case AMQP_FIELD_KIND_I32:
        out_ += std::to_string(v.value.i32);
        return true;
      case AMQP_FIELD_KIND_U32:
        out_ += std::to_string(v.value.u32);
        return true;
      case AMQP_FIELD_KIND_I64:
        out_ += std::to_string(v.value.i64);
        return true;
      case AMQP_FIELD_KIND_U64:
      case AMQP_FIELD_KIND_TIMESTAMP:
        out_ += std::to_string(v.value.u64);
        return true;
      case AMQP_FIELD_KIND_F32:
      case AMQP_FIELD_KIND_F64: {
        const double d = v.kind == AMQP_FIELD_KIND_F32 ? v.value.f32 : v.value.f64;
        if (!std::isfinite(d)) return fail("header " + quoted(where) + " is not a finite number");
        std::snprintf(number, sizeof number, "%.17g", d);
        out_ += number;
        return true;
      }
      case AMQP_FIELD_KIND_DECIMAL: {
        double d = static_cast<double>(v.value.decimal.value);
        for (int i = 0; i < v.value.decimal.decimals; ++i) d /= 10;
        std::snprintf(number, sizeof number, "%.17g", d);
        out_ += number;
        return true;
      }
      case AMQP_FIELD_KIND_UTF8:
      case AMQP_FIELD_KIND_BYTES:
        if (!utf8(view(v.value.bytes), "header " + quoted(where))) return false;
        append_json_string(out_, view(v.value.bytes));
        return true;
      case AMQP_FIELD_KIND_VOID:
        out_ += "null";
        return true;
      case AMQP_FIELD_KIND_TABLE:
        return table(v.value.table, depth, where);
      case AMQP_FIELD_KIND_ARRAY: {
        if (!enter(depth, where)) return false;
        out_ += '[';
        for (int i = 0; i < v.value.array.num_entries; ++i) {
          if (i > 0) out_ += ',';
          if (!value(v.value.array.entries[i], depth + 1, where + "/" + std::to_string(i))) {
            return false;
          }
        }
        out_ += ']';
        return true;
      }
      default:
        return fail("header " + quoted(where) + " has an unknown AMQP type");
    }
  }

  const Limits& limits_;
  std::string& out_;
  std::string problem_;
  size_t count_ = 0;
};

const amqp_field_value_t* find_header(const amqp_table_t& headers, std::string_view name) {
  for (int i = 0; i < headers.num_entries; ++i) {
    if (view(headers.entries[i].key) == name) return &headers.entries[i].value;
  }
  return nullptr;
}

std::optional<int64_t> integer_of(const amqp_field_value_t& v) {
  if (auto n = integer_field(v)) return n;
  switch (v.kind) {
    case AMQP_FIELD_KIND_UTF8:
    case AMQP_FIELD_KIND_BYTES: {
      int64_t n = 0;
      std::string why;
      if (inputs::decode_decimal(view(v.value.bytes), &n, &why)) return n;
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

std::string sha256_text(std::string_view bytes) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (const unsigned char c : digest) {
    out += kHex[c >> 4];
    out += kHex[c & 0x0F];
  }
  return out;
}

bool broker_owned(std::string_view name) {
  for (const char* owned : kBrokerOwnedHeaders) {
    if (name == owned) return true;
  }
  return false;
}

}  // namespace

std::optional<int64_t> integer_field(const amqp_field_value_t& v) {
  switch (v.kind) {
    case AMQP_FIELD_KIND_I8:
      return v.value.i8;
    case AMQP_FIELD_KIND_U8:
      return v.value.u8;
    case AMQP_FIELD_KIND_I16:
      return v.value.i16;
    case AMQP_FIELD_KIND_U16:
      return v.value.u16;
    case AMQP_FIELD_KIND_I32:
      return v.value.i32;
    case AMQP_FIELD_KIND_U32:
      return v.value.u32;
    case AMQP_FIELD_KIND_I64:
      return v.value.i64;
    case AMQP_FIELD_KIND_U64:
      return static_cast<int64_t>(std::min<uint64_t>(v.value.u64, INT64_MAX));
    default:
      return std::nullopt;
  }
}

void envelope_to_record(const amqp_envelope_t& envelope, const Limits& limits,
                        EnvelopeRecord* out) {
  out->record.clear();
  out->record_size = 0;
  out->problem.clear();
  out->message_id.reset();
  out->died_in.clear();
  out->replays = 0;
  out->body_digest.clear();
  const amqp_basic_properties_t& p = envelope.message.properties;
  const std::string_view routing_key = view(envelope.routing_key);
  const std::string_view exchange = view(envelope.exchange);
  out->topic_hint = std::string(routing_key);
  const bool has_headers = (p._flags & AMQP_BASIC_HEADERS_FLAG) != 0;
  if ((p._flags & AMQP_BASIC_MESSAGE_ID_FLAG) != 0) {
    if (first_invalid_utf8(view(p.message_id)) == std::string_view::npos) {
      out->message_id = std::string(view(p.message_id));
    } else {
      out->problem = "the message id is not valid UTF-8";
      return;
    }
  }
  if (has_headers) {
    if (const amqp_field_value_t* death = find_header(p.headers, "x-death");
        death != nullptr && death->kind == AMQP_FIELD_KIND_ARRAY &&
        death->value.array.num_entries > 0 &&
        death->value.array.entries[0].kind == AMQP_FIELD_KIND_TABLE) {
      if (const amqp_field_value_t* queue =
              find_header(death->value.array.entries[0].value.table, "queue");
          queue != nullptr && queue->kind == AMQP_FIELD_KIND_UTF8) {
        out->died_in = std::string(view(queue->value.bytes));
      }
    }
    if (const amqp_field_value_t* replay = find_header(p.headers, "x-replay")) {
      out->replays = integer_of(*replay);
    }
  }
  if (envelope.message.body.len > limits.max_body) {
    out->problem = "the body has " + std::to_string(envelope.message.body.len) +
                   " bytes, more than the gate reads (" + std::to_string(limits.max_body) +
                   "; --max-body)";
    return;
  }
  out->body_digest = sha256_text(view(envelope.message.body));
  if (first_invalid_utf8(routing_key) != std::string_view::npos ||
      first_invalid_utf8(exchange) != std::string_view::npos) {
    out->problem = "the routing key or exchange is not valid UTF-8";
    return;
  }
  std::string& r = out->record;
  const std::string_view body = view(envelope.message.body);
  const bool text_body = first_invalid_utf8(body) == std::string_view::npos;
  r.reserve(256 + body.size() * (text_body ? 1 : 2));
  r += "{\"payload_bytes\":";
  r += std::to_string(body.size());
  r += ",\"redelivered\":";
  r += envelope.redelivered ? "true" : "false";
  r += ",\"exchange\":";
  append_json_string(r, exchange);
  r += ",\"routing_key\":";
  append_json_string(r, routing_key);
  r += ",\"message_count\":0,\"properties\":{";
  bool first = true;
  const auto member = [&](std::string_view key) {
    if (!first) r += ',';
    first = false;
    append_json_string(r, key);
    r += ':';
  };
  if (out->message_id) {
    member("message_id");
    append_json_string(r, *out->message_id);
  }
  if ((p._flags & AMQP_BASIC_TIMESTAMP_FLAG) != 0) {
    member("timestamp");
    r += std::to_string(p.timestamp);
  }
  if ((p._flags & AMQP_BASIC_DELIVERY_MODE_FLAG) != 0) {
    member("delivery_mode");
    r += std::to_string(p.delivery_mode);
  }
  if (has_headers) {
    member("headers");
    HeaderWriter writer(limits, &r);
    if (!writer.table(p.headers, 1, "")) {
      out->problem = writer.problem();
      r.clear();
      return;
    }
  }
  r += "},\"payload\":";
  if (text_body) {
    append_json_string(r, body);
    r += ",\"payload_encoding\":\"string\"}";
  } else {
    append_json_string(r, inputs::encode_base64(body));
    r += ",\"payload_encoding\":\"base64\"}";
  }
  if (r.size() > inputs::kMaxRecordBytes) {
    // The rabbitmq reader reads a record of at most kMaxRecordBytes (base64 and JSON escapes grow
    // the body): say so here rather than as the parser's "document too big".
    out->problem = "the message is " + std::to_string(r.size()) +
                   " bytes as a record, more than a record may have (" +
                   std::to_string(inputs::kMaxRecordBytes) + "); its body has " +
                   std::to_string(body.size()) + " bytes (--max-body)";
    r.clear();
    return;
  }
  out->record_size = r.size();
  r.append(inputs::LineReader::kPadding, '\0');
}

amqp_basic_properties_t republish_properties(const amqp_envelope_t& envelope,
                                             const std::vector<HeaderValue>& set_headers,
                                             std::vector<amqp_table_entry_t>* storage) {
  amqp_basic_properties_t p = envelope.message.properties;
  storage->clear();
  if ((p._flags & AMQP_BASIC_HEADERS_FLAG) != 0) {
    for (int i = 0; i < p.headers.num_entries; ++i) {
      const std::string_view name = view(p.headers.entries[i].key);
      // The gate's own move markers never travel on (a held letter re-driven later carries
      // only what its new action sets), nor does what the dead-letter queue wrote.
      bool replaced = name.starts_with("x-replaygate-") || broker_owned(name);
      for (const HeaderValue& h : set_headers) replaced = replaced || h.name == name;
      if (!replaced) storage->push_back(p.headers.entries[i]);
    }
  }
  for (const HeaderValue& h : set_headers) {
    amqp_table_entry_t e;
    e.key.bytes = const_cast<char*>(h.name.data());
    e.key.len = h.name.size();
    if (h.is_int) {
      e.value.kind = AMQP_FIELD_KIND_I64;
      e.value.value.i64 = h.number;
    } else {
      e.value.kind = AMQP_FIELD_KIND_UTF8;
      e.value.value.bytes.bytes = const_cast<char*>(h.text.data());
      e.value.value.bytes.len = h.text.size();
    }
    storage->push_back(e);
  }
  p.headers.num_entries = static_cast<int>(storage->size());
  p.headers.entries = storage->data();
  p._flags |= AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
  p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  return p;
}

}  // namespace replaygate::redrive::rabbitmq
