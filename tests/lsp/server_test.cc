// `replaygate lsp` end to end: the real binary, driven by scripted clients on standard input
// (tests/support/cli_runner.h, under timeout(1) so a hang fails instead of blocking), with the
// exact replies asserted for every request type, and the bad-input cases: malformed JSON, invalid
// UTF-8, a lying Content-Length, a 100 MB document, bad params, UTF-16 columns after non-ASCII
// text. Diagnostics are also checked against `replaygate lint --format json` on the same text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/replaygate.h"
#include "tests/support/cli_runner.h"
#include "tools/lsp/framing.h"

namespace replaygate::testing {
namespace {

using Json = nlohmann::json;

std::string framed(const Json& message) { return lsp::frame(message.dump()); }

std::string request(int id, const std::string& method, const Json& params) {
  return framed(Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
}

std::string note(const std::string& method, const Json& params) {
  return framed(Json{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
}

// The client's opening: initialize (UTF-16 positions unless `utf8`, markdown hovers unless
// `plain`) and initialized.
std::string opening(bool utf8 = false, bool plain = true) {
  Json capabilities{
      {"textDocument",
       {{"hover", {{"contentFormat", plain ? Json{"plaintext"} : Json{"markdown"}}}}}}};
  if (utf8) capabilities["general"] = {{"positionEncodings", {"utf-8", "utf-16"}}};
  return request(1, "initialize", {{"processId", nullptr}, {"capabilities", capabilities}}) +
         note("initialized", Json::object());
}

std::string closing() { return request(999, "shutdown", nullptr) + note("exit", nullptr); }

Json text_document(const std::string& uri) { return Json{{"uri", uri}}; }

std::string did_open(const std::string& uri, const std::string& text, int version = 1) {
  return note("textDocument/didOpen",
              {{"textDocument",
                {{"uri", uri}, {"languageId", "policy"}, {"version", version}, {"text", text}}}});
}

Json at(const std::string& uri, int line, int character) {
  return Json{{"textDocument", text_document(uri)},
              {"position", {{"line", line}, {"character", character}}}};
}

Json range(int l1, int c1, int l2, int c2) {
  return Json{{"start", {{"line", l1}, {"character", c1}}},
              {"end", {{"line", l2}, {"character", c2}}}};
}

struct Session {
  int exit_code = -1;
  std::vector<Json> sent;  // every message the server wrote, in order
  std::string err;
};

class LspServer : public ::testing::Test {
 protected:
  LspServer() : scratch_("rg_lsp_test") {}

  Session converse(const std::string& input) {
    CliRun run;
    run.args = {"lsp"};
    run.stdin_text = input;
    run.timeout_seconds = 120;
    const CliResult r = run_cli(scratch_.path(), run);
    Session session;
    session.exit_code = r.exit_code;
    session.err = r.err;
    lsp::MemorySource source(r.out);
    lsp::MessageReader reader(source);
    for (lsp::Frame frame = reader.next(); frame.kind == lsp::Frame::Kind::kMessage;
         frame = reader.next()) {
      session.sent.push_back(Json::parse(frame.body));
    }
    return session;
  }

  // The reply to request `id` (a failure, and null, when there is none).
  static Json reply(const Session& session, int id) {
    for (const Json& message : session.sent) {
      if (message.contains("id") && message["id"] == id) return message;
    }
    ADD_FAILURE() << "no reply to request " << id;
    return nullptr;
  }

  // The publishDiagnostics notifications, in order.
  static std::vector<Json> published(const Session& session) {
    std::vector<Json> out;
    for (const Json& message : session.sent) {
      if (message.value("method", "") == "textDocument/publishDiagnostics") {
        out.push_back(message["params"]);
      }
    }
    return out;
  }

  // lint --format json on `text` saved as NAME in the scratch directory.
  Json lint(const std::string& name, const std::string& text) {
    write_file(scratch_.path() / name, text);
    const CliResult r =
        run_cli_args(scratch_.path(), {"lint", "--format", "json", (scratch_.path() / name)});
    return Json::parse(r.out);
  }

  ScratchDir scratch_;
};

// A small valid policy; line numbers below are 0-based, as the protocol counts.
const std::string kPolicy =
    "policy demo revision 1\n"                                                      // 0
    "\n"                                                                            // 1
    "input topic: string \"the topic the message came from\"\n"                     // 2
    "input attempts: int >= 0 \"delivery attempts so far\"\n"                       // 3
    "\n"                                                                            // 4
    "verb hold effect none \"wait for an operator\"\n"                              // 5
    "verb replay_once effect create \"requeue once with the same key\"\n"           // 6
    "\n"                                                                            // 7
    "default hold \"no rule matches\"\n"                                            // 8
    "\n"                                                                            // 9
    "const max_attempts = 3\n"                                                      // 10
    "\n"                                                                            // 11
    "rule exhausted: when attempts >= max_attempts -> hold \"budget exhausted\"\n"  // 12
    "\n"                                                                            // 13
    "table known by (topic) {\n"                                                    // 14
    "  payment.capture -> replay_once \"the capture timed out\"\n"                  // 15
    "}\n";                                                                          // 16

const std::string kUri = "file:///work/policies/demo.policy";

const Json kPlainHover = {{"textDocument", {{"hover", {{"contentFormat", {"plaintext"}}}}}}};

Json location(int l1, int c1, int l2, int c2) {
  return Json{{"uri", kUri}, {"range", range(l1, c1, l2, c2)}};
}

Json hover(const std::string& value, std::optional<Json> where = std::nullopt) {
  Json result{{"contents", {{"kind", "plaintext"}, {"value", value}}}};
  if (where) result["range"] = *where;
  return result;
}

TEST_F(LspServer, AnswersEveryRequestTypeOnAPolicy) {
  std::string canonical_broken = kPolicy;  // extra spaces: not canonical, still valid
  canonical_broken.replace(canonical_broken.find("when attempts"), 13, "when   attempts");
  const std::string input =
      opening() + did_open(kUri, kPolicy) +
      request(2, "textDocument/hover", at(kUri, 12, 23)) +  // attempts, in the rule
      request(3, "textDocument/hover", at(kUri, 12, 50)) +  // hold, the rule's verb
      request(4, "textDocument/hover", at(kUri, 12, 36)) +  // max_attempts
      request(5, "textDocument/hover", at(kUri, 12, 7)) +   // the rule's id
      request(6, "textDocument/hover", at(kUri, 15, 5)) +   // the table's row
      request(7, "textDocument/hover", at(kUri, 1, 0)) +    // a blank line
      request(8, "textDocument/definition", at(kUri, 12, 36)) +
      request(9, "textDocument/definition", at(kUri, 15, 24)) +  // replay_once in the row
      request(10, "textDocument/references",
              {{"textDocument", text_document(kUri)},
               {"position", {{"line", 3}, {"character", 8}}},
               {"context", {{"includeDeclaration", true}}}}) +
      request(11, "textDocument/references",
              {{"textDocument", text_document(kUri)},
               {"position", {{"line", 5}, {"character", 6}}},
               {"context", {{"includeDeclaration", false}}}}) +
      request(12, "textDocument/documentSymbol", {{"textDocument", text_document(kUri)}}) +
      request(13, "textDocument/formatting",
              {{"textDocument", text_document(kUri)},
               {"options", {{"tabSize", 2}, {"insertSpaces", true}}}}) +
      note("textDocument/didChange", {{"textDocument", {{"uri", kUri}, {"version", 2}}},
                                      {"contentChanges", {{{"text", canonical_broken}}}}}) +
      request(14, "textDocument/formatting",
              {{"textDocument", text_document(kUri)}, {"options", Json::object()}}) +
      request(15, "textDocument/frobnicate", Json::object()) +
      note("textDocument/didClose", {{"textDocument", text_document(kUri)}}) + closing();
  const Session s = converse(input);
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.err, "");
  EXPECT_EQ(reply(s, 1)["result"],
            (Json{{"capabilities",
                   {{"positionEncoding", "utf-16"},
                    {"textDocumentSync", {{"openClose", true}, {"change", 1}}},
                    {"documentFormattingProvider", true},
                    {"hoverProvider", true},
                    {"definitionProvider", true},
                    {"referencesProvider", true},
                    {"documentSymbolProvider", true}}},
                  {"serverInfo", {{"name", "replaygate"}, {"version", RG_VERSION}}}}));
  const std::vector<Json> diagnostics = published(s);
  ASSERT_EQ(diagnostics.size(), 3u);
  EXPECT_EQ(diagnostics[0], (Json{{"uri", kUri}, {"version", 1}, {"diagnostics", Json::array()}}));
  EXPECT_EQ(diagnostics[1], (Json{{"uri", kUri}, {"version", 2}, {"diagnostics", Json::array()}}));
  EXPECT_EQ(diagnostics[2], (Json{{"uri", kUri}, {"diagnostics", Json::array()}}));  // closed

  EXPECT_EQ(reply(s, 2)["result"],
            hover("input attempts: int\nmin 0\n\ndelivery attempts so far", range(12, 21, 12, 29)));
  EXPECT_EQ(reply(s, 3)["result"],
            hover("verb hold: effect none\n\nwait for an operator", range(12, 49, 12, 53)));
  EXPECT_EQ(reply(s, 4)["result"], hover("const max_attempts = 3", range(12, 33, 12, 45)));
  EXPECT_EQ(reply(s, 5)["result"],
            hover("rule exhausted -> hold (effect none)\n\nbudget exhausted"));
  EXPECT_EQ(reply(s, 6)["result"],
            hover("row known:payment.capture -> replay_once (effect create)\n\nthe capture timed "
                  "out"));
  EXPECT_EQ(reply(s, 7)["result"], nullptr);
  EXPECT_EQ(reply(s, 8)["result"], location(10, 6, 10, 18));
  EXPECT_EQ(reply(s, 9)["result"], location(6, 5, 6, 16));
  EXPECT_EQ(reply(s, 10)["result"], (Json{location(3, 6, 3, 14), location(12, 21, 12, 29)}));
  EXPECT_EQ(reply(s, 11)["result"],
            (Json{location(8, 8, 8, 12), location(12, 49, 12, 53)}));  // default and the rule
  const Json row{{"name", "known:payment.capture"},
                 {"detail", "-> replay_once (effect create)"},
                 {"kind", 8},
                 {"range", range(15, 2, 15, 56)},
                 {"selectionRange", range(15, 2, 15, 17)}};
  const Json symbols{{{"name", "topic"},
                      {"detail", "string"},
                      {"kind", 13},
                      {"range", range(2, 6, 2, 53)},
                      {"selectionRange", range(2, 6, 2, 11)}},
                     {{"name", "attempts"},
                      {"detail", "int"},
                      {"kind", 13},
                      {"range", range(3, 6, 3, 51)},
                      {"selectionRange", range(3, 6, 3, 14)}},
                     {{"name", "hold"},
                      {"detail", "effect none"},
                      {"kind", 24},
                      {"range", range(5, 5, 5, 44)},
                      {"selectionRange", range(5, 5, 5, 9)}},
                     {{"name", "replay_once"},
                      {"detail", "effect create"},
                      {"kind", 24},
                      {"range", range(6, 5, 6, 63)},
                      {"selectionRange", range(6, 5, 6, 16)}},
                     {{"name", "max_attempts"},
                      {"detail", "= 3"},
                      {"kind", 14},
                      {"range", range(10, 6, 10, 22)},
                      {"selectionRange", range(10, 6, 10, 18)}},
                     {{"name", "exhausted"},
                      {"detail", "-> hold (effect none)"},
                      {"kind", 12},
                      {"range", range(12, 0, 12, 72)},
                      {"selectionRange", range(12, 5, 12, 14)}},
                     {{"name", "known"},
                      {"detail", "by (topic)"},
                      {"kind", 23},
                      {"range", range(14, 0, 15, 56)},
                      {"selectionRange", range(14, 6, 14, 11)},
                      {"children", {row}}}};
  EXPECT_EQ(reply(s, 12)["result"], symbols);
  EXPECT_EQ(reply(s, 13)["result"], Json::array());  // already canonical
  EXPECT_EQ(reply(s, 14)["result"], (Json{{{"range", range(0, 0, 17, 0)}, {"newText", kPolicy}}}));
  EXPECT_EQ(reply(s, 15)["error"],
            (Json{{"code", -32601}, {"message", "unknown method 'textDocument/frobnicate'"}}));
  EXPECT_EQ(reply(s, 999)["result"], nullptr);
}

// The broken row: "café🚀" (é: 2 bytes, 1 UTF-16 unit; 🚀: 4 bytes, 2 units) before an unknown
// verb. lint says line 16, byte column 18; in UTF-16 units the verb starts at character 14.
const std::string kBroken = [] {
  std::string text = kPolicy;
  text.replace(text.find("  payment.capture -> replay_once"), 32, "  \"café🚀\" -> replay_onec");
  return text;
}();

// A YAML policy whose invariant fails: lint's counterexample letter is in the message.
const std::string kInvariantYaml =
    "policy: demo-yaml\n"
    "revision: 1\n"
    "inputs:\n"
    "  topic: {type: string, description: \"the topic\"}\n"
    "  attempts: {type: int, min: 0}\n"
    "verbs:\n"
    "  hold: {effect: none}\n"
    "  replay_once: {effect: create}\n"
    "default: hold\n"
    "rules:\n"
    "  - table: known\n"
    "    keys: [topic]\n"
    "    rows:\n"
    "      - [\"café🚀\", replay_once]\n"
    "invariants:\n"
    "  - invariant: never_replays\n"
    "    require: {effect_not: create}\n"
    "    reason: nothing is replayed\n";

// lint's JSON diagnostic as the server must publish it, the column converted by `to_character`.
Json as_published(const Json& d, int character, int length) {
  const int line = d["line"].get<int>() - 1;
  return Json{
      {"range", range(line, character, line, character + length)},
      {"severity", 1},
      {"code", d["code"]},
      {"source", "replaygate"},
      {"message", d["message"].get<std::string>() + "\nhint: " + d["hint"].get<std::string>()}};
}

TEST_F(LspServer, DiagnosticsAreLintsInUtf16OrUtf8Units) {
  const Json lint_broken = lint("broken.policy", kBroken);
  ASSERT_EQ(lint_broken.size(), 1u);
  EXPECT_EQ(lint_broken[0]["code"], "RG104");
  EXPECT_EQ(lint_broken[0]["line"], 16);
  EXPECT_EQ(lint_broken[0]["column"], 18);
  const Json lint_invariant = lint("inv.yaml", kInvariantYaml);
  ASSERT_EQ(lint_invariant.size(), 1u);
  EXPECT_EQ(lint_invariant[0]["code"], "RG210");
  EXPECT_NE(lint_invariant[0]["message"].get<std::string>().find(
                "to {\"topic\": \"café🚀\", \"attempts\": 0}"),
            std::string::npos);
  EXPECT_EQ(lint_invariant[0]["line"], 16);
  EXPECT_EQ(lint_invariant[0]["column"], 5);

  for (const bool utf8 : {false, true}) {
    const std::string yaml_uri = "file:///work/policies/inv.yaml";
    const Session s = converse(opening(utf8) + did_open(kUri, kBroken) +
                               note("textDocument/didOpen", {{"textDocument",
                                                              {{"uri", yaml_uri},
                                                               {"languageId", "yaml"},
                                                               {"version", 7},
                                                               {"text", kInvariantYaml}}}}) +
                               closing());
    EXPECT_EQ(s.exit_code, 0) << s.err;
    EXPECT_EQ(reply(s, 1)["result"]["capabilities"]["positionEncoding"], utf8 ? "utf-8" : "utf-16");
    const std::vector<Json> diagnostics = published(s);
    ASSERT_EQ(diagnostics.size(), 2u);
    // UTF-16: 17 bytes before the verb hold 14 units; UTF-8: the bytes themselves.
    EXPECT_EQ(diagnostics[0],
              (Json{{"uri", kUri},
                    {"version", 1},
                    {"diagnostics", {as_published(lint_broken[0], utf8 ? 17 : 14, 11)}}}))
        << (utf8 ? "utf-8" : "utf-16");
    // The invariant's span is its id, on an ASCII line: the same in both units.
    EXPECT_EQ(diagnostics[1], (Json{{"uri", yaml_uri},
                                    {"version", 7},
                                    {"diagnostics", {as_published(lint_invariant[0], 4, 9)}}}));
  }
}

TEST_F(LspServer, RangedChangesUseTheNegotiatedUnits) {
  // Replace the unknown verb by its UTF-16 range: the policy is then valid.
  const Session s = converse(
      opening() + did_open(kUri, kBroken) +
      note("textDocument/didChange",
           {{"textDocument", {{"uri", kUri}, {"version", 2}}},
            {"contentChanges", {{{"range", range(15, 14, 15, 25)}, {"text", "replay_once"}}}}}) +
      request(2, "textDocument/hover", at(kUri, 15, 5)) + closing());
  EXPECT_EQ(s.exit_code, 0) << s.err;
  const std::vector<Json> diagnostics = published(s);
  ASSERT_EQ(diagnostics.size(), 2u);
  EXPECT_EQ(diagnostics[0]["diagnostics"].size(), 1u);
  EXPECT_EQ(diagnostics[1], (Json{{"uri", kUri}, {"version", 2}, {"diagnostics", Json::array()}}));
  EXPECT_EQ(reply(s, 2)["result"],
            hover("row known:café🚀 -> replay_once (effect create)\n\nthe capture timed out"));
}

TEST_F(LspServer, FormattingIsRefusedForYamlAndSyntaxErrors) {
  const std::string yaml_uri = "file:///work/policies/inv.yaml";
  std::string syntax_error = kPolicy;
  syntax_error.replace(syntax_error.find("-> hold \"budget"), 2, "=>");
  const Session s =
      converse(opening() +
               note("textDocument/didOpen", {{"textDocument",
                                              {{"uri", yaml_uri},
                                               {"languageId", "yaml"},
                                               {"version", 1},
                                               {"text", kInvariantYaml}}}}) +
               did_open(kUri, syntax_error) +
               request(2, "textDocument/formatting",
                       {{"textDocument", text_document(yaml_uri)}, {"options", Json::object()}}) +
               request(3, "textDocument/formatting",
                       {{"textDocument", text_document(kUri)}, {"options", Json::object()}}) +
               request(4, "textDocument/hover", at(kUri, 12, 23)) +
               request(5, "textDocument/documentSymbol", {{"textDocument", text_document(kUri)}}) +
               closing());
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(reply(s, 2)["error"],
            (Json{{"code", -32803},
                  {"message",
                   "formatting works on .policy files only: YAML comments cannot be kept (run "
                   "'replaygate convert FILE --to policy' for the policy-language form)"}}));
  const Json refused = reply(s, 3)["error"];
  EXPECT_EQ(refused["code"], -32803);
  EXPECT_EQ(refused["message"].get<std::string>().rfind(
                "the policy has a syntax error at line 13, column 47 (RG014: ", 0),
            0u)
      << refused;
  // A syntax error leaves no syntax tree: no names, no outline, until it parses again.
  EXPECT_EQ(reply(s, 4)["result"], nullptr);
  EXPECT_EQ(reply(s, 5)["result"], Json::array());
}

TEST_F(LspServer, BadMessagesGetErrorRepliesAndTheSessionGoesOn) {
  const std::string input = opening() + "Content-Length: 5\r\n\r\n{\"jso" +  // not JSON
                            "Content-Length: 9\r\n\r\n{\"a\":\"\xff\"}" +    // invalid UTF-8
                            "Content-Type: text/plain\r\n\r\n" +             // no Content-Length
                            framed(Json::array({1, 2})) +                    // a batch
                            did_open(kUri, kPolicy) +
                            request(2, "textDocument/hover", at(kUri, -1, 0)) +  // a negative line
                            request(3, "textDocument/hover", at("file:///not/open.policy", 0, 0)) +
                            request(4, "textDocument/references",
                                    {{"textDocument", text_document(kUri)},
                                     {"position", {{"line", 0}, {"character", 0}}},
                                     {"context", {{"includeDeclaration", "yes"}}}}) +
                            note("textDocument/didOpen", {{"textDocument", {{"uri", 7}}}}) +
                            request(999, "shutdown", nullptr) +
                            request(5, "textDocument/hover", at(kUri, 0, 0)) +
                            note("exit", nullptr);
  const Session s = converse(input);
  EXPECT_EQ(s.exit_code, 0) << s.err;
  std::vector<Json> errors;
  for (const Json& message : s.sent) {
    if (message.contains("error") && message["id"].is_null()) errors.push_back(message["error"]);
  }
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(errors[0]["code"], -32700);
  EXPECT_EQ(errors[0]["message"].get<std::string>().rfind("the message is not JSON: ", 0), 0u);
  EXPECT_EQ(errors[1]["code"], -32700);
  EXPECT_NE(errors[1]["message"].get<std::string>().find("ill-formed UTF-8"), std::string::npos);
  EXPECT_EQ(errors[2],
            (Json{{"code", -32700}, {"message", "a header block without Content-Length"}}));
  EXPECT_EQ(errors[3],
            (Json{{"code", -32600}, {"message", "batches are not supported: send one message"}}));
  EXPECT_EQ(reply(s, 2)["error"],
            (Json{{"code", -32602},
                  {"message",
                   "textDocument/hover: params.position.line must be an integer from 0 to "
                   "2147483647"}}));
  EXPECT_EQ(reply(s, 3)["error"],
            (Json{{"code", -32602},
                  {"message",
                   "textDocument/hover: the document file:///not/open.policy is not open (send "
                   "textDocument/didOpen first)"}}));
  EXPECT_EQ(reply(s, 4)["error"],
            (Json{{"code", -32602},
                  {"message",
                   "textDocument/references: params.context.includeDeclaration must be a "
                   "boolean"}}));
  bool logged = false;
  for (const Json& message : s.sent) {
    logged = logged || message == Json{{"jsonrpc", "2.0"},
                                       {"method", "window/logMessage"},
                                       {"params",
                                        {{"type", 1},
                                         {"message",
                                          "replaygate: textDocument/didOpen: bad params: "
                                          "params.textDocument.uri must be a string"}}}};
  }
  EXPECT_TRUE(logged);
  EXPECT_EQ(reply(s, 999)["result"], nullptr);
  EXPECT_EQ(
      reply(s, 5)["error"],
      (Json{{"code", -32600}, {"message", "the server is shutting down: only exit is accepted"}}));
}

TEST_F(LspServer, RequestsBeforeInitializeAreRefusedAndExitWithoutShutdownIsOne) {
  const Session s = converse(request(1, "textDocument/hover", at(kUri, 0, 0)) +
                             did_open(kUri, kPolicy) + note("exit", nullptr));
  EXPECT_EQ(s.exit_code, 1);
  ASSERT_EQ(s.sent.size(), 1u);  // the didOpen before initialize is dropped: no diagnostics
  EXPECT_EQ(s.sent[0]["error"],
            (Json{{"code", -32002},
                  {"message", "the server is not initialized: send initialize first"}}));
  // The end of input without exit: 1 without shutdown, 0 after it.
  EXPECT_EQ(converse(opening()).exit_code, 1);
  EXPECT_EQ(converse(opening() + request(2, "shutdown", nullptr)).exit_code, 0);
}

TEST_F(LspServer, AContentLengthLongerThanTheInputEndsTheSessionCleanly) {
  const Session s =
      converse(opening() + "Content-Length: 5000\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":2}");
  EXPECT_EQ(s.exit_code, 2);  // not 124 (timeout's): the server did not wait for more
  EXPECT_EQ(s.err,
            "replaygate lsp: the input ended 24 bytes into a message of 5000 bytes "
            "(Content-Length)\n");
  ASSERT_EQ(s.sent.size(), 1u);  // the initialize reply, then nothing
  // A header that never ends is cut off at 8 KiB: framing is lost.
  const Session endless = converse(opening() + std::string(20000, 'h'));
  EXPECT_EQ(endless.exit_code, 2);
  EXPECT_EQ(endless.err,
            "replaygate lsp: a header block longer than 8192 bytes (is the client speaking "
            "LSP?)\n");
}

TEST_F(LspServer, AHundredMegabyteDocumentGetsTheCompilersSizeDiagnostic) {
  // Spelled out rather than dumped from a Json value: the sanitizer build's test stays quick.
  const std::string huge_open = lsp::frame(
      "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didOpen\",\"params\":{"
      "\"textDocument\":{\"uri\":\"" +
      kUri + "\",\"languageId\":\"policy\",\"version\":1,\"text\":\"# " +
      std::string(100 * 1000 * 1000, 'x') + "\\n\"}}}");
  const Session s =
      converse(opening() + huge_open + request(2, "textDocument/hover", at(kUri, 0, 5)) +
               request(3, "textDocument/formatting",
                       {{"textDocument", text_document(kUri)}, {"options", Json::object()}}) +
               closing());
  EXPECT_EQ(s.exit_code, 0) << s.err;
  const std::vector<Json> diagnostics = published(s);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0]["diagnostics"],
            (Json{{{"range", range(0, 0, 0, 0)},
                   {"severity", 1},
                   {"code", "RG007"},
                   {"source", "replaygate"},
                   {"message",
                    "the file is larger than the limit of 67108864 bytes\nhint: a policy file "
                    "must be at most 64 MiB"}}}));
  EXPECT_EQ(reply(s, 2)["result"], nullptr);
  EXPECT_EQ(reply(s, 3)["error"],
            (Json{{"code", -32803},
                  {"message", "the document is over the size limit (RG007): not formatted"}}));
}

TEST_F(LspServer, NamesWorkInPolicyYamlToo) {
  const std::string yaml_uri = "file:///work/policies/inv.yaml";
  const Json at_key = at(yaml_uri, 11, 11);  // `topic` in `keys: [topic]`
  const Session s = converse(
      opening() +
      note("textDocument/didOpen", {{"textDocument",
                                     {{"uri", yaml_uri},
                                      {"languageId", "yaml"},
                                      {"version", 1},
                                      {"text", kInvariantYaml}}}}) +
      request(2, "textDocument/definition", at_key) +
      request(3, "textDocument/hover", at(yaml_uri, 13, 21)) +  // replay_once, after "café🚀"
      request(4, "textDocument/references",
              {{"textDocument", text_document(yaml_uri)},
               {"position", {{"line", 7}, {"character", 4}}},
               {"context", {{"includeDeclaration", true}}}}) +
      closing());
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(reply(s, 2)["result"], (Json{{"uri", yaml_uri}, {"range", range(3, 2, 3, 7)}}));
  EXPECT_EQ(reply(s, 3)["result"], hover("verb replay_once: effect create", range(13, 19, 13, 30)));
  EXPECT_EQ(reply(s, 4)["result"], (Json{{{"uri", yaml_uri}, {"range", range(7, 2, 7, 13)}},
                                         {{"uri", yaml_uri}, {"range", range(13, 19, 13, 30)}}}));
}

TEST_F(LspServer, MarkdownHoversEscapeTheAuthorsText) {
  std::string policy = kPolicy;
  policy.replace(policy.find("budget exhausted"), 16, "budget *exhausted*");
  const Session s = converse(opening(false, /*plain=*/false) + did_open(kUri, policy) +
                             request(2, "textDocument/hover", at(kUri, 12, 7)) + closing());
  EXPECT_EQ(
      reply(s, 2)["result"],
      (Json{{"contents",
             {{"kind", "markdown"},
              {"value",
               "```\nrule exhausted -> hold (effect none)\n```\n\nbudget \\*exhausted\\*"}}}}));
}

}  // namespace
}  // namespace replaygate::testing
