// JSON-RPC 2.0 as the language server speaks it: one message body in (a request, a notification,
// or a response to a request of ours, which we never send), one JSON text out per reply.
//
// parse_message() never throws and never recurses on the input's nesting: bodies nested deeper
// than kMaxDepth are refused as parse errors (nlohmann-json has no depth limit of its own).
// Replies are written with invalid UTF-8 replaced by U+FFFD, so a reply is always valid JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace replaygate::lsp {

using Json = nlohmann::json;

// Error codes of JSON-RPC 2.0 and the LSP specification.
enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kServerNotInitialized = -32002,
  kRequestFailed = -32803,
};

// LSP messages are flat: a few levels of objects. Deeper bodies are refused before they are built.
inline constexpr int kMaxDepth = 64;

struct Message {
  std::string method;      // "" for a response
  std::optional<Json> id;  // a number or a string; nullopt for a notification
  Json params;             // an object or an array when given, else null
  bool is_response = false;
};

// The outcome of reading one body: `message`, or an error to answer with (`id` is the request's
// id when it could be read, else null, as JSON-RPC requires).
struct ParsedMessage {
  std::optional<Message> message;
  int error_code = 0;
  std::string error;
  Json id;
};

ParsedMessage parse_message(std::string_view body);

// The JSON texts of replies and notifications (not framed: see framing.h frame()).
std::string result_reply(const Json& id, const Json& result);
std::string error_reply(const Json& id, int code, std::string_view message);
std::string notification(std::string_view method, const Json& params);

}  // namespace replaygate::lsp
