#!/usr/bin/env bash
# tools/pre-commit as a real git hook in a scratch repository: a commit of a good policy passes, a
# commit that breaks a policy in either form (.yaml or .policy) or its case file is refused.
# Usage: pre_commit_hook.sh REPLAYGATE_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

cd "$scratch"
git init -q .
git config user.email test@example.invalid
git config user.name test
git config commit.gpgsign false
mkdir -p policies .git/hooks
cp "$src"/policies/replay_gate.yaml "$src"/policies/replay_gate.policy \
  "$src"/policies/replay_gate.test.yaml policies/
ln -s "$src/tools/pre-commit" .git/hooks/pre-commit
export REPLAYGATE=$bin

# 1. The shipped policy in both forms, with its cases: the hook passes.
git add policies
git commit -q -m "shipped policy" 2>hook.err || { cat hook.err >&2; fail "the shipped policy was refused"; }

# 2. A rule before the guards that replays everything, in the policy language: RG210 (the
#    invariant committed_is_never_replayed is refuted). Refused.
sed -i 's|^const max_attempts = 3$|&\nrule replay_all: when attempts >= 0 -> replay_once "x"|' \
  policies/replay_gate.policy
grep -q '^rule replay_all: when attempts >= 0 -> replay_once "x"$' policies/replay_gate.policy ||
  fail "the edit did not apply"
git add policies/replay_gate.policy
if git commit -q -m "replay everything" 2>hook.err; then
  fail "a .policy that lint refuses was committed"
fi
grep -q 'replay_gate.policy:.*RG210' hook.err || { cat hook.err >&2; fail "no RG210 for the .policy file"; }
git checkout -q -- policies/replay_gate.policy
git reset -q

# 3. The same rule in the YAML form: refused too.
python3 - policies/replay_gate.yaml <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
marker = "rules:\n"
at = text.index(marker) + len(marker)
rule = "  - guard: replay_all\n    when: {attempts: {ge: 0}}\n    verb: replay_once\n    reason: x\n\n"
open(path, "w").write(text[:at] + rule + text[at:])
PY
git add policies/replay_gate.yaml
if git commit -q -m "replay everything (yaml)" 2>hook.err; then
  fail "a .yaml that lint refuses was committed"
fi
grep -q 'replay_gate.yaml:.*RG210' hook.err || { cat hook.err >&2; fail "no RG210 for the YAML file"; }
git checkout -q -- policies/replay_gate.yaml
git reset -q

# 4. A case file that now fails: the staged case file checks both forms of its policy.
sed -i '0,/expect: replay_once/s//expect: never/' policies/replay_gate.test.yaml
git add policies/replay_gate.test.yaml
if git commit -q -m "wrong case" 2>hook.err; then
  fail "a failing case file was committed"
fi
grep -q 'pre-commit: policies/replay_gate.yaml: test cases failed' hook.err ||
  { cat hook.err >&2; fail "the YAML form's cases were not run"; }
grep -q 'pre-commit: policies/replay_gate.policy: test cases failed' hook.err ||
  { cat hook.err >&2; fail "the .policy form's cases were not run"; }
git checkout -q -- policies/replay_gate.test.yaml
git reset -q

# 5. A commit with no policy in it needs no binary; one with a policy and no binary is refused.
echo "notes" > notes.txt
git add notes.txt
REPLAYGATE=/nonexistent/replaygate git commit -q -m notes 2>hook.err ||
  { cat hook.err >&2; fail "a commit without policies needed the binary"; }
echo "# touched" >> policies/replay_gate.policy
git add policies/replay_gate.policy
REPLAYGATE=/nonexistent/replaygate git commit -q -m touched 2>hook.err &&
  fail "a policy was committed without a binary to check it"
grep -q "replaygate binary '/nonexistent/replaygate' not found" hook.err ||
  { cat hook.err >&2; fail "missing binary not reported"; }
echo "ok: pre-commit hook refuses broken .policy and .yaml policies and failing cases"
