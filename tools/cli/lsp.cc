// `replaygate lsp`: the language server for .policy files and policy YAML, over stdin/stdout
// (tools/lsp/server.h; editor set-up in docs/editors.md).
//
// Standard output carries the protocol and nothing else; problems of the stream itself go to
// standard error. Exit: 0 after shutdown and exit, 1 on exit (or the end of input) without
// shutdown, 2 when the input ends inside a message, framing is lost, or a read or write fails.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string_view>

#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/lsp/server.h"

namespace replaygate::cli {

Runner setup_lsp(CLI::App& sub) {
  sub.footer(
      "Speak the Language Server Protocol on standard input and output: diagnostics as lint\n"
      "gives them, formatting as fmt does (.policy only), hover, go to definition, find\n"
      "references and document symbols. Editor set-up: docs/editors.md.\n"
      "Exit: 0 after shutdown and exit, 1 exit without shutdown, 2 a broken stream.");
  // Editors' generic clients often start servers with --stdio; it is the only transport here.
  auto stdio = std::make_shared<bool>(false);
  sub.add_flag("--stdio", *stdio, "Use standard input and output (the default and only transport)");
  return [stdio] {
    (void)stdio;  // kept alive for CLI11, which writes the flag through a reference
    lsp::FdSource input(STDIN_FILENO);
    const auto send = [](std::string_view bytes) {
      size_t written = 0;
      return write_fully(STDOUT_FILENO, bytes.data(), bytes.size(), &written) == 0;
    };
    return lsp::serve(input, send, stderr);
  };
}

}  // namespace replaygate::cli
