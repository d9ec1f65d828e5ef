// libFuzzer target for the language server (fuzz_lsp): any bytes, as the stream a client sends
// to `replaygate lsp`, go through the message reader (tools/lsp/framing.h) and the dispatcher
// (tools/lsp/server.h) in process, as serve() runs them. Every message the server sends must be
// one JSON-RPC 2.0 object (a reply with an id, or a notification with a method), and a range it
// sends must not end before it starts. Never a crash, a hang or a leak.
//
// Built by the fuzz tree (tools/fuzz.sh); the normal build replays tests/data/fuzz/lsp/{corpus,
// regressions} through replay_main.cc (ctest -L fuzz). The seeds are whole conversations.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tools/lsp/framing.h"
#include "tools/lsp/server.h"

namespace {

using Json = nlohmann::json;

bool before(const Json& a, const Json& b) {
  return a["line"] < b["line"] || (a["line"] == b["line"] && a["character"] <= b["character"]);
}

// Every "range" member anywhere in `value` starts at or before its end.
void check_ranges(const Json& value) {
  if (value.is_object()) {
    const auto range = value.find("range");
    if (range != value.end() && range->is_object() && !before((*range)["start"], (*range)["end"])) {
      __builtin_trap();
    }
    for (const auto& item : value) check_ranges(item);
  } else if (value.is_array()) {
    for (const auto& item : value) check_ranges(item);
  }
}

void check_sent(const std::string& body) {
  const Json message = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!message.is_object() || message.value("jsonrpc", "") != "2.0") __builtin_trap();
  const bool reply =
      message.contains("id") && (message.contains("result") ^ message.contains("error"));
  const bool note = !message.contains("id") && message.contains("method");
  if (!reply && !note) __builtin_trap();
  check_ranges(message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  replaygate::lsp::MemorySource source(std::string_view(reinterpret_cast<const char*>(data), size));
  // A cap above the seeds' largest message (a whole shipped policy in a didOpen) but small enough
  // that a mutated Content-Length reaches the over-the-limit path without a huge input.
  replaygate::lsp::MessageReader reader(source, 16 * 1024);
  replaygate::lsp::Server server;
  std::vector<std::string> out;
  for (;;) {
    const replaygate::lsp::Frame frame = reader.next();
    out.clear();
    using Kind = replaygate::lsp::Frame::Kind;
    if (frame.kind == Kind::kMessage) {
      server.handle(frame.body, &out);
    } else if (frame.kind == Kind::kBadHeader || frame.kind == Kind::kTooLarge) {
      server.framing_error(frame, &out);
    } else {
      break;
    }
    for (const std::string& body : out) check_sent(body);
    if (server.exit_received()) break;
  }
  return 0;
}
