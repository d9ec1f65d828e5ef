// `replaygate decide`: decide every record of a dead-letter dump, one JSON line out per line in.
// This file is the command's options, checks and messages; the records go through the dump
// pipeline's stream driver (pipeline/stream.h) into standard output.
//
// Streams: one capped line in memory at a time, output in 1 MiB blocks, and the idempotency keys
// granted a replay (an exact set of their hashes, then a filter: pipeline/replay_guard.h), whose
// memory grows with the keys up to --replayed-keys-memory and never past it. Dump semantics on top
// of the policy (docs/cli.md), which only ever turn a create-effect verb into the default:
//   * within one run only the first record with a given idempotency key may get a create verb;
//     a later one whose key is in the filter gets the default, rule "dump:maybe_duplicate" (a
//     filter can also match a key it never saw: rarely, and only ever as a hold);
//   * --max-replays N: create verbs after the first N get the default, rule "dump:replay_budget";
//   * --max-replayed-keys N: once N keys were replayed, a create verb for a new key gets the
//     default, rule "dump:key_limit".
//
// The record format is --input-format (inputs/formats.h; --format is its old name).
// --show-inputs adds to each line what each policy input received (pipeline/decision_line.h's
// InputsText); without it the lines are as they were.
//
// --threads N (N > 1) reads and decides blocks of records on N worker threads
// (pipeline/read_pool.h) while this thread reads the input and does stage 2 (the dump rules, the
// ledger's claims, the audit, the lines) in input order, exactly as without them: the output, the
// claims, the audit log and the exit code are the same bytes for every N.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/escape.h"
#include "inputs/formats.h"
#include "inputs/letters.h"
#include "inputs/records.h"
#include "pipeline/audit_stage.h"
#include "pipeline/gate.h"
#include "pipeline/ledger_stage.h"
#include "pipeline/memory_limit.h"
#include "pipeline/read_pool.h"
#include "pipeline/replay_guard.h"
#include "pipeline/stream.h"
#include "review/sensitive.h"
#include "runtime/table.h"
#include "runtime/trace.h"
#include "tools/cli/audit_signing.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/plan_run.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {

using inputs::choose_input_format;
using inputs::input_formats;
using inputs::InputFormat;
using inputs::InputFormatOptions;
using inputs::not_from_letters;
using inputs::RecordParser;
using pipeline::memory_option_error;
using pipeline::ReplayGuard;

namespace {

// Records per block with --ledger: each block's claims are one durable transaction (one fsync or
// COMMIT), then its lines are audited, marked and written. Random keys dirty about one page of the
// ledger's key index per claim unless a block holds many claims per index page, so bigger blocks
// write less: 16384 letters (~4 MiB of output) measured 26% faster than 4096 on SQLite, 65536
// faster still but at 200 MB of memory (docs/ledger.md, "Throughput").
constexpr size_t kLedgerBlockRecords = 16384;

struct DecideOptions {
  TrustFlags trust;
  AuditSignFlags audit_sign;  // --audit-sign-key, --checkpoint-every (with --audit)
  std::string policy;
  std::string table;
  std::string input = "-";
  InputFormatOptions format;     // --input-format, its alias --format, --mapping
  bool show_inputs = false;      // --show-inputs: each line says what each policy input received
  std::string max_replays;       // a decimal count, when given
  bool max_replays_set = false;  // --max-replays was on the command line (even as "")
  std::string max_keys;          // --max-replayed-keys, a decimal count, when given
  bool max_keys_set = false;
  std::string filter_mib;  // --replayed-keys-memory, whole MiB, when given
  bool filter_mib_set = false;
  std::string dedupe_field;       // when not given: idempotency_key, if the policy has it
  bool dedupe_field_set = false;  // given, even as '' (which then names no input: exit 2)
  std::string audit;              // --audit FILE: append every decision to this audit log
  std::string operator_name;      // --operator NAME, required with --audit
  bool operator_set = false;      // --operator was on the command line (even as "")
  std::string ledger;             // --ledger URL: the durable replay ledger (docs/ledger.md)
  std::string ledger_scope;       // --ledger-scope S (default "default")
  bool ledger_scope_set = false;
  size_t ledger_block = kLedgerBlockRecords;  // --ledger-block N: records per claim transaction
  bool ledger_block_set = false;
  bool dry_run = false;  // --dry-run: consult the ledger, claim nothing
  std::string threads;   // --threads N|auto, when given
  bool threads_set = false;
  std::string plan;   // --plan PLAN: act on the plan's letters only (plan_run.cc)
  std::string users;  // --users FILE: with --plan, the approvers and their keys
};

// --max-replayed-keys above this is refused (the limit of the exact set it was first written for;
// it keeps a typo such as 10000000000 from reading as "no cap").
constexpr uint64_t kMaxKeysLimit = uint64_t{1} << 32;
// --replayed-keys-memory above this (MiB) is refused: 64 GiB, half the largest split block
// filter Parquet's 32-bit block index can address.
constexpr uint64_t kMaxFilterMiB = uint64_t{1} << 16;
// Records decided ahead of the dump rules (a batch of the stream driver, pipeline/stream.h): enough
// that a filter block prefetched in stage 1 has arrived by stage 2 (~300 ns a record), few enough
// to stay in L1.
constexpr size_t kBatchRecords = 16;

// A probability for the summary: "0", or two significant digits ("3.3e-08").
std::string format_rate(double rate) {
  if (rate <= 0) return "0";
  char text[32];
  std::snprintf(text, sizeof text, "%.1e", rate);
  return text;
}

// Says why the decisions could not all be written and what the output holds: the complete lines
// of the first `printed` records (BlockWriter cut back a partial line where it could).
void report_write_failure(const BlockWriter& out, uint64_t printed) {
  std::fprintf(stderr, "replaygate: cannot write decisions to %s: %s\n",
               describe_stream(STDOUT_FILENO, "standard output").c_str(),
               std::strerror(out.error_number()));
  std::fprintf(stderr, "replaygate: the output holds the decisions for the first %s only%s\n",
               plural(printed, "record").c_str(),
               out.partial_line_left()
                   ? ", then part of the next line (it cannot be cut back: not a regular file, or "
                     "the cut would reach bytes that were there before)"
                   : "");
}

int usage(const std::string& message) {
  std::fprintf(stderr, "replaygate decide: error: %s\nRun 'replaygate decide --help' for usage.\n",
               message.c_str());
  return kExitUsage;
}

// --threads: a count from 1 to ReadPool::kMaxThreads, or `auto` (the online CPUs, at most that
// cap). False for anything else.
bool parse_threads(const std::string& text, size_t* threads) {
  constexpr size_t kMax = pipeline::ReadPool::kMaxThreads;
  if (text == "auto") {
    const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
    *threads = online < 1 ? 1 : std::min(static_cast<size_t>(online), kMax);
    return true;
  }
  uint64_t count = 0;
  if (!parse_count(CountOption{"--threads", 1, kMax, ""}, text, &count)) return false;
  *threads = static_cast<size_t>(count);
  return true;
}

// The numbers the options give, checked.
struct DecideLimits {
  const InputFormat* format = nullptr;
  int64_t max_replays = -1;  // -1: no budget
  uint64_t max_keys = ReplayGuard::kDefaultMaxKeys;
  size_t threads = 1;
  uint64_t filter_mib = ReplayGuard::kDefaultFilterMiB;
};

// The options on their own, before anything is opened: kExitOk, or the usage error's exit code
// (the message printed).
int check_options(const DecideOptions& o, AuditSigning* signing, DecideLimits* limits) {
  if (o.policy.empty() == o.table.empty()) {
    return usage("give exactly one of --policy POLICY.yaml or --table TABLE.rgt");
  }
  if (!o.audit.empty() && !o.operator_set) {
    return usage("--audit needs --operator NAME (who takes these decisions)");
  }
  if (o.audit.empty() && o.operator_set) {
    return usage("--operator only applies with --audit FILE");
  }
  if (o.audit.empty() && (!o.audit_sign.key_path.empty() || !o.audit_sign.every.empty())) {
    return usage("--audit-sign-key and --checkpoint-every only apply with --audit FILE");
  }
  if (!read_audit_signing(o.audit_sign, "decide", signing)) return kExitUsage;
  // Given but empty says "--operator is empty", as for review and audit result.
  if (const std::string why = operator_error(o.operator_name); !o.audit.empty() && !why.empty()) {
    return usage(why);
  }
  if (o.ledger.empty() && (o.ledger_scope_set || o.dry_run || o.ledger_block_set)) {
    return usage(std::string(o.dry_run            ? "--dry-run"
                             : o.ledger_block_set ? "--ledger-block"
                                                  : "--ledger-scope") +
                 " only applies with --ledger LEDGER");
  }
  std::string format_error;
  limits->format = choose_input_format(o.format, &format_error);
  if (limits->format == nullptr) return usage(format_error);
  if (o.show_inputs && o.policy.empty()) {
    return usage(
        "--show-inputs needs --policy POLICY: a compiled table does not keep the policy's "
        "sensitive list, so decide could not tell which values to redact");
  }
  constexpr uint64_t kNoMax = std::numeric_limits<int64_t>::max();
  const CountOption replays_option{"--max-replays", 0, kNoMax, ""};
  const CountOption keys_option{"--max-replayed-keys", 0, kMaxKeysLimit, ""};
  const CountOption memory_option{"--replayed-keys-memory", 1, kMaxFilterMiB, "MiB"};
  uint64_t count = 0;
  if (o.max_replays_set) {
    if (!parse_count(replays_option, o.max_replays, &count)) {
      return usage(count_error(replays_option, o.max_replays));
    }
    limits->max_replays = static_cast<int64_t>(count);
  }
  if (o.max_keys_set && !parse_count(keys_option, o.max_keys, &limits->max_keys)) {
    return usage(count_error(keys_option, o.max_keys));
  }
  if (o.threads_set && !parse_threads(o.threads, &limits->threads)) {
    return usage("--threads takes a whole number from 1 to " +
                 std::to_string(pipeline::ReadPool::kMaxThreads) +
                 " (decimal) or auto (one per online CPU), not '" + escape_control(o.threads) +
                 "'");
  }
  if (o.filter_mib_set && !parse_count(memory_option, o.filter_mib, &limits->filter_mib)) {
    return usage(count_error(memory_option, o.filter_mib));
  }
  // A cap the machine cannot give would fail (or be OOM-killed) in the middle of the dump.
  if (const std::string why = memory_option_error(memory_option.name, limits->filter_mib);
      !why.empty()) {
    return usage(why);
  }
  return kExitOk;
}

// Standard output and the audit log against the inputs, before anything is read: kExitOk, or 2
// (the message printed).
int check_outputs(const DecideOptions& o) {
  // Standard output must be open for writing before anything is decided (and before anything is
  // opened: open() would reuse a closed descriptor 1). Otherwise --audit would record decisions
  // that no one can print.
  if (const std::string why = stdout_unwritable(); !why.empty()) {
    std::fprintf(stderr,
                 "replaygate: cannot write decisions to standard output: %s; no record decided\n",
                 why.c_str());
    return kExitUsage;
  }
  const std::vector<InputFile> inputs = {{o.input, "the input file"},
                                         {o.policy, "the policy file"},
                                         {o.table, "the table file"},
                                         {o.format.mapping, "the mapping file"}};
  // `decide IN >> IN` would read its own decisions back (as invalid records) without end.
  if (const std::string same = stdout_is_input(inputs); !same.empty()) {
    std::fprintf(stderr,
                 "replaygate: error: %s (input file is output file: decide would read its own "
                 "decisions back); redirect standard output to another file; no record decided\n",
                 same.c_str());
    return kExitUsage;
  }
  if (o.audit.empty()) return kExitOk;
  // An append would first take the dump's unterminated last line for a torn entry, then write
  // entries into the very file being decided.
  struct stat log {};
  struct stat out {};
  if (::stat(o.audit.c_str(), &log) != 0) return kExitOk;
  if (const InputFile* same = same_file_as(log, inputs); same != nullptr) {
    return usage(
        "--audit " + o.audit + " is " +
        (same->path == "-" ? std::string("standard input") : same->what + " " + same->path) +
        " itself; the audit log is a file of its own (e.g. audit.log)");
  }
  if (S_ISREG(log.st_mode) && ::fstat(STDOUT_FILENO, &out) == 0 && out.st_dev == log.st_dev &&
      out.st_ino == log.st_ino) {
    return usage("--audit " + o.audit +
                 " is standard output too; the audit log is a file of its own (e.g. "
                 "audit.log): redirect the decisions elsewhere");
  }
  return kExitOk;
}

// The input the replay guard keys on: --dedupe-field, else the input the policy declares
// (`idempotency_key: true`), else, for tables compiled before the declaration existed, an input
// named idempotency_key. *field is Table::kNoField when there is none (a note says so). Returns
// kExitOk, or 2 for a --dedupe-field that names no string input letters set.
int choose_key(const DecideOptions& o, const Table& table, uint32_t* field) {
  // The one-replay-per-key rule keys on a string input. A misspelled --dedupe-field must not
  // silently turn the protection off, so an explicit name has to be a string input.
  std::vector<std::string> string_inputs;
  for (uint32_t f = 0; f < table.field_count(); ++f) {
    if (table.field(f).type == FieldType::kString) string_inputs.emplace_back(table.field(f).name);
  }
  const uint32_t declared_key = table.idempotency_key_field();
  uint32_t dedupe_field = o.dedupe_field_set                ? table.field_index(o.dedupe_field)
                          : declared_key != Table::kNoField ? declared_key
                                                            : table.field_index("idempotency_key");
  if (dedupe_field != Table::kNoField && table.field(dedupe_field).type != FieldType::kString) {
    dedupe_field = Table::kNoField;
  }
  if (o.dedupe_field_set && dedupe_field == Table::kNoField) {
    std::string message =
        "--dedupe-field '" + o.dedupe_field + "' is not a string input of the policy";
    const std::string suggestion = closest_match(o.dedupe_field, string_inputs);
    if (!suggestion.empty()) message += "; did you mean '" + suggestion + "'?";
    return usage(message);
  }
  // Nor may a field no letter supplies (letters.h): it is unset in every letter, so no key would
  // ever count as replayed.
  if (const std::string why = not_from_letters(table, dedupe_field); !why.empty()) {
    const std::string what =
        o.dedupe_field_set ? "--dedupe-field '" + o.dedupe_field + "'"
        : declared_key != Table::kNoField
            ? "the policy's idempotency key '" + std::string(table.field(dedupe_field).name) + "'"
            : std::string("the policy's idempotency_key");
    std::string settable;  // the string inputs letters do set
    for (const std::string& name : string_inputs) {
      if (not_from_letters(table, table.field_index(name)).empty()) {
        settable += (settable.empty() ? " (" : ", ") + name;
      }
    }
    const std::string problem =
        what + " " + why + ": no letter supplies it, so no key would count as replayed and " +
        "every letter could be replayed; name a string input that letters set" +
        (settable.empty() ? std::string() : settable + ")");
    if (o.dedupe_field_set) return usage(problem);
    std::fprintf(stderr, "replaygate: note: %s (--dedupe-field)\n", problem.c_str());
    dedupe_field = Table::kNoField;
  } else if (dedupe_field == Table::kNoField) {
    std::fprintf(stderr,
                 "replaygate: note: the policy declares no idempotency key and has no string "
                 "input 'idempotency_key'; every letter may be replayed (declare one with "
                 "'idempotency_key: true', or name one with --dedupe-field)\n");
  }
  *field = dedupe_field;
  return kExitOk;
}

// With --ledger, a create verb the replay guard lets through is claimed in the ledger before its
// line is rendered (pipeline/ledger_stage.h); when the ledger cannot be opened or written, every
// would-be replay is held (ledger:unavailable) and the run exits 2.
std::unique_ptr<pipeline::LedgerStage> open_ledger(const DecideOptions& o, uint32_t dedupe_field) {
  pipeline::LedgerStage::Options lo;
  lo.url = o.ledger;
  if (o.ledger_scope_set) lo.scope = o.ledger_scope;
  lo.dry_run = o.dry_run;
  lo.mark_recorded = !o.audit.empty();
  auto stage = std::make_unique<pipeline::LedgerStage>(std::move(lo));
  if (!stage->open()) {
    std::fprintf(stderr,
                 "replaygate: error: %s; every would-be replay is held (rule ledger:unavailable)\n",
                 stage->failure().c_str());
  } else if (dedupe_field == Table::kNoField) {
    std::fprintf(stderr,
                 "replaygate: note: with --ledger and no idempotency key field, no letter is "
                 "replayed (rule ledger:no_key); name one with --dedupe-field\n");
  }
  return stage;
}

// --threads: the pool's options for input `fd` (ReadPool::for_input), and the test seams.
pipeline::ReadPool::Options pool_options(size_t threads, int fd) {
  pipeline::ReadPool::Options options = pipeline::ReadPool::for_input(threads, fd);
  // Test-only seams: records per block (without --ledger), so that the tests cross block
  // boundaries with small dumps; the source thread on (1) or off (0) whatever the cores.
  if (const char* seam = std::getenv("REPLAYGATE_TEST_THREAD_BLOCK"); seam != nullptr) {
    uint64_t records = 0;
    if (parse_count(CountOption{"REPLAYGATE_TEST_THREAD_BLOCK", 1, 1 << 20, ""}, seam, &records)) {
      options.block_records = static_cast<size_t>(records);
    }
  }
  struct stat input {};
  if (const char* seam = std::getenv("REPLAYGATE_TEST_SOURCE_THREAD"); seam != nullptr) {
    options.source_thread =
        std::string_view(seam) == "1" && ::fstat(fd, &input) == 0 && S_ISREG(input.st_mode);
  }
  return options;
}

// The decision lines go to standard output through a BlockWriter.
class WriterSink final : public pipeline::Sink {
 public:
  explicit WriterSink(BlockWriter& out) : Sink(BlockWriter::kBlockBytes), out_(out) {}
  ByteBuffer& buffer() override { return out_.buffer(); }
  bool flush() override { return out_.flush(); }
  bool ok() const override { return out_.ok(); }

 private:
  BlockWriter& out_;
};

// A write failed: says what the output holds (the first `kept` records) and which decisions are
// in the audit log but were never printed.
void report_unprinted(const BlockWriter& out, uint64_t kept, const pipeline::AuditStage* audit,
                      const std::string& audit_path) {
  report_write_failure(out, kept);
  const uint64_t audited_records = audit != nullptr ? audit->recorded() : 0;
  const uint64_t last_audit_seq = audit != nullptr ? audit->last_seq() : 0;
  if (audited_records <= kept) return;
  // Logged before printing, as they must be, but never printed: say exactly which.
  const uint64_t first_seq = last_audit_seq - (audited_records - kept) + 1;
  if (audited_records == kept + 1) {
    std::fprintf(stderr,
                 "replaygate: the decision for record %llu is in the audit log %s (entry %llu) "
                 "but was NOT printed\n",
                 static_cast<unsigned long long>(audited_records), audit_path.c_str(),
                 static_cast<unsigned long long>(last_audit_seq));
  } else {
    std::fprintf(stderr,
                 "replaygate: the decisions for records %llu to %llu are in the audit log %s "
                 "(entries %llu to %llu) but were NOT printed\n",
                 static_cast<unsigned long long>(kept + 1),
                 static_cast<unsigned long long>(audited_records), audit_path.c_str(),
                 static_cast<unsigned long long>(first_seq),
                 static_cast<unsigned long long>(last_audit_seq));
  }
}

// The summary line on stderr, and the warning when the replayed-key filter is too full.
void print_summary(const pipeline::Gate& gate, const ReplayGuard& guard,
                   const pipeline::LedgerStage* ledger, bool dry_run, bool keyed,
                   uint64_t filter_mib) {
  const pipeline::GateCounts& counts = gate.counts();
  const Table& decided = gate.table();
  std::string summary = "summary: " + plural(counts.total, "record");
  for (uint32_t v = 0; v < decided.verb_count(); ++v) {
    summary += ", " + std::string(decided.verb_name(v)) + " " + std::to_string(counts.per_verb[v]);
  }
  summary += "; invalid " + std::to_string(counts.invalid) + ", maybe-duplicate holds " +
             std::to_string(counts.maybe_duplicate_holds) + ", budget holds " +
             std::to_string(counts.budget_holds);
  if (counts.key_limit_holds > 0) {
    summary += ", key-limit holds " + std::to_string(counts.key_limit_holds);
  }
  if (ledger != nullptr) {
    summary += "; ledger " + ledger->describe() + (dry_run ? " (dry run)" : "") + ": claims " +
               std::to_string(ledger->claims()) + ", already replayed " +
               std::to_string(ledger->held()) + ", ledger holds " +
               std::to_string(counts.ledger_holds);
    if (ledger->invalid_keys() > 0) {
      summary += " (invalid keys " + std::to_string(ledger->invalid_keys()) + ")";
    }
  }
  const double rate = guard.false_positive_rate();
  if (keyed) {
    summary += "; replayed keys " + std::to_string(guard.keys()) + " " + guard.memory_text() +
               ", false-positive rate " + format_rate(rate);
  }
  std::fprintf(stderr, "%s\n", summary.c_str());
  if (!keyed || rate <= ReplayGuard::kWarnFalsePositiveRate) return;
  const std::string threshold = format_rate(ReplayGuard::kWarnFalsePositiveRate);
  std::fprintf(
      stderr,
      "replaygate: warning: the %lld MiB replayed-key filter is too full: a new key is now held "
      "as dump:maybe_duplicate by mistake with probability %s (above %s), so some of the %s "
      "may be first occurrences of their key; decide the dump again "
      "with --replayed-keys-memory %llu (keeps the rate under %s for up to %llu keys)\n",
      static_cast<long long>(filter_mib), format_rate(rate).c_str(), threshold.c_str(),
      plural(counts.maybe_duplicate_holds, "maybe-duplicate hold").c_str(),
      static_cast<unsigned long long>(guard.mib_for_rate(ReplayGuard::kWarnFalsePositiveRate)),
      threshold.c_str(), static_cast<unsigned long long>(guard.keys_seen_at_most()));
}

// decide --plan: the plan's own run (plan_run.cc), which takes decide's input options.
int run_plan(const DecideOptions& o) {
  if (o.dry_run || o.threads_set || o.max_replays_set || o.max_keys_set || o.show_inputs ||
      o.dedupe_field_set || !o.audit_sign.key_path.empty()) {
    return usage(
        "--plan runs the plan's letters as planned: --dry-run, --threads, --max-replays, "
        "--max-replayed-keys, --show-inputs, --dedupe-field and --audit-sign-key do not apply "
        "(see the plan with 'replaygate plan show')");
  }
  if (o.audit.empty() || !o.operator_set) {
    return usage("--plan needs --audit LOG and --operator NAME (every act is recorded)");
  }
  if (const std::string why = operator_error(o.operator_name); !why.empty()) return usage(why);
  PlanRunOptions p;
  p.plan = o.plan;
  p.users = o.users;
  p.input = o.input;
  p.policy = o.policy;
  p.table = o.table;
  p.format = o.format;
  p.trust = o.trust;
  p.ledger = o.ledger;
  p.scope = o.ledger_scope_set ? o.ledger_scope : "default";
  p.audit = o.audit;
  p.operator_name = o.operator_name;
  return run_decide_plan(p);
}

int run_decide(const DecideOptions& o) {
  if (!o.plan.empty()) return run_plan(o);
  if (!o.users.empty()) return usage("--users only applies with --plan PLAN");
  AuditSigning signing;
  DecideLimits limits;
  if (const int code = check_options(o, &signing, &limits); code != kExitOk) return code;
  if (const int code = check_outputs(o); code != kExitOk) return code;
  const InputFormat& format = *limits.format;
  const size_t threads = limits.threads;

  std::unique_ptr<Table> table;
  std::vector<std::string> policy_sensitive;
  if (const int code = open_table(o.policy, o.table, &table, &policy_sensitive, &o.trust);
      code != kExitOk) {
    return code;
  }
  uint32_t dedupe_field = Table::kNoField;
  if (const int code = choose_key(o, *table, &dedupe_field); code != kExitOk) return code;
  RecordReading reading;
  if (const int code =
          open_record_parser(format, o.format.mapping, *table, "no record decided", &reading);
      code != kExitOk) {
    return code;
  }
  // --threads: one more parser per reading thread, over the same mapping (checked once, above).
  std::vector<std::unique_ptr<RecordParser>> thread_parsers;
  for (size_t i = 0; threads > 1 && i < threads; ++i) {
    thread_parsers.push_back(format.make_parser(
        *table, reading.mapping != nullptr ? &reading.mapping->mapping : nullptr));
  }
  std::set<std::string> redacted;  // --show-inputs only
  if (o.show_inputs) redacted = review::sensitive_names(policy_sensitive);

  int fd = STDIN_FILENO;
  if (o.input != "-" && (fd = ::open(o.input.c_str(), O_RDONLY | O_CLOEXEC)) < 0) {
    std::fprintf(stderr, "replaygate: cannot open %s: %s\n", o.input.c_str(), std::strerror(errno));
    return kExitUsage;
  }
  const std::string input_name = o.input == "-" ? "standard input" : o.input;
  auto close_input = [fd] {
    if (fd != STDIN_FILENO) ::close(fd);
  };
  std::unique_ptr<ReplayGuard> guard;
  try {
    guard = std::make_unique<ReplayGuard>(limits.max_replays, limits.max_keys,
                                          static_cast<uint64_t>(limits.filter_mib) << 20);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "replaygate: cannot map %lld MiB for the replayed-key filter; give a smaller "
                 "--replayed-keys-memory\n",
                 static_cast<long long>(limits.filter_mib));
    close_input();
    return kExitUsage;
  }
  // The table goes into a SharedTable, which the gate pins for the run (decide never reloads), and
  // with --threads each reading thread's gate too.
  SharedTable shared(std::move(table), std::max<uint32_t>(SharedTable::kDefaultMaxReaders,
                                                          static_cast<uint32_t>(threads + 1)));
  pipeline::Gate::Options gate_options;
  gate_options.dedupe_field = dedupe_field;
  gate_options.show_inputs_redacted = o.show_inputs ? &redacted : nullptr;
  gate_options.batch_records = kBatchRecords;
  if (format.json_array) {
    gate_options.array_pointer_prefix =
        format.array_member.empty() ? "/" : "/" + std::string(format.array_member) + "/";
  }
  std::unique_ptr<pipeline::LedgerStage> ledger_stage;
  if (!o.ledger.empty()) {
    ledger_stage = open_ledger(o, dedupe_field);
    gate_options.claimer = ledger_stage.get();
    gate_options.block_records = o.ledger_block;
  }
  // Stage 2 with --audit or --ledger needs each record's metadata and key: with --threads the
  // judging gate's own parser never sees the record, so every batch keeps them.
  gate_options.keep_records = threads > 1 && (!o.audit.empty() || ledger_stage != nullptr);
  const std::unique_ptr<pipeline::Gate> gate_ptr =
      pipeline::Gate::open(shared, *reading.parser, *guard, gate_options);
  pipeline::Gate& gate = *gate_ptr;  // a new SharedTable has every reader slot free
  // With --audit, a block of decisions is appended (and fsynced) to the audit log before it is
  // printed, so a decision that reaches stdout is always on record; when the append fails the
  // block is dropped unprinted and the run stops (exit 2): no decision is reported as taken.
  std::unique_ptr<pipeline::AuditStage> audit_stage;
  if (!o.audit.empty()) {
    audit_stage = std::make_unique<pipeline::AuditStage>(o.audit, o.operator_name, input_name);
    audit_stage->set_signer(signing.get());
    gate.add_stage(audit_stage.get());
  }
  // After the audit stage: marks the block's claims `recorded` once their entries are written.
  if (ledger_stage != nullptr) gate.add_stage(ledger_stage.get());
  std::unique_ptr<pipeline::ReadPool> pool;
  if (threads > 1) {
    std::string why;
    pool = pipeline::ReadPool::open(shared, gate, *guard, std::move(thread_parsers),
                                    pool_options(threads, fd), &why);
    if (pool == nullptr) {
      std::fprintf(stderr, "replaygate: internal error: cannot start %zu reading threads: %s\n",
                   threads, why.c_str());
      close_input();
      return kExitUsage;
    }
  }

  // One JSON array (rabbitmq) or JSON Lines (the others): either way one capped record at a time.
  pipeline::FileSource source(fd, format.json_array, format.array_member);
  BlockWriter out(STDOUT_FILENO);
  // `decide ... >> FILE` onto a file whose last line is unfinished: the first decision would be
  // glued onto it, and the file would no longer be JSON Lines.
  // (The note is printed once decisions were written: with no records, nothing is.)
  const bool started_mid_line = ends_mid_line(STDOUT_FILENO);
  if (started_mid_line) out.start_on_new_line();
  WriterSink sink(out);
  const pipeline::StreamResult run = pipeline::run_stream(gate, pool.get(), source, sink);
  close_input();
  if (run.failed_stage != nullptr) {
    std::fprintf(stderr,
                 "replaygate: %s\nreplaygate: the decisions not printed above were NOT "
                 "recorded and are not taken; do not act on them\n",
                 run.failed_stage->error().c_str());
  }
  if (run.read_error) {
    std::fprintf(stderr, "replaygate: cannot read %s: %s\n", input_name.c_str(),
                 source.error_text().c_str());
  }
  if (run.failed_stage != nullptr) return kExitUsage;
  const pipeline::GateCounts& counts = gate.counts();
  if (started_mid_line && counts.total > 0) {
    std::fprintf(stderr,
                 "replaygate: note: %s does not end with a newline; the decisions start on a new "
                 "line\n",
                 describe_stream(STDOUT_FILENO, "standard output").c_str());
  }
  if (!run.written) {
    report_unprinted(out, run.flushed + out.failed_block_lines(), audit_stage.get(), o.audit);
    return kExitUsage;
  }
  print_summary(gate, *guard, ledger_stage.get(), o.dry_run, dedupe_field != Table::kNoField,
                limits.filter_mib);
  if (run.read_error) return kExitUsage;
  if (ledger_stage != nullptr && ledger_stage->failed()) {
    std::fprintf(stderr,
                 "replaygate: the replay ledger failed (%s); the letters held as "
                 "ledger:unavailable were not replayed\n",
                 ledger_stage->failure().c_str());
    return kExitUsage;
  }
  // A key the ledger cannot hold is a finding about that record, as an invalid record is.
  const bool invalid_keys = ledger_stage != nullptr && ledger_stage->invalid_keys() > 0;
  return counts.invalid > 0 || invalid_keys ? kExitFindings : kExitOk;
}

}  // namespace

Runner setup_decide(CLI::App& sub) {
  auto o = std::make_shared<DecideOptions>();
  sub.footer(
      "Decide every record of a dead-letter dump. Reads JSON Lines from FILE (or - for stdin;\n"
      "rabbitmq, sqs and pubsub dumps are one JSON array, streamed),\n"
      "writes one JSON object per record to stdout in input order, and a summary to stderr.\n"
      "A record that cannot be read gets the policy default with \"invalid\": true.\n"
      "Exit: 0 all records valid, 1 some record invalid (or policy/mapping errors),\n"
      "2 usage, I/O or table errors. See docs/cli.md.");
  sub.add_option("FILE", o->input, "Dump to read; - (default) reads standard input");
  sub.add_option("--policy", o->policy, "Compile this policy in memory and use it");
  sub.add_option("--table", o->table, "Use this compiled table (.rgt)");
  std::string formats;
  for (const InputFormat& f : input_formats()) {
    formats += (formats.empty() ? "" : "; ") + std::string(f.name) + ": " + std::string(f.help);
  }
  CLI::Option* input_format = sub.add_option("--input-format", o->format.input_format,
                                             "Record format, letters by default (" + formats + ")");
  CLI::Option* format_alias = sub.add_option(
      "--format", o->format.alias, "Another name for --input-format (kept for old scripts)");
  sub.add_option("--mapping", o->format.mapping,
                 "Mapping file for every --input-format but letters (docs/input-mapping.md)");
  sub.add_flag("--show-inputs", o->show_inputs,
               "Add \"inputs\" to each line: the value each policy input received (sensitive "
               "ones as \"<redacted>\"); needs --policy");
  CLI::Option* max_replays = sub.add_option(
      "--max-replays", o->max_replays,
      "Allow at most N create-effect verbs (replays) in this run; later ones get the "
      "default verb");
  CLI::Option* max_keys = sub.add_option(
      "--max-replayed-keys", o->max_keys,
      "Replay at most N distinct idempotency keys (default 10000000); after that, create "
      "verbs for new keys get the default (rule dump:key_limit)");
  CLI::Option* filter_mib = sub.add_option(
      "--replayed-keys-memory", o->filter_mib,
      "MiB for the filter of replayed idempotency keys (default 16: a new key is held by "
      "mistake with probability 3e-8 after 1,000,000 keys, 3e-3 after 10,000,000)");
  CLI::Option* dedupe = sub.add_option(
      "--dedupe-field", o->dedupe_field,
      "String input whose value may be replayed once (per run; with --ledger, once per ledger); "
      "default: the input the policy declares as its idempotency key, else idempotency_key");
  sub.add_option("--audit", o->audit,
                 "Append every decision to this audit log (docs/recovery.md) before printing it");
  CLI::Option* operator_option =
      sub.add_option("--operator", o->operator_name, "Who takes the decisions (with --audit)");
  sub.add_option("--ledger", o->ledger,
                 "Durable replay ledger (a SQLite PATH or a postgresql:// URL, docs/ledger.md): "
                 "each replay is claimed by idempotency key before it is printed, once across "
                 "runs, processes and hosts");
  CLI::Option* scope = sub.add_option("--ledger-scope", o->ledger_scope,
                                      "Ledger scope (default 'default'; with --ledger)");
  CLI::Option* block =
      sub.add_option("--ledger-block", o->ledger_block,
                     "Records per ledger transaction (default 16384; with --ledger): a block's "
                     "claims are committed together before its lines are printed, so smaller "
                     "blocks print sooner on a live stream and larger ones claim faster")
          ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  CLI::Option* threads = sub.add_option(
      "--threads", o->threads,
      "Read and decide records on N threads (1 to " +
          std::to_string(pipeline::ReadPool::kMaxThreads) +
          ", or auto: one per online CPU; default 1); "
          "the dump rules, ledger claims, audit and output stay in input order on one thread, so "
          "the output is the same bytes for every N");
  sub.add_flag("--dry-run", o->dry_run,
               "With --ledger: look keys up, claim nothing (a would-be replay says "
               "\"claimed\": false)");
  sub.add_option("--plan", o->plan,
                 "Act only on this approved plan's letters (docs/plans.md; with --ledger, --audit, "
                 "--operator and --users)");
  sub.add_option("--users", o->users, "With --plan: the users file (approvers and their keys)");
  add_audit_sign_options(sub, &o->audit_sign);
  add_trust_options(sub, &o->trust, /*acting=*/true);
  return [o, max_replays, max_keys, filter_mib, dedupe, operator_option, input_format, format_alias,
          scope, block, threads] {
    o->threads_set = threads->count() > 0;
    o->ledger_scope_set = scope->count() > 0;
    o->ledger_block_set = block->count() > 0;
    o->format.input_format_set = input_format->count() > 0;
    o->format.alias_set = format_alias->count() > 0;
    o->operator_set = operator_option->count() > 0;
    o->dedupe_field_set = dedupe->count() > 0;
    o->max_replays_set = max_replays->count() > 0;
    o->max_keys_set = max_keys->count() > 0;
    o->filter_mib_set = filter_mib->count() > 0;
    return run_decide(*o);
  };
}

}  // namespace replaygate::cli
