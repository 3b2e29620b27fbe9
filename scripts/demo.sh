#!/usr/bin/env bash
# The main job on a fresh clone: serve A2A with every Task in the file-store component (the
# embedded default store, sandboxed by wasmtime), and walk through it with curl: send a message,
# poll the Task, list Tasks, restart the server, poll again.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo build -q -p tnstore
tnstore=target/debug/tnstore
addr=127.0.0.1:8080
url="http://$addr/"
log=$(mktemp)
server=

start() {
    # No --store: the built-in file-store component over ./.toolnexus/tasks.
    "$tnstore" serve --addr "$addr" --echo-delay-ms 200 >"$log" 2>&1 &
    server=$!
    for _ in $(seq 100); do grep -q listening "$log" && break; sleep 0.1; done
    cat "$log"
}
stop() { [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true; }
trap stop EXIT
rpc() { curl -s "$url" -H 'content-type: application/json' -d "$1"; echo; }

start
echo "--- agent card:"
curl -s "$url.well-known/agent-card.json"; echo
echo "--- SendMessage:"
sent=$(rpc '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"configuration":{"blocking":false},"message":{"role":"user","messageId":"demo-0","parts":[{"kind":"text","text":"hello, store"}]}}}')
echo "$sent"
id=$(echo "$sent" | sed -E 's/.*"result":\{"id":"([^"]+)".*/\1/')
echo "--- GetTask $id (right away, then after the agent is done):"
rpc "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"GetTask\",\"params\":{\"id\":\"$id\"}}"
sleep 0.5
rpc "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"GetTask\",\"params\":{\"id\":\"$id\"}}"
echo "--- ListTasks (completed):"
rpc '{"jsonrpc":"2.0","id":4,"method":"ListTasks","params":{"status":"completed","pageSize":5}}'
echo "--- the same Task in A2A 1.0, over HTTP+JSON:"
curl -s "${url}tasks/$id" -H 'A2A-Version: 1.0'; echo
echo "--- SendStreamingMessage (A2A 1.0, HTTP+JSON, server-sent events):"
curl -sN "${url}message:stream" -H 'A2A-Version: 1.0' \
    -d '{"message":{"role":"ROLE_USER","messageId":"demo-1","parts":[{"text":"one two three"}]}}'
echo "--- restart the server, then GetTask again:"
stop
start
rpc "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"GetTask\",\"params\":{\"id\":\"$id\"}}"
