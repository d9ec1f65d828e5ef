// The language server for policies (`replaygate lsp`): LSP over a byte stream, single-threaded.
//
// Server turns one message body into the bodies to send back (replies, publishDiagnostics,
// window/logMessage); serve() runs one over a stream with framing.h until the client says exit.
// Requests: initialize, shutdown, textDocument/formatting, hover, definition, references and
// documentSymbol; notifications: initialized, exit, textDocument/didOpen, didChange (full or
// ranged changes), didClose, didSave. Unknown requests get MethodNotFound, bodies that are not
// JSON ParseError, bad params InvalidParams; nothing throws out of handle().
//
// The server reads no file and writes no file: documents come from the client, formatting
// answers with an edit the client applies. Positions are UTF-16 code units unless the client
// offers the `utf-8` position encoding (general.positionEncodings).
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tools/lsp/framing.h"
#include "tools/lsp/jsonrpc.h"
#include "tools/lsp/policy_model.h"
#include "tools/lsp/positions.h"

namespace replaygate::lsp {

class Server {
 public:
  Server();
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Handles one message body and appends what to send (unframed JSON texts) to `out`, in order.
  void handle(std::string_view body, std::vector<std::string>* out);
  // For a frame the reader got past (kBadHeader, kTooLarge): the error reply (id null).
  void framing_error(const Frame& frame, std::vector<std::string>* out);

  bool exit_received() const { return exit_; }
  bool shutdown_received() const { return shutdown_; }

 private:
  struct Document;

  // Takes the message apart: a document's text is moved out of it, not copied.
  void dispatch(Message& message, std::vector<std::string>* out);
  Json initialize(const Json& params);
  void open(Json& params, std::vector<std::string>* out);
  void change(Json& params, std::vector<std::string>* out);
  void close(const Json& params, std::vector<std::string>* out);
  Json formatting(const Json& params);
  Json hover(const Json& params);
  Json definition(const Json& params);
  Json references(const Json& params);
  Json symbols(const Json& params);

  // The open document `params.textDocument.uri` names; throws InvalidParams when it is not open.
  Document& document_of(const Json& params);
  // Recompiles `document` and queues its diagnostics.
  void analyze(Document& document, std::vector<std::string>* out);

  bool initialized_ = false;
  bool shutdown_ = false;
  bool exit_ = false;
  Encoding encoding_ = Encoding::kUtf16;
  bool markdown_ = false;  // the client renders markdown hovers
  std::map<std::string, std::unique_ptr<Document>> documents_;
};

// Runs a Server on `input` until the client sends exit or the stream ends. Every message goes
// out through `send` (framed; false: the write failed). Problems of the stream itself are written
// to `log` as "replaygate lsp: ...". Returns the exit code:
//   0 exit after shutdown (or the stream ended after shutdown);
//   1 exit without shutdown, or the stream ended without either (the LSP rule);
//   2 the stream ended inside a message (a Content-Length larger than what followed), a header
//     block over kMaxHeaderBytes, or a read or write error.
int serve(ByteSource& input, const std::function<bool(std::string_view)>& send, std::FILE* log);

}  // namespace replaygate::lsp
