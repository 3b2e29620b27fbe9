#!/usr/bin/env bash
# The main job on a fresh clone: build tnstore, export the file-store component as ./store.wasm,
# save a Task through it (sandboxed by wasmtime), read it back, and show the file it wrote.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo build -q -p toolnexus --bin tnstore
tnstore=target/debug/tnstore
store='wasm:./store.wasm?dir=./demo-tasks'

"$tnstore" component --out store.wasm
echo '{"id": "task-1", "status": {"state": "submitted"}}' | "$tnstore" --store "$store" save -
echo '{"id": "task-1", "status": {"state": "completed"}, "artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": "done"}]}]}' \
    | "$tnstore" --store "$store" save -
echo "--- tnstore get task-1 (through the component):"
"$tnstore" --store "$store" get task-1
echo "--- the same Task read by the native file store:"
"$tnstore" --store file:./demo-tasks get task-1
echo "--- on disk:"
ls -l demo-tasks
