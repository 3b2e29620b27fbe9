#!/usr/bin/env bash
# Builds the Python task-store component (python/store/) with componentize-py and prints its path.
#
#   ./scripts/build-python-store.sh [--out FILE.wasm] [--force]
#
# Default output: target/python/store/toolnexus-python-store.wasm (or under $CARGO_TARGET_DIR).
# componentize-py (pinned in python/requirements.txt) is installed into a virtual environment in
# target/python-store-venv, reused while that file's hash (kept in the environment) matches. The
# build is skipped when the output exists and none of its inputs (the store's sources, the WIT
# contract, the pin, this script) changed since it was made (a `<out>.inputs` stamp); --force
# rebuilds anyway. Load the result like any store component:
#
#   tnstore --store "wasm:$(./scripts/build-python-store.sh)?dir=./tasks" get <id>
#
# Everything but the path goes to stderr. Needs python3 with venv (Debian: python3-venv).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
case "$target" in /*) ;; *) target=$repo/$target ;; esac
out=$target/python/store/toolnexus-python-store.wasm
force=
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out=$(realpath -m "$2"); shift 2 ;;
        --force) force=1; shift ;;
        *) echo "build-python-store.sh: unknown argument $1 (expected --out FILE or --force)" >&2; exit 2 ;;
    esac
done
cd "$repo"

requirements=python/requirements.txt
venv=$target/python-store-venv
wanted="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ "$(cat "$venv/requirements.sha256" 2>/dev/null)" != "$wanted" ] || [ ! -x "$venv/bin/componentize-py" ]; then
    echo "build-python-store.sh: installing componentize-py into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" >&2
    echo "$wanted" >"$venv/requirements.sha256"
fi

# The inputs' digest: every source file's path and bytes, the contract, the pin and this script.
inputs=$( { find python/store/src -type f -name '*.py' | LC_ALL=C sort; echo wit/task-store.wit; echo "$requirements"; echo scripts/build-python-store.sh; } \
    | while read -r file; do printf '%s\0' "$file"; cat "$file"; printf '\0'; done | sha256sum | cut -d' ' -f1)
if [ -z "$force" ] && [ -f "$out" ] && [ "$(cat "$out.inputs" 2>/dev/null)" = "$inputs" ]; then
    echo "$out"
    exit 0
fi

mkdir -p "$(dirname "$out")"
# Written beside the output and renamed into place, so a reader never sees half a component.
partial=$out.partial.$$
trap 'rm -f "$partial"' EXIT
"$venv/bin/componentize-py" --wit-path wit/task-store.wit --world push-task-store \
    componentize --python-path python/store/src app --output "$partial" >&2
mv "$partial" "$out"
echo "$inputs" >"$out.inputs"
echo "$out"
