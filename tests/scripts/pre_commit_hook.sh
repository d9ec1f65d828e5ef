#!/usr/bin/env bash
# tools/pre-commit as a real git hook in a scratch repository: a commit of a good policy passes, a
# commit that breaks a policy in either form (.yaml or .policy) or its case file is refused, also
# for names with non-ASCII characters, a tab or upper-case extensions; the staged blob is checked,
# not the working copy; a staged input mapping is linted against its policy; deleting a case file
# whose policy stays, a staged symbolic link and a merge of a broken branch are refused.
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
git checkout -q HEAD -- policies/replay_gate.policy   # the index and the working copy, as committed

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
git checkout -q HEAD -- policies/replay_gate.yaml   # the index and the working copy, as committed

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
git checkout -q HEAD -- policies/replay_gate.test.yaml   # the index and the working copy, as committed

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
git reset -q
git checkout -q HEAD -- policies/replay_gate.policy

# 6. Names the old hook missed: non-ASCII characters, a tab, upper-case extensions. Each is a
#    copy of the policy with the replay-everything rule (RG210), so each must be refused.
bad_policy() {
  sed 's|^const max_attempts = 3$|&\nrule replay_all: when attempts >= 0 -> replay_once "x"|' \
    policies/replay_gate.policy
}
bad_yaml() {
  python3 - policies/replay_gate.yaml <<'PY'
import sys
text = open(sys.argv[1]).read()
at = text.index("rules:\n") + len("rules:\n")
rule = "  - guard: replay_all\n    when: {attempts: {ge: 0}}\n    verb: replay_once\n    reason: x\n\n"
sys.stdout.write(text[:at] + rule + text[at:])
PY
}
tab=$'\t'
for name in "policies/règles_été.policy" "policies/with${tab}tab.policy" "policies/GATE.POLICY" \
  "policies/Gate.Policy" "policies/UPPER.YAML" "policies/upper.YML"; do
  case "$name" in
    *.policy | *.POLICY | *.Policy) bad_policy > "$name" ;;
    *) bad_yaml > "$name" ;;
  esac
  git add -- "$name"
  if git commit -q -m "bad policy with an odd name" 2>hook.err; then
    fail "a bad policy named '$name' was committed"
  fi
  grep -q 'RG210' hook.err || { cat hook.err >&2; fail "no RG210 for '$name'"; }
  git rm -q --cached -- "$name"
  rm -f -- "$name"
done
git reset -q

# 7. The staged content is what is checked: a bad staged version with a fixed working copy is
#    refused; a good staged version with a broken (unstaged) working copy is committed.
cp policies/replay_gate.policy good.policy.txt
bad_policy > policies/replay_gate.policy.new && mv policies/replay_gate.policy.new policies/replay_gate.policy
git add policies/replay_gate.policy
cp good.policy.txt policies/replay_gate.policy   # the working tree is fixed, the index is not
if git commit -q -m "bad staged, good working copy" 2>hook.err; then
  fail "a bad staged policy was committed because its working copy was fixed"
fi
grep -q 'policies/replay_gate.policy:.*RG210' hook.err ||
  { cat hook.err >&2; fail "no RG210 (naming the repository path) for the staged blob"; }
git add policies/replay_gate.policy   # stage the good one again
echo "# a comment" >> policies/replay_gate.policy
git add policies/replay_gate.policy
bad_policy > policies/replay_gate.policy   # the working tree is broken, the index is good
git commit -q -m "good staged, bad working copy" 2>hook.err ||
  { cat hook.err >&2; fail "a good staged policy was refused for its unstaged working copy"; }
cp good.policy.txt policies/replay_gate.policy
echo "# a comment" >> policies/replay_gate.policy
rm -f good.policy.txt
git diff --quiet -- policies/replay_gate.policy || fail "the working copy was not restored"

# 8. A staged input mapping is linted against its policy (RG_MAPPING_POLICY, by default
#    policies/replay_gate.yaml): the shipped mapping passes; a default that opens a create verb
#    (RG309) is refused; with no such policy in the index the commit is refused too.
mkdir -p examples
cp "$src"/examples/kafka-spring-dlt.mapping.yaml examples/
git add examples/kafka-spring-dlt.mapping.yaml
git commit -q -m "mapping" 2>hook.err || { cat hook.err >&2; fail "the shipped mapping was refused"; }
python3 - examples/kafka-spring-dlt.mapping.yaml <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
new = re.sub(r"(\n  attempts:\n(?:    .*\n)*?)(    type: int\n)", r"\1\2    default: 0\n", text, count=1)
assert new != text, "no attempts input in the mapping"
open(path, "w").write(new)
PY
cp examples/kafka-spring-dlt.mapping.yaml examples/Other.Mapping.YAML
git add examples/kafka-spring-dlt.mapping.yaml
if git commit -q -m "attempts default 0" 2>hook.err; then
  fail "a mapping whose default opens a create verb was committed"
fi
grep -q 'RG309' hook.err || { cat hook.err >&2; fail "no RG309 for the mapping"; }
git checkout -q -- examples/kafka-spring-dlt.mapping.yaml
git add examples/Other.Mapping.YAML
if git commit -q -m "upper-case mapping" 2>hook.err; then
  fail "a mapping named with upper-case extensions was not checked"
fi
grep -q 'RG309' hook.err || { cat hook.err >&2; fail "no RG309 for the upper-case mapping"; }
if RG_MAPPING_POLICY=policies/none.yaml git commit -q -m "no policy" 2>hook.err; then
  fail "a mapping was committed with no policy to check it against"
fi
grep -q 'no policy to check the mapping against' hook.err ||
  { cat hook.err >&2; fail "the missing mapping policy was not reported"; }
git rm -q --cached examples/Other.Mapping.YAML
rm -f examples/Other.Mapping.YAML

# 9. Deleting a case file whose policy stays is refused (later breaking changes would commit
#    untested); deleting the policy with it is fine.
git rm -q policies/replay_gate.test.yaml
if git commit -q -m "drop the cases" 2>hook.err; then
  fail "a case file was deleted while its policy stays"
fi
grep -q 'policies/replay_gate.test.yaml: refusing to delete the test cases of policies/replay_gate' hook.err ||
  { cat hook.err >&2; fail "the deleted case file was not named"; }
git reset -q HEAD -- policies/replay_gate.test.yaml
git checkout -q -- policies/replay_gate.test.yaml
git status --porcelain -- policies | grep -q . && fail "the case file was not restored"

# 10. A policy, case or mapping file staged as a symbolic link (mode 120000) is refused, whether
#     the link is relative (which the checks cannot read) or absolute (read through its target).
for link in policies/relative.yaml policies/absolute.policy policies/relative.test.yaml \
  examples/link.mapping.yaml; do
  case "$link" in
    policies/relative.yaml | policies/relative.test.yaml) ln -s replay_gate.yaml "$link" ;;
    policies/absolute.policy) ln -s "$PWD/policies/replay_gate.policy" "$link" ;;
    examples/link.mapping.yaml) ln -s kafka-spring-dlt.mapping.yaml "$link" ;;
  esac
  git add "$link"
  [ "$(git ls-files -s -- "$link" | cut -d' ' -f1)" = 120000 ] || fail "$link is not staged as a link"
  if git commit -q -m "a link" 2>hook.err; then
    fail "a symbolic link $link was committed"
  fi
  grep -q "$link: a symbolic link in the index (mode 120000)" hook.err ||
    { cat hook.err >&2; fail "the link $link was not named"; }
  git rm -q --cached "$link"
  rm -f "$link"
done

# 11. A merge runs the same check as pre-merge-commit: a branch that broke the policy (committed
#     with --no-verify) cannot be merged.
ln -s "$src/tools/pre-commit" .git/hooks/pre-merge-commit
main=$(git rev-parse --abbrev-ref HEAD)
git checkout -q -b broken
sed -i 's|^const max_attempts = 3$|&\nrule replay_all: when attempts >= 0 -> replay_once "x"|' \
  policies/replay_gate.policy
git add policies/replay_gate.policy
git commit -q --no-verify -m "replay everything, unchecked"
git checkout -q "$main"
echo note > notes.txt
git add notes.txt
git commit -q -m "an unrelated change" 2>hook.err || { cat hook.err >&2; fail "an unrelated commit was refused"; }
if git merge -q --no-ff --no-edit broken 2>hook.err; then
  fail "a merge that breaks the policy was committed"
fi
grep -q 'replay_gate.policy:.*RG210' hook.err || { cat hook.err >&2; fail "no RG210 for the merge"; }
git merge --abort

echo "ok: pre-commit hook refuses broken .policy and .yaml policies (odd names, staged blobs), failing cases, bad mappings, deleted case files, staged links and broken merges"
