#!/usr/bin/env bash
# The comparative benchmark in one go: our stores, the Python A2A SDK's stores, a Python file
# store and the syscall floor, side by side. Writes target/bench/results.{md,json} and chart.png.
# The store components in JavaScript (js/store/) and Python (python/store/) are built here and
# measured beside the Rust file-store component (rows wasm-js, wasm-python, wasm).
#
#   ./scripts/bench.sh [ITERATIONS]        (default 2000; the 360 KiB Task gets a fifth)
#
# The PostgreSQL store is measured against TOOLNEXUS_BENCH_POSTGRES_URL if set, else against a
# throwaway durable cluster (fsync on) started here when PostgreSQL's server binaries are
# installed (Debian: postgresql), else skipped with a message.
#
# Needs python3 with venv (the Python peers and the Python store component; without python3 both
# are left out), Node.js 20+ with npm for the JavaScript store component (left out without them),
# and a TrueType font (Debian: fonts-dejavu-core, installed if missing).
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

have_python=
if command -v python3 >/dev/null; then
    have_python=1
    # The Python side: a2a-sdk and its SQLite store, pinned, in a virtual environment.
    venv=target/bench-venv
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install -q -r bench/requirements.txt
else
    echo "bench.sh: python3 not found: leaving out the Python peers and the Python store component" >&2
fi

cargo build -q --release -p toolnexus-bench --bin tn-compare

# The other languages' store components, each rebuilt only when its sources changed. A build that
# fails stops the run; a missing toolchain leaves that component's rows out.
components=()
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if command -v npm >/dev/null && [ "$node_major" -ge 20 ]; then
    echo "== JavaScript store component" >&2
    js_wasm=target/js/store/toolnexus-js-store.wasm
    mkdir -p target/js
    (
        # The lock the test suite's JavaScript build takes (tests/src/node.rs): one builder at a
        # time, so a test run building at the same moment does not race this one.
        if command -v flock >/dev/null; then
            exec 9>target/js/.build.lock
            flock 9
        fi
        # `npm ci` only when js/node_modules was not installed from this lockfile (the stamp is
        # the copy of package-lock.json the test suite keeps there too).
        stamp=js/node_modules/.toolnexus-package-lock.json
        if ! cmp -s js/package-lock.json "$stamp"; then
            (cd js && npm ci --no-audit --no-fund) >&2
            cp js/package-lock.json "$stamp"
        fi
        node js/store/build.mjs --out "$js_wasm" >&2
    )
    # 256 MiB per instance (for every component, alike): the JavaScript engine's heap grows
    # well past the default 64 MiB under repeated calls with the 360 KiB Task before it levels
    # off, and at the default the run would stop at that cap (see tn-compare --help).
    components+=(--store-component "js=$js_wasm" --component-memory-mib 256)
else
    echo "bench.sh: Node.js 20+ with npm not found: leaving out the JavaScript store component" >&2
fi
if [ -n "$have_python" ]; then
    echo "== Python store component" >&2
    py_wasm=$(scripts/build-python-store.sh | tail -n 1)
    components+=(--store-component "python=$py_wasm")
fi

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

peers=()
if [ -n "$have_python" ]; then
    echo "== Python peers" >&2
    "$venv/bin/python" bench/peers.py --small "$small" --large "$large" \
        --iterations "$(( iterations / 4 > 100 ? iterations / 4 : 100 ))" --out "$out/peers.json" --workdir target >&2
    peers=(--peers "$out/peers.json")
fi
echo "== Rust stores, store components, floor, component start-up" >&2
./target/release/tn-compare --iterations "$iterations" ${peers[@]+"${peers[@]}"} ${components[@]+"${components[@]}"} --large "$large" \
    --out "$out" --font "$font" --workdir target
