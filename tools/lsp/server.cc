// The language server's dispatch and features (see server.h).
#include "tools/lsp/server.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>
#include <utility>

#include "common/source.h"
#include "compiler/compile.h"
#include "compiler/syntax/print_dsl.h"
#include "runtime/replaygate.h"

namespace replaygate::lsp {
namespace {

// Thrown by the params readers; becomes an InvalidParams reply.
struct BadParams {
  std::string message;
};

// Thrown by a request that was understood but cannot be carried out; a RequestFailed reply.
struct Failed {
  std::string message;
};

const Json& member(const Json& object, const char* name, const std::string& where) {
  if (!object.is_object()) throw BadParams{where + " must be an object"};
  const auto it = object.find(name);
  if (it == object.end()) throw BadParams{where + "." + name + " is missing"};
  return *it;
}

std::string string_member(const Json& object, const char* name, const std::string& where) {
  const Json& value = member(object, name, where);
  if (!value.is_string()) throw BadParams{where + "." + name + " must be a string"};
  return value.get<std::string>();
}

uint32_t count_member(const Json& object, const char* name, const std::string& where) {
  const Json& value = member(object, name, where);
  if (!value.is_number_unsigned() || value.get<uint64_t>() > 0x7FFFFFFF) {
    throw BadParams{where + "." + name + " must be an integer from 0 to 2147483647"};
  }
  return value.get<uint32_t>();
}

std::string uri_of(const Json& params) {
  return string_member(member(params, "textDocument", "params"), "uri", "params.textDocument");
}

Position position_of(const Json& params) {
  const Json& position = member(params, "position", "params");
  return Position{count_member(position, "line", "params.position"),
                  count_member(position, "character", "params.position")};
}

Json to_json(const Position& position) {
  return Json{{"line", position.line}, {"character", position.character}};
}

Json to_json(const Range& range) {
  return Json{{"start", to_json(range.start)}, {"end", to_json(range.end)}};
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The extension of `path`, lower case, as the compiler picks its front-end by it (compile.h).
std::string extension_of(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

// The path a document is compiled as: a file URI's path, percent-decoded; anything else as it is.
// The extension picks the front-end, as for lint; a name without a policy extension takes one from
// the client's language id ("yaml", "policy"), so an unsaved buffer is still read.
std::string path_of(const std::string& uri, const std::string& language) {
  std::string path = uri;
  if (path.rfind("file://", 0) == 0) {
    path = path.substr(7);
    std::string decoded;
    for (size_t i = 0; i < path.size(); ++i) {
      if (path[i] == '%' && i + 2 < path.size() && hex(path[i + 1]) >= 0 && hex(path[i + 2]) >= 0) {
        decoded += static_cast<char>(hex(path[i + 1]) * 16 + hex(path[i + 2]));
        i += 2;
      } else {
        decoded += path[i];
      }
    }
    path = decoded;
  }
  const std::string extension = extension_of(path);
  if (extension == ".policy" || extension == ".yaml" || extension == ".yml") return path;
  if (language == "yaml") return path + ".yaml";
  if (language == "policy" || language == "replaygate") return path + ".policy";
  return path;
}

bool is_policy_language(const std::string& path) { return extension_of(path) == ".policy"; }

// Markdown's special characters escaped, so a reason is shown as written.
std::string markdown_text(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\`*_{}[]<>#|!").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

Json log_message(const std::string& text) {
  return Json{{"type", 1}, {"message", "replaygate: " + text}};
}

}  // namespace

struct Server::Document {
  std::string uri;
  std::string path;
  Json version;  // an integer, or null when the client gave none
  std::string text;
  bool too_large = false;  // over kMaxSourceBytes: the text is not kept (RG007 says why)
  PolicyModel model;
  std::optional<LineIndex> lines;  // over `text`; rebuilt whenever it changes
};

Server::Server() = default;
Server::~Server() = default;

void Server::handle(std::string_view body, std::vector<std::string>* out) {
  ParsedMessage parsed = parse_message(body);
  if (!parsed.message) {
    out->push_back(error_reply(parsed.id, parsed.error_code, parsed.error));
    return;
  }
  Message& message = *parsed.message;
  if (message.is_response) return;  // the server sends no requests: nothing to match
  try {
    dispatch(message, out);
  } catch (const BadParams& e) {
    if (message.id) {
      out->push_back(error_reply(*message.id, kInvalidParams, message.method + ": " + e.message));
    } else {
      out->push_back(notification("window/logMessage",
                                  log_message(message.method + ": bad params: " + e.message)));
    }
  } catch (const Failed& e) {
    if (message.id) out->push_back(error_reply(*message.id, kRequestFailed, e.message));
  } catch (const std::exception& e) {
    const std::string what = message.method + ": internal error: " + e.what();
    if (message.id) {
      out->push_back(error_reply(*message.id, kInternalError, what));
    } else {
      out->push_back(notification("window/logMessage", log_message(what)));
    }
  }
}

void Server::framing_error(const Frame& frame, std::vector<std::string>* out) {
  out->push_back(error_reply(nullptr,
                             frame.kind == Frame::Kind::kTooLarge ? kInvalidRequest : kParseError,
                             frame.problem));
}

void Server::dispatch(Message& message, std::vector<std::string>* out) {
  const std::string& method = message.method;
  const bool request = message.id.has_value();
  const auto reply = [&](const Json& result) { out->push_back(result_reply(*message.id, result)); };
  if (method == "exit") {
    exit_ = true;
    return;
  }
  if (!initialized_ && method != "initialize") {
    if (request) {
      out->push_back(error_reply(*message.id, kServerNotInitialized,
                                 "the server is not initialized: send initialize first"));
    }
    return;  // notifications before initialize are dropped (LSP)
  }
  if (shutdown_) {
    if (request) {
      out->push_back(error_reply(*message.id, kInvalidRequest,
                                 "the server is shutting down: only exit is accepted"));
    }
    return;
  }
  if (request) {
    if (method == "initialize") {
      if (initialized_) {
        out->push_back(error_reply(*message.id, kInvalidRequest, "initialize was already sent"));
        return;
      }
      reply(initialize(message.params));
    } else if (method == "shutdown") {
      shutdown_ = true;
      reply(nullptr);
    } else if (method == "textDocument/formatting") {
      reply(formatting(message.params));
    } else if (method == "textDocument/hover") {
      reply(hover(message.params));
    } else if (method == "textDocument/definition") {
      reply(definition(message.params));
    } else if (method == "textDocument/references") {
      reply(references(message.params));
    } else if (method == "textDocument/documentSymbol") {
      reply(symbols(message.params));
    } else {
      out->push_back(error_reply(*message.id, kMethodNotFound, "unknown method '" + method + "'"));
    }
    return;
  }
  if (method == "textDocument/didOpen") {
    open(message.params, out);
  } else if (method == "textDocument/didChange") {
    change(message.params, out);
  } else if (method == "textDocument/didClose") {
    close(message.params, out);
  }
  // initialized, didSave, $/cancelRequest, $/setTrace and unknown notifications: nothing to do.
}

Json Server::initialize(const Json& params) {
  if (!params.is_object()) throw BadParams{"params must be an object"};
  initialized_ = true;
  const Json capabilities = params.value("capabilities", Json::object());
  if (capabilities.is_object()) {
    const Json general = capabilities.value("general", Json::object());
    const Json encodings =
        general.is_object() ? general.value("positionEncodings", Json::array()) : Json::array();
    if (encodings.is_array()) {
      for (const Json& encoding : encodings) {
        if (encoding == "utf-8") encoding_ = Encoding::kUtf8;
      }
    }
    const Json text_document = capabilities.value("textDocument", Json::object());
    const Json hover =
        text_document.is_object() ? text_document.value("hover", Json::object()) : Json::object();
    const Json formats =
        hover.is_object() ? hover.value("contentFormat", Json::array()) : Json::array();
    markdown_ = formats.is_array() && !formats.empty() && formats.front() == "markdown";
  }
  return Json{{"capabilities",
               {{"positionEncoding", encoding_name(encoding_)},
                {"textDocumentSync", {{"openClose", true}, {"change", 1}}},
                {"documentFormattingProvider", true},
                {"hoverProvider", true},
                {"definitionProvider", true},
                {"referencesProvider", true},
                {"documentSymbolProvider", true}}},
              {"serverInfo", {{"name", "replaygate"}, {"version", RG_VERSION}}}};
}

Server::Document& Server::document_of(const Json& params) {
  const std::string uri = uri_of(params);
  const auto it = documents_.find(uri);
  if (it == documents_.end()) {
    throw BadParams{"the document " + uri + " is not open (send textDocument/didOpen first)"};
  }
  return *it->second;
}

void Server::analyze(Document& document, std::vector<std::string>* out) {
  document.too_large = document.text.size() > kMaxSourceBytes;
  if (document.too_large) {
    // The compiler's limit, reported as the compiler reports it (RG007), from the first bytes
    // past the limit (what lint reads of a file); the document itself is not kept.
    document.model = analyze_policy(std::string_view(document.text).substr(0, kMaxSourceBytes + 1),
                                    document.path);
    std::string().swap(document.text);
  } else {
    document.model = analyze_policy(document.text, document.path);
  }
  document.lines.emplace(document.text);
  Json diagnostics = Json::array();
  for (const Diagnostic& d : document.model.diagnostics) {
    Json item{{"range", to_json(document.lines->range_of(d.span, encoding_))},
              {"severity", d.severity == Severity::kError     ? 1
                           : d.severity == Severity::kWarning ? 2
                                                              : 3},
              {"code", d.code},
              {"source", "replaygate"},
              {"message", d.hint.empty() ? d.message : d.message + "\nhint: " + d.hint}};
    diagnostics.push_back(std::move(item));
  }
  Json params{{"uri", document.uri}, {"diagnostics", std::move(diagnostics)}};
  if (!document.version.is_null()) params["version"] = document.version;
  out->push_back(notification("textDocument/publishDiagnostics", params));
}

void Server::open(Json& params, std::vector<std::string>* out) {
  const Json& item = member(params, "textDocument", "params");
  const std::string uri = string_member(item, "uri", "params.textDocument");
  member(item, "text", "params.textDocument");
  Json& text = params["textDocument"]["text"];
  if (!text.is_string()) throw BadParams{"params.textDocument.text must be a string"};
  const Json version = item.value("version", Json());
  auto document = std::make_unique<Document>();
  document->uri = uri;
  document->path = path_of(uri, item.contains("languageId") && item["languageId"].is_string()
                                    ? item["languageId"].get<std::string>()
                                    : std::string());
  document->version = version.is_number_integer() ? version : Json();
  document->text = std::move(text.get_ref<std::string&>());
  Document& stored = *(documents_[uri] = std::move(document));
  analyze(stored, out);
}

void Server::change(Json& params, std::vector<std::string>* out) {
  Document& document = document_of(params);
  Json& changes = params["contentChanges"];
  if (!changes.is_array()) throw BadParams{"params.contentChanges must be an array"};
  // Ranged changes apply to the text as the changes before them left it. A document over the size
  // limit was not kept: only a whole new text can follow it.
  bool have_text = !document.too_large;
  std::string text;
  bool replaced = false;
  for (Json& change : changes) {
    member(change, "text", "params.contentChanges[]");
    Json& replacement = change["text"];
    if (!replacement.is_string()) throw BadParams{"params.contentChanges[].text must be a string"};
    if (!change.contains("range")) {
      text = std::move(replacement.get_ref<std::string&>());
      have_text = replaced = true;
      continue;
    }
    if (!have_text) {
      throw BadParams{"a ranged change to a document over the size limit: send the whole text"};
    }
    if (!replaced) {
      text = document.text;
      replaced = true;
    }
    const Json& range = change["range"];
    const Json& start = member(range, "start", "params.contentChanges[].range");
    const Json& end = member(range, "end", "params.contentChanges[].range");
    const LineIndex lines(text);
    const size_t from = lines.offset_of(Position{count_member(start, "line", "range.start"),
                                                 count_member(start, "character", "range.start")},
                                        encoding_);
    const size_t to =
        std::max(from, lines.offset_of(Position{count_member(end, "line", "range.end"),
                                                count_member(end, "character", "range.end")},
                                       encoding_));
    text.replace(from, to - from, replacement.get<std::string>());
  }
  const Json version = member(params, "textDocument", "params").value("version", Json());
  document.version = version.is_number_integer() ? version : Json();
  if (!replaced) return;  // no change: the diagnostics published stand
  document.text = std::move(text);
  analyze(document, out);
}

void Server::close(const Json& params, std::vector<std::string>* out) {
  const std::string uri = uri_of(params);
  if (documents_.erase(uri) == 0) return;
  // The client drops a closed document's diagnostics only when told: an empty list.
  out->push_back(notification("textDocument/publishDiagnostics",
                              Json{{"uri", uri}, {"diagnostics", Json::array()}}));
}

Json Server::formatting(const Json& params) {
  Document& document = document_of(params);
  if (!is_policy_language(document.path)) {
    throw Failed{
        "formatting works on .policy files only: YAML comments cannot be kept (run "
        "'replaygate convert FILE --to policy' for the policy-language form)"};
  }
  if (document.too_large)
    throw Failed{"the document is over the size limit (RG007): not formatted"};
  const FormatResult formatted = format_dsl_checked(document.text, document.path);
  if (!formatted.text && formatted.unstable.empty()) {
    std::string why = "the policy has a syntax error";
    if (!formatted.diagnostics.empty()) {
      const Diagnostic& d = formatted.diagnostics.front();
      const Range at = document.lines->range_of(d.span, encoding_);
      why += " at line " + std::to_string(at.start.line + 1) + ", column " +
             std::to_string(at.start.character + 1) + " (" + d.code + ": " + d.message + ")";
    }
    throw Failed{why + "; fix it first"};
  }
  if (!formatted.text) {
    throw Failed{"the canonical form of this document would not read back (" + formatted.unstable +
                 "); it is left unchanged: split the long item (for example a long 'in (...)' "
                 "list into a table, or several rules)"};
  }
  if (*formatted.text == document.text) return Json::array();
  return Json::array({Json{{"range", to_json(Range{Position{}, document.lines->end(encoding_)})},
                           {"newText", *formatted.text}}});
}

Json Server::hover(const Json& params) {
  const Position position = position_of(params);
  Document& document = document_of(params);
  const size_t offset = document.lines->offset_of(position, encoding_);
  const std::optional<HoverText> text = hover_at(document.model, offset);
  if (!text) return nullptr;
  std::string value;
  if (markdown_) {
    value = "```\n" + text->signature + "\n```";
    if (!text->text.empty()) value += "\n\n" + markdown_text(text->text);
  } else {
    value = text->signature;
    if (!text->text.empty()) value += "\n\n" + text->text;
  }
  Json result{{"contents", {{"kind", markdown_ ? "markdown" : "plaintext"}, {"value", value}}}};
  if (const Occurrence* occurrence = occurrence_at(document.model, offset)) {
    result["range"] = to_json(document.lines->range_of_bytes(occurrence->span.offset,
                                                             occurrence->span.length, encoding_));
  }
  return result;
}

Json Server::definition(const Json& params) {
  const Position position = position_of(params);
  Document& document = document_of(params);
  const size_t offset = document.lines->offset_of(position, encoding_);
  const Occurrence* occurrence = occurrence_at(document.model, offset);
  if (occurrence == nullptr) return nullptr;
  const Occurrence* definition = definition_of(document.model, *occurrence);
  if (definition == nullptr) return nullptr;
  return Json{{"uri", document.uri},
              {"range", to_json(document.lines->range_of_bytes(
                            definition->span.offset, definition->span.length, encoding_))}};
}

Json Server::references(const Json& params) {
  const Position position = position_of(params);
  Document& document = document_of(params);
  const size_t offset = document.lines->offset_of(position, encoding_);
  bool include_declaration = false;
  if (params.contains("context")) {
    const Json& context = params["context"];
    if (!context.is_object() || !context.value("includeDeclaration", Json(false)).is_boolean()) {
      throw BadParams{"params.context.includeDeclaration must be a boolean"};
    }
    include_declaration = context.value("includeDeclaration", false);
  }
  const Occurrence* occurrence = occurrence_at(document.model, offset);
  if (occurrence == nullptr) return nullptr;
  Json locations = Json::array();
  for (const Occurrence* reference :
       references_of(document.model, *occurrence, include_declaration)) {
    locations.push_back(
        Json{{"uri", document.uri},
             {"range", to_json(document.lines->range_of_bytes(
                           reference->span.offset, reference->span.length, encoding_))}});
  }
  return locations;
}

Json Server::symbols(const Json& params) {
  Document& document = document_of(params);
  const LineIndex& lines = *document.lines;
  const std::function<Json(const Symbol&)> to_symbol = [&](const Symbol& symbol) {
    const Range selection =
        lines.range_of_bytes(symbol.selection.offset, symbol.selection.length, encoding_);
    Json out{{"name", symbol.name.empty() ? std::string("(unnamed)") : symbol.name},
             {"detail", symbol.detail},
             {"kind", static_cast<int>(symbol.kind)},
             {"range", to_json(symbol.length > 0
                                   ? lines.range_of_bytes(symbol.offset, symbol.length, encoding_)
                                   : selection)},
             {"selectionRange", to_json(selection)}};
    if (!symbol.children.empty()) {
      Json children = Json::array();
      for (const Symbol& child : symbol.children) children.push_back(to_symbol(child));
      out["children"] = std::move(children);
    }
    return out;
  };
  Json result = Json::array();
  for (const Symbol& symbol : document.model.symbols) result.push_back(to_symbol(symbol));
  return result;
}

int serve(ByteSource& input, const std::function<bool(std::string_view)>& send, std::FILE* log) {
  MessageReader reader(input);
  Server server;
  std::vector<std::string> out;
  for (;;) {
    Frame next = reader.next();
    out.clear();
    switch (next.kind) {
      case Frame::Kind::kMessage:
        server.handle(next.body, &out);
        break;
      case Frame::Kind::kBadHeader:
      case Frame::Kind::kTooLarge:
        server.framing_error(next, &out);
        break;
      case Frame::Kind::kEnd:
        return server.shutdown_received() ? 0 : 1;
      case Frame::Kind::kTruncated:
      case Frame::Kind::kLost:
      case Frame::Kind::kReadError:
        std::fprintf(log, "replaygate lsp: %s\n", next.problem.c_str());
        return 2;
    }
    std::string().swap(next.body);  // a large document's bytes go before the replies are framed
    for (const std::string& body : out) {
      if (!send(frame(body))) {
        std::fprintf(log, "replaygate lsp: cannot write to the client\n");
        return 2;
      }
    }
    if (server.exit_received()) return server.shutdown_received() ? 0 : 1;
  }
}

}  // namespace replaygate::lsp
