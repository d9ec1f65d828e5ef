// Build-time generator of the man pages and the bash completion, from the CLI's own definition.
//
// It builds the command line exactly as `replaygate` does (build_app, tools/cli/commands.h) and
// walks it: one man page per command and nested action (replaygate.1, replaygate-compile.1,
// replaygate-ledger-show.1, ...) whose synopsis and option lines are CLI11's own --help text, and
// whose description is the command's section of docs/cli.md rendered to roff by cmark-gfm; and
// one bash completion script with every command, action, option and fixed choice. Nothing here
// is written by hand twice, so an option added to the CLI is in its man page and its completion
// on the next build; the CTest test cli_docs_agree fails until docs/cli.md documents it too.
//
// Usage: replaygate_docgen --cli-doc docs/cli.md --man-dir DIR --completion FILE
// Exit 0 written, 2 usage or I/O errors (the message names the file).
#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/replaygate.h"
#include "tools/cli/commands.h"

namespace {

using replaygate::cli::build_app;
using replaygate::cli::kExitOk;
using replaygate::cli::kExitUsage;

// A failure to read or write a file: reported with its path, exit 2.
struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One command of the tree: its words after "replaygate" ({} for the program itself).
struct Command {
  std::vector<std::string> path;
  const CLI::App* app;
};

void collect(const CLI::App* app, std::vector<std::string> path, std::vector<Command>& out) {
  out.push_back({path, app});
  for (const CLI::App* sub : app->get_subcommands({})) {
    std::vector<std::string> sub_path = path;
    sub_path.push_back(sub->get_name());
    collect(sub, sub_path, out);
  }
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : separator) + words[i];
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read " + path + ": " + std::strerror(errno));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Written to a temporary file and renamed over the path, so a build stopped half-way leaves no
// half page for the install step to pick up.
void write_file(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw IoError("cannot write " + tmp.string() + ": " + std::strerror(errno));
  }
  std::error_code error;
  std::filesystem::rename(tmp, path, error);
  if (error) throw IoError("cannot write " + path.string() + ": " + error.message());
}

// Text as roff sees it: a backslash is \e, every '-' is \- (an ASCII hyphen-minus that man
// neither hyphenates nor turns into a Unicode hyphen, so a copied option works), and a line that
// would start with '.' or '\'' (a request) starts with the zero-width \&.
std::string roff(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    line_start = c == '\n';
  }
  return out;
}

// CLI11's help text wraps by hand with '\n'; a man page reflows it, so the lines are joined.
std::string unwrap(std::string_view text) {
  std::string out;
  for (char c : text) out += c == '\n' ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  size_t start = 0;
  while (start < text.size() && (text[start] == '\n' || text[start] == ' ')) ++start;
  return text.substr(start);
}

// docs/cli.md cut at its level-2 headings ("## compile", "## proposal check, proposal compare"),
// fenced code blocks respected. `intro` is everything before the first heading.
struct CliDoc {
  std::string intro;
  struct Section {
    std::vector<std::string> names;  // the heading split at ", ", backticks dropped
    std::string body;                // the markdown under it, up to the next level-2 heading
  };
  std::vector<Section> sections;
};

CliDoc split_cli_doc(const std::string& text) {
  CliDoc doc;
  std::string* body = &doc.intro;
  bool in_fence = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) in_fence = !in_fence;
    // The page's title ("# The `replaygate` command"): the man page has its own.
    if (!in_fence && line.rfind("# ", 0) == 0) continue;
    if (!in_fence && line.rfind("## ", 0) == 0) {
      std::string heading;
      for (char c : line.substr(3)) {
        if (c != '`') heading += c;
      }
      CliDoc::Section section;
      size_t start = 0;
      for (;;) {
        const size_t comma = heading.find(", ", start);
        section.names.push_back(trim(heading.substr(start, comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 2;
      }
      doc.sections.push_back(section);
      body = &doc.sections.back().body;
      continue;
    }
    *body += line + "\n";
  }
  return doc;
}

// The docs/cli.md text that documents `path`: its own section, else its parent command's (the
// "## ledger" section documents every ledger action), else none (cli_docs_agree fails then).
const std::string* section_for(const CliDoc& doc, const std::vector<std::string>& path) {
  if (path.empty()) return &doc.intro;
  for (size_t n = path.size(); n > 0; --n) {
    const std::string want = join({path.begin(), path.begin() + static_cast<long>(n)}, " ");
    for (const CliDoc::Section& section : doc.sections) {
      for (const std::string& name : section.names) {
        if (name == want) return &section.body;
      }
    }
  }
  return nullptr;
}

// Markdown to roff with cmark-gfm (tables as tbl). Level-3 headings of a section become .SS.
std::string markdown_to_roff(const std::string& markdown) {
  cmark_gfm_core_extensions_ensure_registered();
  std::unique_ptr<cmark_parser, decltype(&cmark_parser_free)> parser(
      cmark_parser_new(CMARK_OPT_DEFAULT), cmark_parser_free);
  if (cmark_syntax_extension* table = cmark_find_syntax_extension("table")) {
    cmark_parser_attach_syntax_extension(parser.get(), table);
  }
  cmark_parser_feed(parser.get(), markdown.data(), markdown.size());
  std::unique_ptr<cmark_node, decltype(&cmark_node_free)> document(
      cmark_parser_finish(parser.get()), cmark_node_free);
  // Width 0: no wrapping by cmark, whose wrapped lines can start with a '.' roff would read as a
  // request; soft line breaks stay as the source's line breaks, which roff fills.
  char* rendered = cmark_render_man(document.get(), CMARK_OPT_DEFAULT, 0);
  const std::string roff_text = rendered;
  std::free(rendered);
  // A link whose text is its target ("[signing.md](signing.md)") reads "signing.md (signing.md)";
  // once is enough.
  static const std::regex same_link(R"(([^\s()]+) \(\1\))");
  const std::string linked = std::regex_replace(roff_text, same_link, "$1");
  // cmark-gfm escapes a leading '.' in text but not in a code block (".nf", "\f[C]", the lines,
  // "\f[]", ".fi"), where "..." would be read as a request: the zero-width \& keeps it text.
  std::string out;
  std::istringstream lines(linked);
  std::string line, previous;
  bool in_code = false;
  while (std::getline(lines, line)) {
    if (in_code && line.rfind("\\f[]", 0) == 0) in_code = false;
    if (in_code && (line.rfind(".", 0) == 0 || line.rfind("'", 0) == 0)) line = "\\&" + line;
    if (previous == ".nf" && line == "\\f[C]") in_code = true;
    out += line + "\n";
    previous = line;
  }
  return out;
}

// Every character outside ASCII as the roff escape \[uXXXX] (docs/cli.md has "−", "→", "–"):
// the page then reads the same under any formatter and locale, with or without preconv.
std::string ascii_roff(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const size_t length = byte < 0x80    ? 1
                          : byte >= 0xF0 ? 4
                          : byte >= 0xE0 ? 3
                          : byte >= 0xC0 ? 2
                                         : 0;
    if (length == 1) {
      out += text[i++];
      continue;
    }
    uint32_t code = length == 0 ? 0 : byte & (0xFF >> (length + 1));
    bool valid = length != 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      valid = (next & 0xC0) == 0x80;
      code = (code << 6) | (next & 0x3F);
    }
    if (!valid) throw IoError("docs/cli.md: a byte that is not UTF-8 in the text of a man page");
    char escape[16];
    std::snprintf(escape, sizeof escape, "\\[u%04X]", static_cast<unsigned>(code));
    out += escape;
    i += length;
  }
  return out;
}

std::string page_name(const std::vector<std::string>& path) {
  return path.empty() ? "replaygate" : "replaygate-" + join(path, "-");
}

std::string man_page(const Command& command, const CliDoc& doc, const CLI::Formatter& formatter) {
  const CLI::App* app = command.app;
  const std::string name = page_name(command.path);
  const std::string words = join(command.path, " ");
  std::string upper;
  for (char c : name) upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  std::ostringstream out;
  out << ".\\\" Generated by replaygate_docgen (tools/docgen.cc) from the CLI's definition and\n"
         ".\\\" docs/cli.md: edit those, not this file.\n";
  out << ".TH \"" << roff(upper)
      << "\" \"1\" \"\" \"replaygate " RG_VERSION "\" \"replaygate manual\"\n";
  // The description's first line is the summary (the program's first line names the program).
  std::string summary = app->get_description();
  summary = summary.substr(0, summary.find('\n'));
  const size_t colon = summary.find(": ");
  if (command.path.empty() && colon != std::string::npos) summary = summary.substr(colon + 2);
  while (!summary.empty() && summary.back() == '.') summary.pop_back();
  out << ".SH NAME\n" << roff(name) << " \\- " << roff(summary) << "\n";

  std::string usage =
      formatter.make_usage(app, command.path.empty() ? "replaygate" : "replaygate " + words);
  usage = trim(usage.substr(usage.find(':') + 1));
  out << ".SH SYNOPSIS\n.nf\n" << roff(usage) << "\n.fi\n";

  out << ".SH DESCRIPTION\n";
  // The program's description is NAME's summary and EXIT STATUS's codes: its page starts with
  // docs/cli.md's introduction.
  if (!command.path.empty()) out << roff(unwrap(app->get_description())) << ".\n";
  const std::string footer = trim(app->get_footer());
  if (!footer.empty()) out << ".PP\n" << roff(unwrap(footer)) << "\n";
  if (const std::string* section = section_for(doc, command.path)) {
    out << markdown_to_roff(*section);
  }

  const std::vector<const CLI::App*> subs = app->get_subcommands({});
  if (!subs.empty()) {
    out << ".SH COMMANDS\n";
    for (const CLI::App* sub : subs) {
      std::vector<std::string> sub_path = command.path;
      sub_path.push_back(sub->get_name());
      out << ".TP\n\\fB" << roff(sub->get_name()) << "\\fR\n"
          << roff(unwrap(sub->get_description())) << "; see \\fB" << roff(page_name(sub_path))
          << "\\fR(1).\n";
    }
  }

  // The option lines are CLI11's own --help text for each option: name, type, REQUIRED,
  // needs/excludes, then the description.
  const auto write_options = [&](const char* title, bool positional) {
    const std::vector<const CLI::Option*> options =
        app->get_options([&](const CLI::Option* option) {
          return !option->get_group().empty() && option->nonpositional() != positional;
        });
    if (options.empty()) return;
    out << ".SH " << title << "\n";
    for (const CLI::Option* option : options) {
      out << ".TP\n\\fB" << roff(formatter.make_option_name(option, positional)) << "\\fR"
          << roff(formatter.make_option_opts(option)) << "\n"
          << roff(unwrap(formatter.make_option_desc(option))) << "\n";
    }
  };
  write_options("ARGUMENTS", true);
  write_options("OPTIONS", false);

  // The exit codes every command shares, as the program's --help states them (its description
  // after the first line).
  const CLI::App* root = app;
  while (root->get_parent() != nullptr) root = root->get_parent();
  const std::string codes = root->get_description();
  out << ".SH EXIT STATUS\n"
      << roff(unwrap(codes.substr(codes.find('\n') + 1)))
      << (command.path.empty() ? ""
                               : " A command's own codes, where it has more, are in its "
                                 "DESCRIPTION.")
      << "\n";
  out << ".SH SEE ALSO\n";
  std::vector<std::string> see;
  if (!command.path.empty()) see.push_back("\\fBreplaygate\\fR(1)");
  if (command.path.size() > 1) {
    see.push_back("\\fB" + roff(page_name({command.path.begin(), command.path.end() - 1})) +
                  "\\fR(1)");
  }
  out << join(see, ", ") << (see.empty() ? "" : "; ")
      << roff(
             "docs/cli.md, the source of this page's description, and the other guides it "
             "links, installed in share/doc/replaygate/ (/usr/share/doc/replaygate/ from the "
             "Debian package).")
      << "\n";
  return out.str();
}

// A bash word list, single-quoted for a `case` branch's echo.
std::string words_of(const std::vector<std::string>& words) { return "'" + join(words, " ") + "'"; }

// The fixed choices CLI11 shows in a type name ("TEXT:{text,json}"), else none.
std::vector<std::string> choices(const CLI::Option* option) {
  const std::string type = option->get_type_name();
  const size_t open = type.find(":{");
  const size_t close = type.rfind('}');
  std::vector<std::string> out;
  if (open == std::string::npos || close == std::string::npos || close < open) return out;
  std::string list = type.substr(open + 2, close - open - 2);
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    out.push_back(trim(list.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string completion(const std::vector<Command>& commands) {
  std::ostringstream subs_case, options_case, values_case, choices_case;
  for (const Command& command : commands) {
    const std::string key = "'" + join(command.path, " ") + "'";
    std::vector<std::string> subs, options, values;
    for (const CLI::App* sub : command.app->get_subcommands({})) subs.push_back(sub->get_name());
    for (const CLI::Option* option : command.app->get_options({})) {
      if (option->get_group().empty() || !option->nonpositional()) continue;
      std::vector<std::string> names;
      for (const std::string& s : option->get_snames()) names.push_back("-" + s);
      for (const std::string& l : option->get_lnames()) names.push_back("--" + l);
      options.insert(options.end(), names.begin(), names.end());
      if (option->get_items_expected_max() <= 0) continue;
      values.insert(values.end(), names.begin(), names.end());
      const std::vector<std::string> fixed = choices(option);
      if (fixed.empty()) continue;
      for (const std::string& n : names) {
        const std::string prefix = command.path.empty() ? "" : join(command.path, " ") + " ";
        choices_case << "    '" << prefix << n << "') echo " << words_of(fixed) << " ;;\n";
      }
    }
    if (!subs.empty()) subs_case << "    " << key << ") echo " << words_of(subs) << " ;;\n";
    if (!options.empty()) {
      options_case << "    " << key << ") echo " << words_of(options) << " ;;\n";
    }
    if (!values.empty()) {
      values_case << "    " << key << ") echo " << words_of(values) << " ;;\n";
    }
  }
  std::ostringstream out;
  out << R"sh(# bash completion for replaygate: generated by replaygate_docgen (tools/docgen.cc) from the
# CLI's own definition; do not edit. Installed as share/bash-completion/completions/replaygate.
# Completes commands and their actions, options, and the fixed choices of an option's value;
# anything else (files, values) falls back to bash's file name completion.

# The actions of a command path ("" is the program itself).
_replaygate_commands() {
  case "$1" in
)sh" << subs_case.str()
      << R"sh(  esac
}

# The options of a command path.
_replaygate_options() {
  case "$1" in
)sh" << options_case.str()
      << R"sh(  esac
}

# The options of a command path that take a value.
_replaygate_value_options() {
  case "$1" in
)sh" << values_case.str()
      << R"sh(  esac
}

# The fixed choices of an option's value ("PATH OPTION").
_replaygate_choices() {
  case "$1" in
)sh" << choices_case.str()
      << R"sh(  esac
}

_replaygate() {
  local cur=${COMP_WORDS[COMP_CWORD]} path="" word option i skip=0
  # The command path: the words before the cursor that name commands; an option that takes a
  # value skips the next word (bash splits --opt=VALUE into --opt, =, VALUE).
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if ((skip)); then
      skip=0
      [ "$word" = "=" ] && skip=1
      continue
    fi
    case "$word" in
      -*)
        case " $(_replaygate_value_options "$path") " in *" $word "*) skip=1 ;; esac
        continue
        ;;
    esac
    case " $(_replaygate_commands "$path") " in
      *" $word "*) path=${path:+$path }$word ;;
    esac
  done
  # The option whose value is being completed, if any.
  option=""
  if ((COMP_CWORD >= 2)) && [ "${COMP_WORDS[COMP_CWORD - 1]}" = "=" ]; then
    option=${COMP_WORDS[COMP_CWORD - 2]}
  elif ((COMP_CWORD >= 1)) && [ "$cur" != "=" ]; then
    option=${COMP_WORDS[COMP_CWORD - 1]}
  fi
  [ "$cur" = "=" ] && { option=${COMP_WORDS[COMP_CWORD - 1]}; cur=""; }
  if [ -n "$option" ]; then
    case " $(_replaygate_value_options "$path") " in
      *" $option "*)
        local fixed
        fixed=$(_replaygate_choices "${path:+$path }$option")
        COMPREPLY=()
        [ -n "$fixed" ] && mapfile -t COMPREPLY < <(compgen -W "$fixed" -- "$cur")
        return 0
        ;;
    esac
  fi
  if [[ "$cur" == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_replaygate_options "$path")" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -W "$(_replaygate_commands "$path")" -- "$cur")
  fi
  return 0
}
complete -o default -F _replaygate replaygate
)sh";
  return out.str();
}

int generate(const std::string& cli_doc, const std::string& man_dir,
             const std::string& completion_file) {
  CLI::App app;
  const auto runners = build_app(app);
  std::vector<Command> commands;
  collect(&app, {}, commands);
  const CliDoc doc = split_cli_doc(read_file(cli_doc));
  std::error_code error;
  std::filesystem::create_directories(man_dir, error);
  if (error) throw IoError("cannot create " + man_dir + ": " + error.message());
  const CLI::Formatter formatter;
  for (const Command& command : commands) {
    write_file(std::filesystem::path(man_dir) / (page_name(command.path) + ".1"),
               ascii_roff(man_page(command, doc, formatter)));
  }
  const std::filesystem::path completion_path(completion_file);
  if (completion_path.has_parent_path()) {
    std::filesystem::create_directories(completion_path.parent_path(), error);
    if (error) throw IoError("cannot create " + completion_path.parent_path().string());
  }
  write_file(completion_path, completion(commands));
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Writes replaygate's man pages and bash completion from its CLI definition"};
  std::string cli_doc, man_dir, completion_file;
  app.add_option("--cli-doc", cli_doc, "docs/cli.md (the descriptions)")->required();
  app.add_option("--man-dir", man_dir, "Directory for the man pages (section 1)")->required();
  app.add_option("--completion", completion_file, "The bash completion script to write")
      ->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return e.get_exit_code() == 0 ? app.exit(e) : (app.exit(e), kExitUsage);
  }
  try {
    return generate(cli_doc, man_dir, completion_file);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replaygate_docgen: error: %s\n", e.what());
    return kExitUsage;
  }
}
