// JSON-RPC 2.0 messages in and out (see jsonrpc.h).
#include "tools/lsp/jsonrpc.h"

#include <exception>

namespace replaygate::lsp {
namespace {

struct TooDeep {};

std::string dump(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

ParsedMessage failure(int code, std::string message, Json id = nullptr) {
  ParsedMessage out;
  out.error_code = code;
  out.error = std::move(message);
  out.id = std::move(id);
  return out;
}

}  // namespace

ParsedMessage parse_message(std::string_view body) {
  Json value;
  try {
    // The callback sees each value's depth before it is built; throwing stops the parse.
    value = Json::parse(body, [](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxDepth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    return failure(kParseError,
                   "the message is nested deeper than " + std::to_string(kMaxDepth) + " levels");
  } catch (const Json::parse_error& e) {
    return failure(kParseError, std::string("the message is not JSON: ") + e.what());
  }
  if (!value.is_object()) {
    return failure(kInvalidRequest, value.is_array() ? "batches are not supported: send one message"
                                                     : "a message must be a JSON object");
  }
  Json id = nullptr;
  const auto id_at = value.find("id");
  if (id_at != value.end()) {
    if (!id_at->is_number_integer() && !id_at->is_string()) {
      return failure(kInvalidRequest, "'id' must be an integer or a string");
    }
    id = *id_at;
  }
  const auto version = value.find("jsonrpc");
  if (version == value.end() || *version != "2.0") {
    return failure(kInvalidRequest, "'jsonrpc' must be \"2.0\"", id);
  }
  Message message;
  const auto method = value.find("method");
  if (method == value.end()) {
    if (id_at != value.end() && (value.contains("result") || value.contains("error"))) {
      message.is_response = true;
      message.id = id;
      ParsedMessage out;
      out.message = std::move(message);
      return out;
    }
    return failure(kInvalidRequest, "a request needs a 'method'", id);
  }
  if (!method->is_string()) return failure(kInvalidRequest, "'method' must be a string", id);
  message.method = method->get<std::string>();
  if (id_at != value.end()) message.id = id;
  const auto params = value.find("params");
  // `"params": null` is read as no params: clients send it for shutdown and exit.
  if (params != value.end() && !params->is_null()) {
    if (!params->is_object() && !params->is_array()) {
      return failure(kInvalidRequest, "'params' must be an object or an array", id);
    }
    message.params = std::move(*params);
  }
  ParsedMessage out;
  out.message = std::move(message);
  out.id = std::move(id);
  return out;
}

std::string result_reply(const Json& id, const Json& result) {
  return dump(Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
}

std::string error_reply(const Json& id, int code, std::string_view message) {
  return dump(Json{{"jsonrpc", "2.0"},
                   {"id", id},
                   {"error", Json{{"code", code}, {"message", std::string(message)}}}});
}

std::string notification(std::string_view method, const Json& params) {
  return dump(Json{{"jsonrpc", "2.0"}, {"method", std::string(method)}, {"params", params}});
}

}  // namespace replaygate::lsp
