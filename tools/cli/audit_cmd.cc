// `replaygate audit verify FILE|-`, `replaygate audit result ...` and `replaygate audit repair
// LOG ...`: check the audit trail, append a worker's result entry for a recorded decision, and
// record a break in a log that does not verify (format in audit/audit_log.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "common/escape.h"
#include "tools/cli/audit_signing.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"

namespace replaygate::cli {
namespace {

struct AuditOptions {
  std::string file, format = "text";
  std::string log, outcome, operator_name, reason;
  std::string decision, revision;  // counts, parsed by run_result (options.h)
  bool operator_given = false;
  AuditSignFlags audit_sign;              // audit result: --audit-sign-key, --checkpoint-every
  std::vector<std::string> trusted_keys;  // audit verify: --trusted-key, repeatable
  bool accept_repairs = false;            // audit verify: a repaired log may still be ok
};

// Reads the whole log at `path` ("-": standard input) into *bytes: "" or the cause ("it is a
// directory", strerror).
std::string read_log(const std::string& path, std::string* bytes) {
  // A duplicate of standard input, so that the close() below leaves descriptor 0 alone.
  const int fd = path == "-" ? ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)
                             : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return "it is a directory";
  }
  char chunk[65536];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return std::strerror(error);
    }
    if (n == 0) break;
    bytes->append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return "";
}

int run_verify(const AuditOptions& o) {
  if (o.format != "text" && o.format != "json") {
    std::fprintf(stderr, "replaygate: error: --format must be text or json\n");
    return kExitUsage;
  }
  std::string bytes;
  if (const std::string why = read_log(o.file, &bytes); !why.empty()) {
    if (o.file == "-") {
      std::fprintf(stderr, "replaygate: cannot read the audit log from standard input: %s\n",
                   why.c_str());
    } else {
      std::fprintf(stderr, "replaygate: cannot read audit log %s: %s\n", o.file.c_str(),
                   why.c_str());
    }
    return kExitUsage;
  }
  // What each line of the text report starts with.
  const std::string file = o.file == "-" ? std::string("standard input") : o.file;
  const audit::VerifyReport report = audit::verify_bytes(bytes);
  // With pinned keys, what the signed checkpoints vouch for (audit/checkpoint.h).
  const bool signed_check = !o.trusted_keys.empty();
  audit::Coverage coverage;
  std::vector<verify::PublicKey> keys;
  if (signed_check) {
    for (const std::string& path : o.trusted_keys) {
      keys.emplace_back();
      if (std::string error; !verify::read_public_key(path, &keys.back(), &error)) {
        std::fprintf(stderr, "replaygate: error: --trusted-key: %s\n",
                     escape_control(error).c_str());
        return kExitUsage;
      }
    }
    coverage = audit::check_checkpoints(report, keys);
  }
  // A repaired region is never "ok" by itself: the caller accepts the repairs explicitly.
  const bool repairs_pending = !report.repairs.empty() && !o.accept_repairs;
  const bool ok = report.ok() && coverage.problems.empty() && !repairs_pending;
  std::string text;
  if (o.format == "json") {
    nlohmann::json j;
    j["ok"] = ok;
    j["entries"] = report.entries;
    j["decisions"] = report.decisions;
    j["results"] = report.results;
    j["ledger"] = report.ledger;
    j["checkpoints"] = report.checkpoint_entries;
    if (signed_check) {
      j["signed"] = {{"valid_checkpoints", coverage.valid},
                     {"covered_line", coverage.covered_line},
                     {"covered_entries", coverage.covered_entries},
                     {"uncovered_entries", coverage.uncovered_entries},
                     {"key", coverage.covered_key},
                     {"time", coverage.covered_time},
                     {"problems", coverage.problems}};
    }
    j["torn_tail"] = report.torn_tail;
    j["torn_bytes"] = report.torn_bytes;
    j["unterminated"] = report.unterminated;
    j["trailing_empty_lines"] = report.trailing_empty_lines;
    j["last_hash"] = report.last_hash;
    j["problems"] = report.problems;
    j["repairs"] = nlohmann::json::array();
    for (const audit::RepairSeen& repair : report.repairs) {
      const audit::CheckpointSeen* before = audit::checkpoint_before(report, repair.line);
      j["repairs"].push_back(
          {{"line", repair.line},
           {"operator", repair.operator_name},
           {"time", repair.time},
           {"reason", repair.reason},
           {"problems", repair.problems},
           {"checkpoint_before",
            before == nullptr ? nlohmann::json() : nlohmann::json(before->line)},
           {"checkpoint_before_text", audit::describe_checkpoint_before(report, repair, keys)}});
    }
    j["repairs_accepted"] = o.accept_repairs;
    j["appendable"] = report.append_refusal.empty();
    j["append_refusal"] = report.append_refusal;
    text = j.dump() + "\n";
  } else {
    // What each repair entry acknowledges: kept in the file, reported, no longer a problem.
    for (const audit::RepairSeen& repair : report.repairs) {
      text += file + ": line " + std::to_string(repair.line) + ": repair entry by " +
              escape_control(repair.operator_name) + " at " + repair.time + " ('" +
              escape_control(repair.reason) + "'): it acknowledges " +
              plural(repair.problems.size(), "problem") +
              " on the lines before it, which are kept as they are" +
              (repair.problems.empty() ? "" : ":") + "\n";
      for (const std::string& p : repair.problems) text += file + ":   " + p + " (repaired)\n";
      text += file + ":   " + audit::describe_checkpoint_before(report, repair, keys) + "\n";
    }
    if (repairs_pending) {
      text += file + ": the log holds " + plural(report.repairs.size(), "repair") +
              ": a repaired region is not ok until you have checked it and accept it "
              "(--accept-repairs)\n";
    }
    for (const std::string& p : report.problems) text += file + ": " + p + "\n";
    for (const std::string& p : coverage.problems) text += file + ": " + p + "\n";
    if (signed_check && coverage.valid > 0) {
      text += file + ": lines 1-" + std::to_string(coverage.covered_line) + " (" +
              plural(coverage.covered_entries, "entry", "entries") +
              ") are covered by the signed checkpoint on line " +
              std::to_string(coverage.covered_line) + " (" + coverage.covered_time + ", key " +
              escape_control(coverage.covered_key) + ")" +
              (coverage.uncovered_entries == 0
                   ? std::string(": every entry")
                   : "; the " + plural(coverage.uncovered_entries, "entry", "entries") +
                         " after it are not") +
              "\n";
    } else if (!signed_check && report.checkpoint_entries > 0) {
      text += file + ": " + plural(report.checkpoint_entries, "checkpoint") +
              ": their digests match, their signatures were not checked (give --trusted-key "
              "P.pub)\n";
    }
    // Which append removes what appends remove: the next one, or (when appends refuse this log)
    // the first one after the repair.
    const std::string remover = report.append_refusal.empty()
                                    ? "the next append"
                                    : "the first append after the repair below";
    if (report.blank_lines > 0 && report.problems.size() == report.blank_lines) {
      text += file +
              ": apart from the empty lines, every entry and the hash chain check out: deleting "
              "them repairs the log\n";
    }
    if (report.trailing_empty_lines > 0) {
      text += file + ": " + plural(report.trailing_empty_lines, "empty line") +
              " after the last entry: tolerated (no entry is missing or changed); " + remover +
              " removes " + (report.trailing_empty_lines == 1 ? "it" : "them") + "\n";
    }
    if (report.torn_tail) {
      text += file + ": torn last line (" + plural(report.torn_bytes, "byte") +
              " without a newline): an append that crashed before completing; it was never "
              "acknowledged, and " +
              remover + " removes it (and shows its bytes)\n";
    }
    if (report.unterminated) {
      text += file +
              ": the last line has no newline and is not a torn line (above): nothing removes it, "
              "and neither an append nor 'audit repair' continues the log after it\n";
    }
    if (!report.append_refusal.empty()) {
      text += file + ": the next append (audit result, review --confirm, decide --audit) will " +
              "refuse this log and write nothing: " + report.append_refusal + "\n";
    }
    text +=
        file + ": " + (ok ? (report.repairs.empty() ? "ok" : "ok (repairs accepted)") : "BROKEN") +
        ", " + plural(report.entries, "entry", "entries") + " (" +
        plural(report.decisions, "decision") + ", " + plural(report.results, "result") +
        (report.repairs.empty() ? "" : ", " + plural(report.repairs.size(), "repair")) +
        (report.ledger == 0 ? "" : ", " + plural(report.ledger, "ledger entry", "ledger entries")) +
        (report.checkpoint_entries == 0 ? ""
                                        : ", " + plural(report.checkpoint_entries, "checkpoint")) +
        "), last hash " + report.last_hash + "\n";
  }
  if (!print_to_stdout(text, "the report")) return kExitUsage;
  return ok ? kExitOk : kExitFindings;
}

int run_result(const AuditOptions& o) {
  constexpr uint64_t kNoMax = std::numeric_limits<int64_t>::max();
  const CountOption decision_option{"--decision", 1, kNoMax, ""};
  const CountOption revision_option{"--revision", 0, kNoMax, ""};
  // Parses one count option; false (with the usage message) when its value is not a count.
  const auto count = [](const CountOption& option, const std::string& text, uint64_t* value) {
    if (parse_count(option, text, value)) return true;
    std::fprintf(stderr, "replaygate: error: %s\nRun 'replaygate audit result --help' for usage.\n",
                 count_error(option, text).c_str());
    return false;
  };
  if (o.operator_given) {
    if (const std::string why = operator_error(o.operator_name); !why.empty()) {
      std::fprintf(stderr,
                   "replaygate: error: %s\nRun 'replaygate audit result --help' for usage.\n",
                   why.c_str());
      return kExitUsage;
    }
  }
  uint64_t decision = 0, revision = 0;
  if (!count(decision_option, o.decision, &decision) ||
      !count(revision_option, o.revision, &revision)) {
    return kExitUsage;
  }
  AuditSigning signing;
  if (!read_audit_signing(o.audit_sign, "audit result", &signing)) return kExitUsage;
  audit::ResultEntry entry;
  entry.decision = decision;
  entry.revision = revision;
  entry.outcome = o.outcome;
  if (o.operator_given) entry.operator_name = o.operator_name;
  const audit::AppendResult appended =
      audit::append(o.log, audit::to_json(entry), decision, signing.get());
  std::fputs(audit::removed_tail_note(o.log, appended).c_str(), stderr);
  if (!appended.ok) {
    std::fprintf(stderr, "replaygate: %s\nreplaygate: the result was NOT recorded\n",
                 appended.error.c_str());
    return kExitUsage;
  }
  std::printf("recorded result entry %llu for decision %llu (hash %s)\n",
              static_cast<unsigned long long>(appended.seq),
              static_cast<unsigned long long>(decision), appended.hash.c_str());
  return std::fflush(stdout) == 0 ? kExitOk : kExitUsage;
}

int run_repair(const AuditOptions& o) {
  const auto usage = [](const std::string& why) {
    std::fprintf(stderr, "replaygate: error: %s\nRun 'replaygate audit repair --help' for usage.\n",
                 why.c_str());
    return kExitUsage;
  };
  if (const std::string why = operator_error(o.operator_name); !why.empty()) return usage(why);
  if (const std::string why = operator_name_problem(o.reason); !why.empty()) {
    return usage("--reason " + why +
                 ": why the log was repaired is recorded in the audit log and must be printable "
                 "text on one line (e.g. --reason 'line 2 edited by hand; no copy')");
  }
  const audit::AppendResult repaired = audit::repair(o.file, o.operator_name, o.reason);
  std::fputs(audit::removed_tail_note(o.file, repaired).c_str(), stderr);
  if (!repaired.ok) {
    std::fprintf(stderr, "replaygate: %s\nreplaygate: the repair was NOT recorded\n",
                 repaired.error.c_str());
    return kExitUsage;
  }
  std::string text;
  for (const std::string& p : repaired.acknowledged) text += o.file + ": " + p + "\n";
  text += "recorded repair entry " + std::to_string(repaired.seq) + " in " + o.file + " (hash " +
          repaired.hash + "): it acknowledges " + plural(repaired.acknowledged.size(), "problem") +
          " (above) on the lines before it, which are kept as they are; appends continue after "
          "it\n";
  return print_to_stdout(text, "the report") ? kExitOk : kExitUsage;
}

}  // namespace

Runner setup_audit(CLI::App& sub) {
  auto o = std::make_shared<AuditOptions>();
  sub.require_subcommand(1);
  sub.footer(
      "The audit trail of reviewed decisions (JSON Lines with a hash chain, docs/recovery.md).\n"
      "Exit: 0 ok, 1 a broken log (verify), 2 usage/I/O errors or a failed append or repair.");
  CLI::App* verify = sub.add_subcommand("verify", "Check every line, the seq order and the chain");
  verify->add_option("FILE", o->file, "Audit log, or - for standard input (a copy, a pipe)")
      ->required();
  verify->add_option("--format", o->format, "text (default) or json");
  verify
      ->add_option("--trusted-key", o->trusted_keys,
                   "A public key file whose signed checkpoints vouch for the log (repeatable, for "
                   "rotation): a rewritten log, or entries no checkpoint covers, is then a finding")
      ->allow_extra_args(false);
  verify->add_flag("--accept-repairs", o->accept_repairs,
                   "Accept the log's repair entries (checked by you): without it a log that holds "
                   "a repair is a finding (exit 1)");
  CLI::App* result =
      sub.add_subcommand("result", "Append a worker's result entry for a recorded decision");
  result->add_option("--log", o->log, "Audit log")->required();
  result->add_option("--decision", o->decision, "Seq of the decision entry (1 or more)")
      ->required();
  result->add_option("--revision", o->revision, "The operation record's new local revision (>= 0)")
      ->required();
  result->add_option("--outcome", o->outcome, "What happened, e.g. succeeded, failed: ...")
      ->required()
      ->check(CLI::Validator(
          [](std::string& text) {
            return text.find_first_not_of(" \t") == std::string::npos
                       ? std::string("must say what happened (it is empty)")
                       : std::string();
          },
          "TEXT"));
  CLI::Option* operator_option =
      result->add_option("--operator", o->operator_name, "Who or what carried the action out");
  add_audit_sign_options(*result, &o->audit_sign);
  CLI::App* repair = sub.add_subcommand(
      "repair",
      "Record a break in a log that does not verify (a repair entry; every line is kept), so "
      "that appends continue it");
  repair->add_option("LOG", o->file, "Audit log")->required();
  repair->add_option("--operator", o->operator_name, "Who repairs the log")->required();
  repair->add_option("--reason", o->reason, "Why, e.g. what broke the log and what was checked")
      ->required();
  return [o, verify, result, repair, operator_option] {
    o->operator_given = operator_option->count() > 0;
    if (verify->parsed()) return run_verify(*o);
    if (result->parsed()) return run_result(*o);
    if (repair->parsed()) return run_repair(*o);
    return kExitUsage;
  };
}

}  // namespace replaygate::cli
