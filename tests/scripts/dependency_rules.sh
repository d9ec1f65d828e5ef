#!/usr/bin/env bash
# The dependency rules the build enforces (docs/architecture.md), checked after configuration:
#   GRAPH  the link closure of each rule's target (dependency_rules.cmake writes it)
#   JSONL  libreplaygate_jsonl.so, whose defined symbols must come from no compiler or CLI code
#   COMPILER_ARCHIVE, CLI_ARCHIVE  libreplaygate_compiler.a and libreplaygate_cli_lib.a
# Rules: inputs, audit, pipeline and redrive never link the compiler (nor tools/); the bindings
# never link tools/ (the CLI library) nor the compiler; the runtime links nothing of ours; the
# broker client (librabbitmq) is linked by redrive/rabbitmq/ alone: pipeline/ and redrive/ stay
# broker-independent, and redrive/rabbitmq/ never links the compiler or the CLI; the dump pipeline
# never links the live loop; checks/ (a policy's companion files) links the compiler and inputs/,
# never the CLI, a gate, the audit log or the ledger; tools/lsp may link the compiler and checks/
# (no CLI, no gate); views/ (matrix, graph) links the compiler, the runtime and common/ only.
# Audit never links inputs (its JSON scanning is common/'s); review (the review record, the
# explain report) never links tools/, a console, the dump pipeline, the live redrive or a broker
# client: it is data a console links, not an application.
set -euo pipefail
graph=$1
jsonl=$2
compiler_archive=$3
cli_archive=$4
fail=0
deps_of() { sed -n "s/^$1: //p" "$graph"; }
forbid() {  # TARGET FORBIDDEN...
  local target=$1; shift
  local deps; deps=" $(deps_of "$target") "
  for bad in "$@"; do
    if [[ $deps == *" $bad "* ]]; then
      echo "dependency_rules: $target links $bad, which it must never link (docs/architecture.md)" >&2
      fail=1
    fi
  done
}
grep -q '^replaygate_inputs:' "$graph" || { echo "dependency_rules: no graph in $graph" >&2; exit 2; }
for t in replaygate_inputs replaygate_audit replaygate_pipeline replaygate_redrive; do
  forbid "$t" replaygate_compiler replaygate_cli_lib
done
forbid replaygate_jsonl replaygate_compiler replaygate_cli_lib PkgConfig::RABBITMQ
forbid replaygate_redrive_rabbitmq replaygate_compiler replaygate_cli_lib
forbid replaygate_pipeline replaygate_redrive replaygate_redrive_rabbitmq
forbid replaygate_audit replaygate_inputs
forbid replaygate_review replaygate_cli_lib replaygate_console replaygate_pipeline \
  replaygate_redrive replaygate_redrive_rabbitmq PkgConfig::RABBITMQ
# redrive/plan/ (plans, docs/plans.md) is data the CLI and a console link: never the pipeline,
# the live loop, a broker client, the compiler or the CLI.
forbid replaygate_plan replaygate_cli_lib replaygate_compiler replaygate_pipeline replaygate_redrive \
  replaygate_redrive_rabbitmq replaygate_redrive_redis PkgConfig::RABBITMQ PkgConfig::HIREDIS
# console/ (the web console, docs/console.md) reads plans, the ledger and the audit log: never
# the CLI, the compiler, the dump pipeline, the live loop or a broker client.
forbid replaygate_console replaygate_cli_lib replaygate_compiler replaygate_pipeline \
  replaygate_redrive replaygate_redrive_rabbitmq replaygate_redrive_redis PkgConfig::RABBITMQ \
  PkgConfig::HIREDIS
# The language server is the compiler's and checks/' client, never the CLI's or a gate's.
forbid replaygate_checks replaygate_cli_lib replaygate_pipeline replaygate_redrive replaygate_audit \
  replaygate_ledger replaygate_redrive_rabbitmq PkgConfig::RABBITMQ
# views/ (matrix, graph) renders a policy or table: never the CLI, a gate, the ledger or a broker.
forbid replaygate_views replaygate_cli_lib replaygate_pipeline replaygate_redrive replaygate_audit \
  replaygate_ledger replaygate_redrive_rabbitmq replaygate_inputs PkgConfig::RABBITMQ
forbid replaygate_lsp replaygate_cli_lib replaygate_pipeline replaygate_redrive replaygate_audit \
  replaygate_ledger replaygate_redrive_rabbitmq
for t in replaygate_runtime replaygate_common replaygate_inputs replaygate_audit replaygate_pipeline \
  replaygate_ledger replaygate_verify replaygate_redrive; do
  forbid "$t" PkgConfig::RABBITMQ replaygate_redrive_rabbitmq
done
forbid replaygate_verify replaygate_compiler replaygate_cli_lib replaygate_inputs replaygate_audit \
  replaygate_pipeline replaygate_redrive replaygate_common replaygate_ledger
forbid replaygate_common replaygate_compiler replaygate_runtime replaygate_cli_lib
forbid replaygate_ledger replaygate_compiler replaygate_cli_lib replaygate_runtime
forbid replaygate_runtime replaygate_compiler replaygate_cli_lib replaygate_inputs \
  replaygate_audit replaygate_pipeline replaygate_redrive replaygate_common

# Symbols: no function or object defined in libreplaygate_jsonl.so may be one the compiler's or
# the CLI's own code defines (their archives; what every library shares is in common/, which
# neither archive holds). An archive's global definitions
# (T D B R) are compared with every definition of the .so, local ones included (hidden visibility
# makes the .so's own functions local); inline and template code (weak) and an object's local
# symbols (static functions, compiler clones, which may share a name by chance) are not.
own_symbols() {  # ARCHIVE: the global strong symbols of its objects but the shared ones
  nm -A --defined-only "$1" 2>/dev/null |
    awk 'NF >= 3 && $(NF-1) ~ /^[TDBR]$/ {print $NF}' | sort -u
}
nm --defined-only "$jsonl" | awk 'NF >= 3 && $(NF-1) ~ /^[TDBRtdbr]$/ {print $NF}' |
  sort -u > "$graph.jsonl.syms"
for archive in "$compiler_archive" "$cli_archive"; do
  own_symbols "$archive" > "$graph.own.syms"
  shared=$(comm -12 "$graph.jsonl.syms" "$graph.own.syms" | head -20)
  if [ -n "$shared" ]; then
    echo "dependency_rules: $jsonl defines symbols of $(basename "$archive"):" >&2
    echo "$shared" | c++filt >&2
    fail=1
  fi
done
if [ "$fail" = 0 ]; then echo "dependency_rules: ok"; fi
exit $fail
