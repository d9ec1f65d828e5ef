#!/usr/bin/env bash
# Runs the generated bash completion (build/completion/replaygate) in bash as a shell would:
# `complete -p` names its function, and COMP_WORDS/COMP_CWORD set as bash sets them give the
# commands, actions, options and fixed choices the CLI's --help lists.
# Usage: bash_completion.sh COMPLETION_FILE REPLAYGATE
set -euo pipefail
completion=$1
rg=$2
# shellcheck source=/dev/null
source "$completion"
fail=0

spec=$(complete -p replaygate)
[ "$spec" = "complete -o default -F _replaygate replaygate" ] || {
  echo "complete -p replaygate: '$spec'" >&2
  fail=1
}

# expect "WANT" WORD... : completes the last WORD (the cursor's) and compares COMPREPLY, sorted.
expect() {
  local want=$1
  shift
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _replaygate
  local got
  got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//')
  if [ "$got" != "$want" ]; then
    echo "completing '${COMP_WORDS[*]}': got '$got', want '$want'" >&2
    fail=1
  fi
}

# Every command --help lists, from an empty word.
want=$("$rg" --help | awk '/^Subcommands:/ {s = 1; next} s && /^  [a-z]/ {print $1}' | sort | tr '\n' ' ' | sed 's/ $//')
[ -n "$want" ] || { echo "replaygate --help lists no command" >&2; exit 2; }
expect "$want" replaygate ""
expect "compile" replaygate comp
expect "decide diff dump" replaygate d
# Actions of a command, and of a command after options with values.
expect "show stats" replaygate ledger s
expect "rabbitmq sidekiq" replaygate gate ""
expect "check compare" replaygate proposal c
# Options: of the command path, not of another command.
expect "--format" replaygate compile --form
expect "-o" replaygate compile -o
expect "--output" replaygate compile --out
expect "--queue" replaygate gate rabbitmq --que
expect "--ledger --ledger-scope" replaygate ledger show --ledger
expect "--help --version" replaygate --
# A value option's fixed choices, after it and after '=' (bash splits --opt=VALUE at '=').
expect "json text" replaygate ledger check --output ""
expect "json" replaygate ledger check --output = j
expect "github json text" replaygate proposal check --format ""
# After an option's value, options again.
expect "--timings" replaygate compile --format json --ti
# Files fall back to bash's default completion (an empty reply).
expect "" replaygate compile pol
expect "" replaygate compile --output gate

# The completion lists exactly the options --help lists, for a command and a nested action.
for words in "compile" "gate rabbitmq" "gate sidekiq" "audit verify"; do
  # shellcheck disable=SC2086
  from_help=$("$rg" $words --help | awk '/^Options:/ {s = 1; next} /^[A-Z]/ {s = 0} s && /^  -/ {print $1}' |
    tr ',' '\n' | grep -- '^-' | sort | tr '\n' ' ')
  from_completion=$(_replaygate_options "$words" | tr ' ' '\n' | sort | tr '\n' ' ')
  if [ "$from_help" != "$from_completion" ]; then
    echo "options of '$words': --help lists '$from_help', the completion '$from_completion'" >&2
    fail=1
  fi
done
[ "$fail" = 0 ] && echo "bash completion: all cases pass"
exit "$fail"
