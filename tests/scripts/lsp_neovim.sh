#!/usr/bin/env bash
# A real editor against `replaygate lsp`: headless Neovim (0.7, Debian 12) opens a broken copy of
# policies/replay_gate.policy (an unknown verb after "é" and an emoji on the same line), starts
# the server with vim.lsp.start_client, waits for its diagnostics and writes vim.diagnostic.get()
# to a file; the script checks code, line, column and message against lint's JSON for the same
# file and against the values written here.
# Usage: lsp_neovim.sh REPLAYGATE_BINARY SOURCE_DIR. Exit 0 pass, 1 fail; skipped (exit 0 with a
# message, CTest SKIP_RETURN_CODE 77) only when nvim is not installed: tools/setup.sh installs it.
set -euo pipefail
binary=$1
source_dir=$2
if ! command -v nvim >/dev/null 2>&1; then
  echo "lsp_neovim: SKIPPED: nvim is not installed (apt-get install neovim; tools/setup.sh does)" >&2
  exit 77
fi
work=$(mktemp -d /tmp/rg_lsp_nvim.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Neovim keeps its LSP log and state under XDG directories: keep them in the scratch directory.
export XDG_CACHE_HOME="$work/cache" XDG_STATE_HOME="$work/state" XDG_DATA_HOME="$work/data" \
  XDG_CONFIG_HOME="$work/config" HOME="$work"
policy="$work/broken.policy"
sed 's/^  payment.capture, timeout -> replay_once /  "café🚀", timeout -> replay_onec /' \
  "$source_dir/policies/replay_gate.policy" > "$policy"
grep -q 'replay_onec' "$policy" || { echo "lsp_neovim: the row to break was not found" >&2; exit 1; }
line=$(grep -n 'replay_onec' "$policy" | cut -d: -f1)

cat > "$work/client.lua" <<'LUA'
local policy, binary, out = os.getenv('RG_POLICY'), os.getenv('RG_BINARY'), os.getenv('RG_OUT')
vim.cmd('edit ' .. vim.fn.fnameescape(policy))
local buf = vim.api.nvim_get_current_buf()
local client = vim.lsp.start_client({
  name = 'replaygate',
  cmd = { binary, 'lsp' },
  root_dir = vim.fn.fnamemodify(policy, ':h'),
})
if client == nil then
  vim.fn.writefile({ 'start_client failed' }, out)
  vim.cmd('qa!')
end
vim.lsp.buf_attach_client(buf, client)
vim.wait(20000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
local lines = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  -- lnum and col are 0-based; col counts bytes (Neovim converted the server's UTF-16 units).
  local first = vim.split(d.message, '\n')[1]
  table.insert(lines, string.format('%s|%s|%d|%d|%s', d.code, d.source, d.lnum + 1, d.col + 1, first))
end
if #lines == 0 then lines = { 'no diagnostics within 20 s' } end
vim.fn.writefile(lines, out)
vim.lsp.stop_client(client)
vim.cmd('qa!')
LUA

RG_POLICY="$policy" RG_BINARY="$binary" RG_OUT="$work/diagnostics.txt" \
  timeout 60 nvim --headless --clean -c "luafile $work/client.lua" </dev/null >"$work/nvim.log" 2>&1 ||
  { echo "lsp_neovim: nvim failed or timed out:" >&2; cat "$work/nvim.log" >&2; exit 1; }
[ -f "$work/diagnostics.txt" ] || { echo "lsp_neovim: nvim wrote no diagnostics file" >&2; cat "$work/nvim.log" >&2; exit 1; }
actual=$(cat "$work/diagnostics.txt")
# Byte column 27: two spaces, "café🚀" (11 bytes with its quotes), ", timeout -> " (13 bytes); in
# UTF-16 units the server sends character 23 (é is one unit, the emoji two), which Neovim turns
# back into bytes: a server that sent bytes as units would land 3 bytes further on.
expected="RG104|replaygate|$line|27|unknown verb 'replay_onec'"
# lint on the same file, in the same form.
set +e
"$binary" lint --format json "$policy" >"$work/lint.json" 2>/dev/null
set -e
from_lint=$(python3 -c '
import json, sys
for d in json.load(open(sys.argv[1])):
    print("%s|replaygate|%d|%d|%s" % (d["code"], d["line"], d["column"], d["message"]))
' "$work/lint.json")
status=0
if [ "$actual" != "$expected" ]; then
  printf 'lsp_neovim: Neovim shows\n  %s\nexpected\n  %s\n' "$actual" "$expected" >&2
  status=1
fi
if [ "$actual" != "$from_lint" ]; then
  printf 'lsp_neovim: Neovim shows\n  %s\nlint says\n  %s\n' "$actual" "$from_lint" >&2
  status=1
fi
[ $status = 0 ] && echo "lsp_neovim: ok: $actual"
exit $status
