#!/usr/bin/env bash
# Builds the lifecycle-guard middleware, composes it over the file-store component, and writes
# one component that loads with `--store wasm:<out>?dir=<dir>` like any other store.
#
#   ./scripts/build-guarded-store.sh [OUT]      (default OUT: ./guarded-file-store.wasm)
set -euo pipefail
out=$(realpath -m "${1:-guarded-file-store.wasm}")
cd "$(dirname "$0")/.."
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The middleware, as a component of the task-store-middleware world.
cargo build -q --release --locked --target wasm32-wasip2 -p toolnexus-lifecycle-guard
cp target/wasm32-wasip2/release/toolnexus_lifecycle_guard.wasm "$work/guard.wasm"
# 2. The store it sits in front of: the file store embedded in tnstore (any full store will do).
cargo run -q --locked -p tnstore -- component --out "$work/store.wasm"
# 3. One component: guard → file store. It imports only WASI.
cargo run -q --locked -p toolnexus-compose --bin tn-compose -- \
    --middleware "$work/guard.wasm" --store "$work/store.wasm" --out "$out"
echo "try: cargo run -p tnstore -- --store 'wasm:$out?dir=./tasks' serve"
