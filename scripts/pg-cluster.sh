#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on a free port of 127.0.0.1, for tests and benchmarks.
#
#   url="$(scripts/pg-cluster.sh start [--durable])"   # prints postgres://toolnexus:…@127.0.0.1:PORT/postgres
#   scripts/pg-cluster.sh url                          # the running cluster's URL again
#   scripts/pg-cluster.sh stop                         # stops it and removes its files
#
# Uses initdb/pg_ctl from PATH or the newest /usr/lib/postgresql/*/bin (Debian: apt-get install
# postgresql). Run as root, the server runs as the "postgres" user (initdb refuses root). It
# never touches a cluster the package may have started on 5432. The cluster runs with fsync=off
# (fast tests; a crash of the server itself still loses nothing committed) unless --durable.
# State: target/pg-cluster.env (override with PG_CLUSTER_STATE); data in a temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."
state="${PG_CLUSTER_STATE:-target/pg-cluster.env}"
user=toolnexus
password=tn-test-secret

die() { echo "pg-cluster: $*" >&2; exit 1; }

find_bin() {
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
        dirname "$(command -v initdb)"
        return
    fi
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    [ -n "$dir" ] && [ -x "$dir/initdb" ] || die "initdb not found on PATH or under /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)"
    echo "$dir"
}

# Runs a command as the postgres user when we are root.
as_pg() {
    if [ "$(id -u)" = 0 ]; then
        if command -v setpriv >/dev/null; then
            setpriv --reuid postgres --regid postgres --init-groups "$@"
        else
            runuser -u postgres -- "$@"
        fi
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
        || echo $(( 20000 + RANDOM % 20000 ))
}

start() {
    local fsync=off
    [ "${1:-}" = "--durable" ] && fsync=on
    if [ -f "$state" ]; then
        # shellcheck disable=SC1090
        . "$state"
        if as_pg "$PG_BIN/pg_ctl" status -D "$PG_DIR/data" >/dev/null 2>&1; then
            echo "$PG_URL"
            return
        fi
        stop
    fi
    local bin dir port url
    bin="$(find_bin)"
    if [ "$(id -u)" = 0 ]; then
        id -u postgres >/dev/null 2>&1 || die "running as root and there is no postgres user (it comes with Debian's postgresql-common)"
    fi
    dir="$(mktemp -d "${TMPDIR:-/tmp}/toolnexus-pg-cluster.XXXXXX")"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    printf '%s' "$password" > "$dir/pw"
    chmod 644 "$dir/pw"
    as_pg "$bin/initdb" -D "$dir/data" -U "$user" --pwfile="$dir/pw" \
        --auth-host=scram-sha-256 --auth-local=trust -E UTF8 --no-locale --no-sync >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; die "initdb failed"; }
    for _ in 1 2 3 4 5; do
        port="$(free_port)"
        if as_pg "$bin/pg_ctl" start -D "$dir/data" -l "$dir/server.log" -w -t 60 -o \
            "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=$fsync -c max_connections=200" \
            >/dev/null 2>&1; then
            url="postgres://$user:$password@127.0.0.1:$port/postgres"
            mkdir -p "$(dirname "$state")"
            printf 'PG_BIN=%q\nPG_DIR=%q\nPG_URL=%q\n' "$bin" "$dir" "$url" > "$state"
            echo "pg-cluster: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (fsync=$fsync), data in $dir" >&2
            echo "$url"
            return
        fi
    done
    cat "$dir/server.log" >&2 || true
    rm -rf "$dir"
    die "the server would not start"
}

stop() {
    [ -f "$state" ] || return 0
    # shellcheck disable=SC1090
    . "$state"
    as_pg "$PG_BIN/pg_ctl" stop -D "$PG_DIR/data" -m fast -w -t 60 >/dev/null 2>&1 || true
    rm -rf "$PG_DIR" "$state"
}

case "${1:-}" in
    start) shift; start "$@" ;;
    stop) stop ;;
    url) [ -f "$state" ] || die "no cluster running"; . "$state"; echo "$PG_URL" ;;
    *) die "usage: $0 start [--durable] | url | stop" ;;
esac
