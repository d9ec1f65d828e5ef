#!/usr/bin/env bash
# Installs the Node.js benchmark peers (@cedar-policy/cedar-wasm 4, json-rules-engine 7) from the
# configured npm registry into a temporary directory, runs tools/bench/node_baselines.mjs there,
# and removes the directory. Needs node and npm (Debian: nodejs, npm).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund --silent @cedar-policy/cedar-wasm@4 json-rules-engine@7 >/dev/null
cp "$here/node_baselines.mjs" .
node node_baselines.mjs
