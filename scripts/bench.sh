#!/usr/bin/env bash
# The comparative benchmark in one go: our stores, the Python A2A SDK's stores, a Python file
# store and the syscall floor, side by side. Writes target/bench/results.{md,json} and chart.png.
#
#   ./scripts/bench.sh [ITERATIONS]        (default 2000; the 360 KiB Task gets a fifth)
#
# The PostgreSQL store is measured against TOOLNEXUS_BENCH_POSTGRES_URL if set, else against a
# throwaway durable cluster (fsync on) started here when PostgreSQL's server binaries are
# installed (Debian: postgresql), else skipped with a message.
#
# Needs python3 with venv, and a TrueType font (Debian: fonts-dejavu-core, installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
iterations="${1:-2000}"
out=target/bench
mkdir -p "$out"

rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
font=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
if [ ! -f "$font" ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && apt-get install -y -qq fonts-dejavu-core) >/dev/null
fi

# The Python side: a2a-sdk and its SQLite store, pinned, in a virtual environment.
venv=target/bench-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q -r bench/requirements.txt

cargo build -q --release -p toolnexus-bench --bin tn-compare

if [ -z "${TOOLNEXUS_BENCH_POSTGRES_URL:-}" ] \
    && { command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }; then
    export PG_CLUSTER_STATE=target/bench-pg-cluster.env
    TOOLNEXUS_BENCH_POSTGRES_URL="$(scripts/pg-cluster.sh start --durable)"
    export TOOLNEXUS_BENCH_POSTGRES_URL
    trap 'scripts/pg-cluster.sh stop' EXIT
fi

# The same two Tasks for both sides: tn-compare's small Task, and the long-history test vector.
large=tests/vectors/tasks/long-history.json
small="$out/small-task.json"
./target/release/tn-compare --emit-small "$small"

echo "== Python peers" >&2
"$venv/bin/python" bench/peers.py --small "$small" --large "$large" \
    --iterations "$(( iterations / 4 > 100 ? iterations / 4 : 100 ))" --out "$out/peers.json" --workdir target >&2
echo "== Rust stores, floor, component start-up" >&2
./target/release/tn-compare --iterations "$iterations" --peers "$out/peers.json" --large "$large" \
    --out "$out" --font "$font" --workdir target
