#!/usr/bin/env bash
# The Malipo benchmark (`just bench`). Loopback only, bounded in time (about 3 minutes after the
# build; every step has a time limit).
#
# For PostgreSQL and for SQLite it starts the release server on a fresh database, seeds it, then
# measures with target/release/malipo-loadgen:
#   - the sandbox lifecycle rate (created -> completed) for 1 merchant and for 20 merchants, on a
#     server whose sandbox approves at once;
#   - then, on a server restarted with the approval an hour away (so only creation runs):
#     charge creation paced at 1,000/s (open loop) -> p50/p99;
#   - charge creation at full speed (32 connections), in rounds; on PostgreSQL each round is
#     followed by a pgbench round of bench/charge.sql (the SQL of one creation), so the ratio is
#     measured side by side;
#   - the server's peak RSS (VmHWM) in each phase.
# Every result lands as a file in bench-out/ (git-ignored); bench/report.py turns that one run into
# docs/performance.md. Nothing in the document is typed by hand.
#
# Knobs (environment): BENCH_OUT (bench-out), BENCH_ROUNDS (3), BENCH_ROUND_SECS (5),
# BENCH_LIFECYCLE_COUNT (3000), BENCH_SKIP_BUILD (0), BENCH_MALIPO_BIN (target/release/malipo),
# BENCH_REPORT (docs/performance.md), PGHOST/PGPORT/PGUSER (127.0.0.1/5432/postgres).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

OUT=${BENCH_OUT:-$ROOT/bench-out}
REPORT=${BENCH_REPORT:-$ROOT/docs/performance.md}
ROUNDS=${BENCH_ROUNDS:-3}
ROUND_SECS=${BENCH_ROUND_SECS:-5}
LIFECYCLE_COUNT=${BENCH_LIFECYCLE_COUNT:-3000}
MALIPO=${BENCH_MALIPO_BIN:-$ROOT/target/release/malipo}
LOADGEN=$ROOT/target/release/malipo-loadgen
CONCURRENCY=32
PACED_RATE=1000

export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
PG_DB=malipo_bench          # the server's database
PG_SCRATCH_DB=malipo_pgbench # pgbench's tables (bench/pgbench_schema.sql)
BENCH_WEBHOOK_KEY=$(head -c 32 /dev/urandom | base64)

SERVER_PID=
SQLITE_DIR=

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# A PostgreSQL client program: on PATH, else the newest /usr/lib/postgresql/*/bin.
find_pg_tool() {
    local candidate
    if candidate=$(command -v "$1"); then
        echo "$candidate"
        return
    fi
    candidate=$(ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1 || true)
    [[ -n $candidate ]] || die "$1 not found (apt-get install -y postgresql-client postgresql-contrib)"
    echo "$candidate"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# json_field FILE KEY: one top-level string or number from a JSON file.
json_field() {
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

stop_server() {
    [[ -n $SERVER_PID ]] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
}

cleanup() {
    local rc=$?
    trap - EXIT
    stop_server
    if [[ -n $SQLITE_DIR ]]; then rm -rf "$SQLITE_DIR"; fi
    if [[ -n ${PSQL:-} ]]; then
        "$PSQL" -X -q -d postgres -c "DROP DATABASE IF EXISTS $PG_SCRATCH_DB WITH (FORCE)" \
            >/dev/null 2>&1 || true
    fi
    ((rc == 0)) || log "failed (exit $rc); partial results in $OUT"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

server_alive() {
    kill -0 "$SERVER_PID" 2>/dev/null || {
        tail -n 30 "$SERVER_LOG" >&2 || true
        die "the server exited (log: $SERVER_LOG)"
    }
}

# start_server DATABASE_URL LOGFILE APPROVAL_DELAY_MS TTL_SECONDS: serves on a free loopback
# port; sets BASE, API, MALIPO_ENV, SERVER_PID, SERVER_LOG.
start_server() {
    local url=$1 port
    port=$(free_port)
    BASE=http://127.0.0.1:$port
    API=$BASE/api/v1
    MALIPO_ENV=(
        MALIPO_DATABASE_URL="$url"
        MALIPO_BIND="127.0.0.1:$port"
        MALIPO_RATE_LIMIT_TEST=1000000
        MALIPO_RATE_LIMIT_LIVE=1000000
        MALIPO_SANDBOX_APPROVAL_DELAY_MS="$3"
        MALIPO_CHARGE_TTL_SECONDS="$4"
        MALIPO_LOG=warn
        # PostgreSQL deployments must be given the key that seals webhook secrets (one per run).
        MALIPO_WEBHOOK_KEY="$BENCH_WEBHOOK_KEY"
    )
    SERVER_LOG=$2
    env "${MALIPO_ENV[@]}" "$MALIPO" serve >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 600); do
        server_alive
        if curl -fsS -o /dev/null --max-time 2 "$BASE/readyz" 2>/dev/null; then
            log "server pid $SERVER_PID ready at $BASE (approval delay $3 ms, TTL $4 s)"
            return
        fi
        sleep 0.1
    done
    die "server not ready after 60 s (log: $SERVER_LOG)"
}

record_rss() { # record_rss OUTFILE: the running server's peak RSS
    server_alive
    awk '/^VmHWM:/ { print "{\"vmhwm_kib\": " $2 "}" }' "/proc/$SERVER_PID/status" >"$1"
    log "  peak RSS: $(cat "$1")"
}

# create_merchant NAME: prints the new test credential as one JSON line.
create_merchant() {
    local printed
    printed=$(env "${MALIPO_ENV[@]}" timeout 60 "$MALIPO" org create --name "$1" --kind merchant \
        --json 2>>"$SERVER_LOG") || die "malipo org create --name $1 failed (log: $SERVER_LOG)"
    # The last JSON object printed (whether on one line or pretty-printed), compacted to one line.
    python3 -c '
import json, sys
text, found, i = sys.argv[1], None, 0
while (i := text.find("{", i)) >= 0:
    try:
        found, end = json.JSONDecoder().raw_decode(text, i)
        i = end
    except ValueError:
        i += 1
if not (isinstance(found, dict) and found.get("client_id") and found.get("client_secret")):
    sys.exit("no credential in: " + text)
print(json.dumps(found))' "$printed" || die "malipo org create printed no credential"
}

# loadgen SECONDS_LIMIT OUTFILE ARGS...: one loadgen run, its JSON saved to OUTFILE.
loadgen() {
    local limit=$1 out=$2
    shift 2
    timeout "$limit" "$LOADGEN" "$@" >"$out"
    server_alive
}

charges() { # charges OUTFILE LIMIT ARGS...
    local out=$1 limit=$2
    shift 2
    loadgen "$limit" "$out" charges --base-url "$API" --client-id "$LOAD_ID" \
        --client-secret "$LOAD_SECRET" --concurrency "$CONCURRENCY" "$@"
    log "  $(basename "$out" .json): $(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("%.0f/s ok, p50 %.2f ms, p99 %.2f ms, errors %d" % (r["rate_per_sec"], r["p50_ms"], r["p99_ms"], r["errors"]))' "$out")"
}

pgbench_round() { # pgbench_round N
    "$PGBENCH" -n -M prepared -c "$CONCURRENCY" -j 2 -T "$ROUND_SECS" -f bench/charge.sql \
        "$PG_SCRATCH_DB" >"$OUT/pgbench-$1.txt" 2>"$OUT/pgbench-$1.err"
    log "  pgbench round $1: $(grep -E '^tps' "$OUT/pgbench-$1.txt" || echo 'no tps line')"
}

# run_backend NAME DATABASE_URL
run_backend() {
    local name=$1 url=$2 i
    DIR=$OUT/$name
    mkdir -p "$DIR"

    # Phase 1, lifecycle: the sandbox approves at once, background workers complete charges.
    log "== $name: lifecycle"
    start_server "$url" "$DIR/server-lifecycle.log" 0 90
    log "creating merchants"
    create_merchant bench-1 >"$DIR/load.jsonl"
    create_merchant bench-2 >"$DIR/lifecycle-1.jsonl"
    : >"$DIR/lifecycle-20.jsonl"
    for i in $(seq 3 22); do
        create_merchant "bench-$i" >>"$DIR/lifecycle-20.jsonl"
    done
    LOAD_ID=$(json_field "$DIR/load.jsonl" client_id)
    LOAD_SECRET=$(json_field "$DIR/load.jsonl" client_secret)

    log "seeding: 3,000 charges at 500/s, run to completion"
    charges "$DIR/seed.json" 60 --rate 500 --duration-secs 6
    loadgen 135 "$DIR/drain-seed.json" wait-idle --base-url "$API" \
        --credentials "$DIR/load.jsonl" --timeout-secs 120
    log "  drained: $(cat "$DIR/drain-seed.json")"
    if [[ $name == postgres ]]; then
        # Plans must be made on seeded tables; the statistics count from here.
        "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$PG_DB" -c 'ANALYZE' -c 'SELECT pg_stat_reset()' >/dev/null
    fi

    for i in 1 20; do
        log "lifecycle, $i merchant(s), $LIFECYCLE_COUNT charges"
        loadgen 150 "$DIR/lifecycle-$i.json" lifecycle --base-url "$API" \
            --credentials "$DIR/lifecycle-$i.jsonl" --count "$LIFECYCLE_COUNT" \
            --concurrency "$CONCURRENCY" --timeout-secs 120
        log "  $(cat "$DIR/lifecycle-$i.json")"
    done
    record_rss "$DIR/rss-lifecycle.json"
    stop_server

    # Phase 2, creation: approval an hour away, so no background work competes with creation
    # (pgbench, the baseline, does only the creation too) and nothing needs draining.
    log "== $name: creation"
    start_server "$url" "$DIR/server-creation.log" 3600000 7200
    log "creation paced at $PACED_RATE/s (10 s after 2 s warm-up)"
    charges "$DIR/paced.json" 60 --rate "$PACED_RATE" --warmup-secs 2 --duration-secs 10
    for i in $(seq "$ROUNDS"); do
        log "creation at full speed, round $i/$ROUNDS ($ROUND_SECS s after 1 s warm-up)"
        charges "$DIR/full-$i.json" 60 --warmup-secs 1 --duration-secs "$ROUND_SECS"
        if [[ $name == postgres ]]; then
            pgbench_round "$i"
        fi
    done
    record_rss "$DIR/rss-creation.json"
    if [[ $name == postgres ]]; then
        # Scans since the reset after seeding, with exact row counts (the statistics' own are
        # reset too): sequential scans reading many rows each mean a bad plan.
        "$PSQL" -X -At -v ON_ERROR_STOP=1 -d "$PG_DB" -c "SELECT coalesce(json_agg(json_build_object(
                'table', relname, 'seq_scan', seq_scan, 'seq_tup_read', seq_tup_read,
                'idx_scan', coalesce(idx_scan, 0),
                'rows', (xpath('/row/c/text()', query_to_xml(
                    format('SELECT count(*) AS c FROM %I.%I', schemaname, relname), false, true, '')))[1]::text::bigint
            ) ORDER BY relname), '[]') FROM pg_stat_user_tables" >"$DIR/table-scans.json"
    fi
    stop_server
}

# ---------------------------------------------------------------------------------------------
for tool in cargo python3 curl timeout; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
PSQL=$(find_pg_tool psql)
PGBENCH=$(find_pg_tool pgbench)
"$PSQL" -X -q -d postgres -c 'SELECT 1' >/dev/null \
    || die "PostgreSQL not reachable as $PGUSER@$PGHOST:$PGPORT"

rm -rf "$OUT"
mkdir -p "$OUT"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)

if [[ ${BENCH_SKIP_BUILD:-0} != 1 ]]; then
    log "building release binaries"
    cargo build --release -p malipo -p malipo-loadgen
fi
[[ -x $MALIPO ]] || die "$MALIPO missing"
[[ -x $LOADGEN ]] || die "$LOADGEN missing"

python3 - "$OUT/meta.json" <<EOF
import json, os, platform, subprocess, sys
def run(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except Exception:
        return None
cpu = None
try:
    cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
except Exception:
    pass
mem_kib = None
try:
    mem_kib = int(next(l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")))
except Exception:
    pass
json.dump({
    "started": "$STARTED",
    "command": os.environ.get("BENCH_COMMAND", "bench/run.sh"),
    "nproc": int(run("nproc") or 0) or None,
    "cpu": cpu,
    "mem_total_kib": mem_kib,
    "kernel": platform.release(),
    "git_commit": run("git", "rev-parse", "--short", "HEAD"),
    "git_dirty": bool(run("git", "status", "--porcelain")),
    "rustc": run("rustc", "--version"),
    "postgres": run("$PSQL", "-X", "-At", "-d", "postgres", "-c", "SHOW server_version"),
    "pgbench": run("$PGBENCH", "--version"),
    "rounds": $ROUNDS,
    "round_secs": $ROUND_SECS,
    "concurrency": $CONCURRENCY,
    "paced_rate": $PACED_RATE,
    "lifecycle_count": $LIFECYCLE_COUNT,
}, open(sys.argv[1], "w"), indent=2)
EOF

log "pgbench scratch database $PG_SCRATCH_DB"
PGOPTIONS='-c client_min_messages=warning' "$PSQL" -X -q -d postgres \
    -c "DROP DATABASE IF EXISTS $PG_SCRATCH_DB WITH (FORCE)" -c "CREATE DATABASE $PG_SCRATCH_DB"
PGOPTIONS='-c client_min_messages=warning' \
    "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$PG_SCRATCH_DB" -f bench/pgbench_schema.sql
"$PSQL" -X -v ON_ERROR_STOP=1 -d "$PG_SCRATCH_DB" -f bench/pgbench_plans.sql >"$OUT/pgbench-plans.txt"

PGOPTIONS='-c client_min_messages=warning' "$PSQL" -X -q -d postgres \
    -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" -c "CREATE DATABASE $PG_DB"
run_backend postgres "postgres://$PGUSER@$PGHOST:$PGPORT/$PG_DB"

SQLITE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/malipo-bench.XXXXXX")
run_backend sqlite "sqlite://$SQLITE_DIR/malipo.db"

date -u +%Y-%m-%dT%H:%M:%SZ | python3 -c 'import json, sys; p = sys.argv[1]; m = json.load(open(p)); m["finished"] = sys.stdin.read().strip(); json.dump(m, open(p, "w"), indent=2)' "$OUT/meta.json"
python3 bench/report.py "$OUT" "$REPORT"
log "done in ${SECONDS}s: $REPORT (raw results in $OUT)"
