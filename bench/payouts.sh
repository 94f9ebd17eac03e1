#!/usr/bin/env bash
# Money out: single payouts and a maker/checker bulk payout, on PostgreSQL and SQLite. Called by
# bench/run.sh (`just bench`), or on its own. Loopback only, bounded in time (every step has a time
# limit; about 4 minutes after the build with the defaults).
#
# For each backend it starts the release server on a fresh database (sandbox approval an hour
# away, so the only background work is the payouts'), creates two corporate organisations (one
# for single payouts, one for the batch, whose second credential, the checker, has only
# `bulk:approve`) and a merchant for the charge load, funds both payout accounts from the CLI, then
# BENCH_PAYOUTS_REPEATS times each:
#   - malipo-loadgen payouts: N payouts at full speed (C connections) -> created/s, creation
#     p50/p99, then the created -> final rate;
#   - malipo-loadgen bulk: charge creation alone for a baseline -> p50/p99; a CSV batch of M
#     distinct payees uploaded (timed), approved (timed), and paid to the end while the same charge
#     load runs -> time until every item is final, charge p50/p99 during the batch / baseline.
#     On PostgreSQL the active backends' wait events (pg_stat_activity) are sampled every 200 ms
#     meanwhile, so what bounds the batch is visible.
# Then `malipo ledger verify` checks the ledger. Results: BENCH_OUT/<backend>/{payouts,bulk,
# bulk-waits}-<i>.json, payouts-ledger.json, rss-payouts.json and BENCH_OUT/payouts-meta.json;
# bench/report.py turns them into the "Money out" section of docs/performance.md. This script never
# deletes BENCH_OUT (bench/run.sh starts it empty).
#
# Knobs (environment): BENCH_OUT (bench-out), BENCH_SKIP_BUILD (0), BENCH_MALIPO_BIN
# (target/release/malipo), BENCH_PAYOUTS_BACKENDS ("postgres sqlite"), BENCH_PAYOUTS_REPEATS (2),
# BENCH_PAYOUTS_COUNT (3000), BENCH_PAYOUTS_CONCURRENCY (32), BENCH_BULK_ITEMS (10000),
# BENCH_BULK_CHARGE_CONCURRENCY (8), BENCH_BULK_BASELINE_SECS (10), BENCH_BULK_TIMEOUT_SECS (120),
# PGHOST/PGPORT/PGUSER (127.0.0.1/5432/postgres).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

OUT=${BENCH_OUT:-$ROOT/bench-out}
MALIPO=${BENCH_MALIPO_BIN:-$ROOT/target/release/malipo}
LOADGEN=$ROOT/target/release/malipo-loadgen
BACKENDS=${BENCH_PAYOUTS_BACKENDS:-postgres sqlite}
REPEATS=${BENCH_PAYOUTS_REPEATS:-2}
COUNT=${BENCH_PAYOUTS_COUNT:-3000}
CONCURRENCY=${BENCH_PAYOUTS_CONCURRENCY:-32}
ITEMS=${BENCH_BULK_ITEMS:-10000}
CHARGE_CONCURRENCY=${BENCH_BULK_CHARGE_CONCURRENCY:-8}
BASELINE_SECS=${BENCH_BULK_BASELINE_SECS:-10}
BULK_TIMEOUT=${BENCH_BULK_TIMEOUT_SECS:-120}
# KES 10.00 a payout plus at most KES 13 of fee, twice over.
FUND_PAYOUTS=$((REPEATS * COUNT * 50))
FUND_BULK=$((REPEATS * ITEMS * 50))

export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
# Loopback connections without TLS (PGSSLMODE, read by libpq in pgbench, psql and the server
# alike): TLS to a database on the same machine protects nothing and cost a quarter of the CPU.
export PGSSLMODE=${PGSSLMODE:-disable}
PG_DB=malipo_bench_payouts
BENCH_WEBHOOK_KEY=$(head -c 32 /dev/urandom | base64)

SERVER_PID=
SAMPLER_PID=
SQLITE_DIR=

log() { printf '[payouts %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

find_pg_tool() {
    local candidate
    if candidate=$(command -v "$1"); then
        echo "$candidate"
        return
    fi
    candidate=$(ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1 || true)
    [[ -n $candidate ]] || die "$1 not found (apt-get install -y postgresql-client)"
    echo "$candidate"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

json_field() {
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

stop_sampler() {
    [[ -n $SAMPLER_PID ]] || return 0
    kill -TERM "$SAMPLER_PID" 2>/dev/null || true
    wait "$SAMPLER_PID" 2>/dev/null || true
    SAMPLER_PID=
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
    stop_sampler
    stop_server
    if [[ -n $SQLITE_DIR ]]; then rm -rf "$SQLITE_DIR"; fi
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

# start_server DATABASE_URL LOGFILE: sets BASE, API, MALIPO_ENV, SERVER_PID, SERVER_LOG.
start_server() {
    local port
    port=$(free_port)
    BASE=http://127.0.0.1:$port
    API=$BASE/api/v1
    MALIPO_ENV=(
        MALIPO_DATABASE_URL="$1"
        MALIPO_BIND="127.0.0.1:$port"
        MALIPO_RATE_LIMIT_TEST=1000000
        MALIPO_RATE_LIMIT_LIVE=1000000
        # The charge load's charges stay pending: no sandbox approval or expiry work competes
        # with the payouts.
        MALIPO_SANDBOX_APPROVAL_DELAY_MS=3600000
        MALIPO_CHARGE_TTL_SECONDS=7200
        MALIPO_LOG=warn
        MALIPO_WEBHOOK_KEY="$BENCH_WEBHOOK_KEY"
    )
    SERVER_LOG=$2
    env "${MALIPO_ENV[@]}" "$MALIPO" serve >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 600); do
        server_alive
        if curl -fsS -o /dev/null --max-time 2 "$BASE/readyz" 2>/dev/null; then
            log "server pid $SERVER_PID ready at $BASE"
            return
        fi
        sleep 0.1
    done
    die "server not ready after 60 s (log: $SERVER_LOG)"
}

record_rss() {
    server_alive
    awk '/^VmHWM:/ { print "{\"vmhwm_kib\": " $2 "}" }' "/proc/$SERVER_PID/status" >"$1"
    log "  peak RSS: $(cat "$1")"
}

# last_credential TEXT: the last JSON object with client_id and client_secret in TEXT, one line.
last_credential() {
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
print(json.dumps(found))' "$1"
}

# cli LIMIT ARGS...: one `malipo` command against the running server's database; prints stdout.
cli() {
    local limit=$1
    shift
    env "${MALIPO_ENV[@]}" timeout "$limit" "$MALIPO" "$@" 2>>"$SERVER_LOG" \
        || die "malipo $* failed (log: $SERVER_LOG)"
}

create_org() { # create_org NAME KIND: the new organisation's test credential, one JSON line
    last_credential "$(cli 60 org create --name "$1" --kind "$2" --json)"
}

loadgen() { # loadgen SECONDS_LIMIT OUTFILE ARGS...
    local limit=$1 out=$2
    shift 2
    timeout "$limit" "$LOADGEN" "$@" >"$out"
    server_alive
}

# start_sampler OUTFILE: PostgreSQL only; every 200 ms, the wait event of each client backend of
# the server's database that is running a statement or idle inside a transaction (the app holding
# locks between statements), one `type|event|query prefix|blockers` line each (blockers: for a
# lock wait, what the backends holding the lock are doing), then a `sample` line.
start_sampler() {
    printf '%s\n\\watch 0.2\n' "SELECT CASE WHEN a.state = 'active' THEN coalesce(a.wait_event_type, 'CPU')
            ELSE 'IdleInTransaction' END, coalesce(a.wait_event, 'running'),
        regexp_replace(translate(left(a.query, 160), '|', '/'), '\s+', ' ', 'g'),
        CASE WHEN a.wait_event_type = 'Lock' THEN (SELECT string_agg(CASE WHEN b.state = 'active'
            THEN coalesce(b.wait_event_type || ':' || b.wait_event, 'CPU') ELSE b.state END || ' in '
            || regexp_replace(translate(left(b.query, 60), '|', '/'), '\s+', ' ', 'g'), '; ')
            FROM pg_stat_activity b WHERE b.pid = ANY (pg_blocking_pids(a.pid))) END
        FROM pg_stat_activity a
        WHERE a.datname = '$PG_DB' AND a.backend_type = 'client backend'
        AND a.state IN ('active', 'idle in transaction') AND a.pid <> pg_backend_pid()
        UNION ALL SELECT 'sample', (extract(epoch FROM clock_timestamp()) * 1000)::bigint::text, '', ''" \
        | timeout $((BULK_TIMEOUT + BASELINE_SECS + 200)) "$PSQL" -X -At -F '|' -d "$PG_DB" >"$1" 2>/dev/null &
    SAMPLER_PID=$!
}

# summarise_waits RAW BULK_JSON OUTFILE: over the samples taken while the batch was paid (from the
# approval to the end, per the bulk run's wall-clock bounds), counts of wait events, and per kind
# of wait (a lock, an idle transaction) the commonest statements.
summarise_waits() {
    python3 -c '
import collections, json, sys
bulk = json.load(open(sys.argv[2]))
lo, hi = bulk.get("approve_sent_unix_ms"), bulk.get("done_unix_ms")
samples, events, rows, blockers = 0, collections.Counter(), [], collections.Counter()
queries = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1], errors="replace"):
    parts = line.rstrip("\n").split("|", 3)
    if len(parts) < 4:
        continue
    if parts[0] != "sample":
        rows.append(parts)
        continue
    at = int(parts[1]) if parts[1].isdigit() else None
    if at is not None and lo is not None and hi is not None and lo <= at <= hi:
        samples += 1
        for kind, event, query, blocker in rows:
            events[kind + ":" + event] += 1
            queries[kind][query] += 1
            if blocker:
                blockers[blocker] += 1
    rows = []
res = {
    "samples": samples,
    "busy_per_sample": sum(events.values()) / samples if samples else None,
    "wait_events": dict(events.most_common()),
    "top_queries": {kind: [{"query": q, "count": n} for q, n in c.most_common(4)] for kind, c in queries.items()},
    "lock_blockers": [{"blocker": q, "count": n} for q, n in blockers.most_common(5)],
}
json.dump(res, open(sys.argv[3], "w"), indent=2)
print(json.dumps({"samples": samples, "busy_per_sample": res["busy_per_sample"], "wait_events": dict(events.most_common(6))}))' "$1" "$2" "$3"
}

# run_backend NAME DATABASE_URL
run_backend() {
    local name=$1 url=$2 i payouts_org bulk_org
    DIR=$OUT/$name
    BACKEND=$name
    mkdir -p "$DIR"
    log "== $name: money out"
    start_server "$url" "$DIR/server-payouts.log"

    create_org bench-payouts corporate >"$DIR/payouts-org.jsonl"
    create_org bench-bulk corporate >"$DIR/bulk-maker.jsonl"
    create_org bench-bulk-charges merchant >"$DIR/bulk-charges.jsonl"
    payouts_org=$(json_field "$DIR/payouts-org.jsonl" organisation_id)
    bulk_org=$(json_field "$DIR/bulk-maker.jsonl" organisation_id)
    last_credential "$(cli 60 credentials issue --org "$bulk_org" --mode test --scopes "bulk:approve" --json)" \
        >"$DIR/bulk-checker.jsonl"
    cli 60 account fund --org "$payouts_org" --mode test --amount "$FUND_PAYOUTS" >"$DIR/payouts-fund.txt"
    cli 60 account fund --org "$bulk_org" --mode test --amount "$FUND_BULK" >"$DIR/bulk-fund.txt"
    log "organisations created; payout accounts funded with KES $FUND_PAYOUTS and KES $FUND_BULK"

    for i in $(seq "$REPEATS"); do
        log "payouts $i/$REPEATS: $COUNT at $CONCURRENCY connections, then run to the end"
        loadgen 240 "$DIR/payouts-$i.json" payouts --base-url "$API" \
            --client-id "$(json_field "$DIR/payouts-org.jsonl" client_id)" \
            --client-secret "$(json_field "$DIR/payouts-org.jsonl" client_secret)" \
            --count "$COUNT" --concurrency "$CONCURRENCY" --timeout-secs 150
        log "  $(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("created %.0f/s (p50 %.2f ms, p99 %.2f ms, %d errors), lifecycle %s/s, %d completed, %d failed, %d unfinished" % (r["created_per_sec"], r["create_p50_ms"], r["create_p99_ms"], r["create_errors"], "n/a" if r["lifecycle_per_sec"] is None else "%.0f" % r["lifecycle_per_sec"], r["completed"], r["failed"], r["unfinished"]))' "$DIR/payouts-$i.json")"
    done

    for i in $(seq "$REPEATS"); do
        log "bulk $i/$REPEATS: $ITEMS items; charge load at concurrency $CHARGE_CONCURRENCY, baseline $BASELINE_SECS s"
        if [[ $name == postgres ]]; then
            start_sampler "$DIR/bulk-waits-$i.raw"
        fi
        loadgen $((BASELINE_SECS + BULK_TIMEOUT + 180)) "$DIR/bulk-$i.json" bulk --base-url "$API" \
            --maker-id "$(json_field "$DIR/bulk-maker.jsonl" client_id)" \
            --maker-secret "$(json_field "$DIR/bulk-maker.jsonl" client_secret)" \
            --checker-id "$(json_field "$DIR/bulk-checker.jsonl" client_id)" \
            --checker-secret "$(json_field "$DIR/bulk-checker.jsonl" client_secret)" \
            --charge-client-id "$(json_field "$DIR/bulk-charges.jsonl" client_id)" \
            --charge-client-secret "$(json_field "$DIR/bulk-charges.jsonl" client_secret)" \
            --items "$ITEMS" --charge-concurrency "$CHARGE_CONCURRENCY" \
            --baseline-secs "$BASELINE_SECS" --timeout-secs "$BULK_TIMEOUT"
        if [[ $name == postgres ]]; then
            stop_sampler
            log "  waits: $(summarise_waits "$DIR/bulk-waits-$i.raw" "$DIR/bulk-$i.json" "$DIR/bulk-waits-$i.json")"
        fi
        log "  $(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("upload %.2f s, approve %.3f s, all final after %.1f s (%s: %d completed, %d failed, %d pending), charge p99 %.2f -> %.2f ms (x%.2f)" % (r["upload_secs"], r["approve_secs"], r["all_final_secs"], r["state"], r["completed"], r["failed"], r["pending"], r["baseline"]["p99_ms"], r["during"]["p99_ms"], r["p99_ratio"] or 0))' "$DIR/bulk-$i.json")"
        if [[ $(json_field "$DIR/bulk-$i.json" timed_out) == True ]]; then
            # Its remaining items are still being paid: a further run would measure both batches.
            log "  the batch did not finish within $BULK_TIMEOUT s; no further bulk run on $name"
            break
        fi
    done
    record_rss "$DIR/rss-payouts.json"

    log "ledger verify"
    local rc=0
    env "${MALIPO_ENV[@]}" timeout 180 "$MALIPO" ledger verify --mode test --json >"$DIR/payouts-ledger.json" \
        2>>"$SERVER_LOG" || rc=$?
    echo "{\"exit\": $rc}" >"$DIR/payouts-ledger-exit.json"
    log "  exit $rc: $(head -c 300 "$DIR/payouts-ledger.json")"
    stop_server
}

# ---------------------------------------------------------------------------------------------
for tool in cargo python3 curl timeout; do
    command -v "$tool" >/dev/null || die "$tool not found"
done
mkdir -p "$OUT"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)

if [[ ${BENCH_SKIP_BUILD:-0} != 1 ]]; then
    log "building release binaries"
    cargo build --release -p malipo && cargo build --release -p malipo-loadgen
fi
[[ -x $MALIPO ]] || die "$MALIPO missing"
[[ -x $LOADGEN ]] || die "$LOADGEN missing"

write_meta() {
    python3 - "$OUT/payouts-meta.json" "$1" <<EOF
import json, os, subprocess, sys
path, finished = sys.argv[1], sys.argv[2] or None
def run(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except Exception:
        return None
json.dump({
    "started": "$STARTED",
    "finished": finished,
    "command": os.environ.get("BENCH_PAYOUTS_COMMAND", "bench/payouts.sh"),
    "nproc": int(run("nproc") or 0) or None,
    "git_commit": run("git", "rev-parse", "--short", "HEAD"),
    "git_dirty": bool(run("git", "status", "--porcelain")),
    "backends": "$BACKENDS".split(),
    "repeats": $REPEATS,
    "count": $COUNT,
    "concurrency": $CONCURRENCY,
    "items": $ITEMS,
    "charge_concurrency": $CHARGE_CONCURRENCY,
    "baseline_secs": $BASELINE_SECS,
    "bulk_timeout_secs": $BULK_TIMEOUT,
    "amount": "10.00",
}, open(path, "w"), indent=2)
EOF
}
write_meta ""

for backend in $BACKENDS; do
    case $backend in
    postgres)
        PSQL=$(find_pg_tool psql)
        "$PSQL" -X -q -d postgres -c 'SELECT 1' >/dev/null \
            || die "PostgreSQL not reachable as $PGUSER@$PGHOST:$PGPORT"
        PGOPTIONS='-c client_min_messages=warning' "$PSQL" -X -q -d postgres \
            -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" -c "CREATE DATABASE $PG_DB"
        run_backend postgres "postgres://$PGUSER@$PGHOST:$PGPORT/$PG_DB"
        ;;
    sqlite)
        SQLITE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/malipo-payouts.XXXXXX")
        run_backend sqlite "sqlite://$SQLITE_DIR/malipo.db"
        rm -rf "$SQLITE_DIR"
        SQLITE_DIR=
        ;;
    *) die "unknown backend $backend (postgres, sqlite)" ;;
    esac
done

write_meta "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
log "done in ${SECONDS}s (results in $OUT)"
