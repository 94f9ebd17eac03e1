#!/usr/bin/env bash
# The Malipo benchmark (`just bench`). Loopback only, bounded in time (about 8 minutes after the
# build, half of it money out; every step has a time limit).
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
#   - webhooks, on the lifecycle server after its runs: a local receiver (malipo-loadgen receiver)
#     acknowledges at once; deliveries/s after a full-speed lifecycle run and from a backlog (a
#     redelivery of each of its events, queued with malipo-loadgen redeliver through an instance that
#     sends none while the server is stopped, then drained by the server started again), and the lag from a
#     charge.completed event to its acknowledged delivery (p50/p99) with charges paced at 200/s,
#     both read from the database (events, delivery_attempts);
#   - USSD approvals in live mode, on the lifecycle server after the webhooks: live organisations
#     from the CLI (operator, agent with a funded float, gateway, merchant), then
#     malipo-loadgen ussd: customers' wallets opened, PINs set and cashed in, then live charges
#     each approved in one USSD session ("", 3, 3*1, 3*1*1, 3*1*1*PIN) -> approvals/s, hop and PIN
#     hop p50/p99;
#   - the server's peak RSS (VmHWM) in each phase;
#   - then money out, by bench/payouts.sh on servers and databases of its own (see there): single
#     payouts created/s and created -> final, and a 10,000-item CSV bulk payout (upload, approval,
#     time until every item is final, charge-creation p99 while it is paid over the p99 without);
#   - then bench/transactions.sh (a million transactions), bench/token-flood.sh (a legitimate client
#     beside a flood of wrong secrets), bench/console.sh (the console's pages over a million charges,
#     sign-in, a flood of wrong passwords), bench/console_apps.sh (the agent's page weights and the
#     10,000-row bulk preview, from two HTTP tests in a release build), bench/failover.sh (the failover
#     test three times on a three-node Patroni cluster), bench/replication.sh (the synchronous pair's
#     lifecycle rate, charge p99 beside an export on a standby or the primary) and bench/intake.sh (60 s of full-speed charge intake on
#     PostgreSQL with and without the backlog gate) and bench/sustained.sh (60 s of full-speed intake
#     with the sandbox approving at once, one merchant and twenty, every payment completed, beside
#     pgbench's TPC-B-like transaction at scale 32), each on servers and databases of its own.
# Every result lands as a file in bench-out/ (git-ignored); bench/report.py turns that one run into
# docs/performance.md. Nothing in the document is typed by hand.
#
# Knobs (environment): BENCH_OUT (bench-out), BENCH_ROUNDS (3), BENCH_ROUND_SECS (5),
# BENCH_LIFECYCLE_COUNT (3000), BENCH_LIFECYCLE_ROUNDS (3), BENCH_SKIP_BUILD (0),
# BENCH_MALIPO_BIN (target/release/malipo),
# BENCH_REPORT (docs/performance.md), BENCH_CORE_ONLY (0), BENCH_USSD_SECS (25), BENCH_USSD_CUSTOMERS (50),
# BENCH_USSD_CONCURRENCY (8), PGHOST/PGPORT/PGUSER (127.0.0.1/5432/postgres), and bench/payouts.sh's
# own (BENCH_PAYOUTS_*, BENCH_BULK_*).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

OUT=${BENCH_OUT:-$ROOT/bench-out}
REPORT=${BENCH_REPORT:-$ROOT/docs/performance.md}
ROUNDS=${BENCH_ROUNDS:-3}
ROUND_SECS=${BENCH_ROUND_SECS:-5}
LIFECYCLE_COUNT=${BENCH_LIFECYCLE_COUNT:-3000}
LIFECYCLE_ROUNDS=${BENCH_LIFECYCLE_ROUNDS:-3}
MALIPO=${BENCH_MALIPO_BIN:-$ROOT/target/release/malipo}
LOADGEN=$ROOT/target/release/malipo-loadgen
CONCURRENCY=32
PACED_RATE=1000
USSD_SECS=${BENCH_USSD_SECS:-25}
USSD_CUSTOMERS=${BENCH_USSD_CUSTOMERS:-50}
USSD_CONCURRENCY=${BENCH_USSD_CONCURRENCY:-8}

export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
# Loopback connections without TLS (PGSSLMODE, read by libpq in pgbench, psql and the server
# alike): TLS to a database on the same machine protects nothing and cost a quarter of the CPU.
export PGSSLMODE=${PGSSLMODE:-disable}
PG_DB=malipo_bench          # the server's database
PG_SCRATCH_DB=malipo_pgbench # pgbench's tables (bench/pgbench_schema.sql)
BENCH_WEBHOOK_KEY=$(head -c 32 /dev/urandom | base64)

SERVER_PID=
SERVER_EXTRA_ENV=()
RECEIVER_PID=
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
    if [[ -n $RECEIVER_PID ]]; then kill -TERM "$RECEIVER_PID" 2>/dev/null || true; fi
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
        "${SERVER_EXTRA_ENV[@]}"
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

# last_credential TEXT: the last JSON object with client_id and client_secret in TEXT (whether
# printed on one line or pretty-printed), compacted to one line.
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

# create_org NAME KIND: prints the new organisation's test credential as one JSON line.
create_org() {
    local printed
    printed=$(env "${MALIPO_ENV[@]}" timeout 60 "$MALIPO" org create --name "$1" --kind "$2" \
        --json 2>>"$SERVER_LOG") || die "malipo org create --name $1 --kind $2 failed (log: $SERVER_LOG)"
    last_credential "$printed" || die "malipo org create printed no credential"
}

# create_merchant NAME: prints the new test credential as one JSON line.
create_merchant() { create_org "$1" merchant; }

# issue_live ORG_ID: prints a new live credential of the organisation as one JSON line.
issue_live() {
    local printed
    printed=$(env "${MALIPO_ENV[@]}" timeout 60 "$MALIPO" credentials issue --org "$1" --mode live \
        --json 2>>"$SERVER_LOG") || die "malipo credentials issue --org $1 --mode live failed (log: $SERVER_LOG)"
    last_credential "$printed" || die "malipo credentials issue printed no credential"
}

# median_round OUTFILE ROUND_FILES...: the round with the median lifecycle rate, with every
# round's rate added as "rounds_per_sec" (a failed round counts as 0/s).
median_round() {
    local out=$1
    shift
    python3 - "$out" "$@" <<'PY'
import json, sys
out, files = sys.argv[1], sys.argv[2:]
runs = []
for f in files:
    try:
        runs.append(json.load(open(f)))
    except (OSError, ValueError):
        runs.append({"lifecycle_per_sec": 0})
rates = [r.get("lifecycle_per_sec") or 0 for r in runs]
median = sorted(range(len(runs)), key=lambda k: rates[k])[len(runs) // 2]
json.dump(dict(runs[median], rounds_per_sec=rates), open(out, "w"))
PY
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

# db_rows SQL: the rows of one query on the current backend's database, tab-separated (same SQL on
# both backends; SQLite is read with Python's sqlite3 module while the server runs).
db_rows() {
    if [[ $BACKEND == postgres ]]; then
        "$PSQL" -X -At -F $'\t' -v ON_ERROR_STOP=1 -d "$PG_DB" -c "$1"
    else
        python3 -c '
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True, timeout=30)
for row in db.execute(sys.argv[2]):
    print("\t".join("" if v is None else str(v) for v in row))' "$SQLITE_PATH" "$1"
    fi
}

# wait_deliveries ORG_ID SINCE_US LIMIT_SECS: until every charge.completed event of the org created
# at or after SINCE_US has a succeeded delivery (or the limit). Prints the JSON of the wait.
wait_deliveries() {
    local org=$1 since=$2 limit=$3 left start=$SECONDS
    while :; do
        left=$(db_rows "SELECT count(*) FROM events e WHERE e.org_id = '$org' AND e.kind = 'charge.completed'
            AND e.created_at >= $since AND NOT EXISTS (SELECT 1 FROM deliveries d
            WHERE d.event_id = e.id AND d.state = 'succeeded')")
        if ((left == 0)); then
            echo "{\"done\": true, \"waited_secs\": $((SECONDS - start))}"
            return
        fi
        if ((SECONDS - start >= limit)); then
            echo "{\"done\": false, \"undelivered\": $left, \"waited_secs\": $((SECONDS - start))}"
            return
        fi
        sleep 0.25
    done
}

# backlog_wait SINCE_US N LIMIT_SECS: until the endpoint ($endpoint) has N successful attempts
# at or after SINCE_US and none pending (or the limit). Prints the JSON of the wait.
backlog_wait() {
    local since=$1 want=$2 limit=$3 got start=$SECONDS
    while :; do
        got=$(db_rows "SELECT count(*) FROM delivery_attempts WHERE endpoint_id = '$endpoint'
            AND attempted_at >= $since AND status = 200")
        if ((got >= want)); then
            echo "{\"done\": true, \"waited_secs\": $((SECONDS - start))}"
            return
        fi
        if ((SECONDS - start >= limit)); then
            echo "{\"done\": false, \"delivered\": $got, \"waited_secs\": $((SECONDS - start))}"
            return
        fi
        sleep 0.25
    done
}

# webhook_stats KIND OUTFILE: summarises tab-separated rows (event created_at, first 200 attempt's
# attempted_at, its latency_ms, attempts of the event) on stdin into OUTFILE. KIND "throughput":
# deliveries/s over the span of the successful attempts; "lag": acknowledged-at minus event
# created_at, p50/p99 (nearest rank).
webhook_stats() {
    python3 -c '
import json, math, sys
kind, out = sys.argv[1], sys.argv[2]
rows = [l.rstrip("\n").split("\t") for l in sys.stdin if l.strip()]
created = [int(r[0]) for r in rows]
ok = [(int(r[0]), int(r[1]), int(r[2])) for r in rows if r[1] != ""]
attempts = sum(int(r[3] or 0) for r in rows)
res = {"events": len(rows), "delivered": len(ok), "undelivered": len(rows) - len(ok), "attempts": attempts}
if kind == "throughput":
    if len(ok) >= 2:
        first, last = min(a for _, a, _ in ok), max(a for _, a, _ in ok)
        res["span_secs"] = (last - first) / 1e6
        res["deliveries_per_sec"] = len(ok) / res["span_secs"] if last > first else None
        span = (max(created) - min(created)) / 1e6
        res["events_span_secs"] = span
        res["events_per_sec"] = len(rows) / span if span > 0 else None
else:
    lags = sorted(a + l * 1000 - c for c, a, l in ok)
    def pct(p):
        return lags[max(0, math.ceil(p / 100 * len(lags)) - 1)] / 1000 if lags else None
    res.update({"p50_ms": pct(50), "p99_ms": pct(99), "max_ms": lags[-1] / 1000 if lags else None})
    span = (max(created) - min(created)) / 1e6 if len(created) >= 2 else 0
    res["completions_per_sec"] = len(rows) / span if span > 0 else None
json.dump(res, open(out, "w"), indent=2)
print(json.dumps(res))' "$1" "$2"
}

# webhook_rows ORG_ID SINCE_US: per charge.completed event of the org since SINCE_US, its
# created_at and its first 200 attempt (attempted_at, latency_ms), and its number of attempts.
webhook_rows() {
    db_rows "SELECT e.created_at, a.attempted_at, a.latency_ms,
            (SELECT count(*) FROM delivery_attempts x WHERE x.event_id = e.id)
        FROM events e LEFT JOIN delivery_attempts a ON a.id = (SELECT min(y.id) FROM delivery_attempts y
            WHERE y.event_id = e.id AND y.status = 200)
        WHERE e.org_id = '$1' AND e.kind = 'charge.completed' AND e.created_at >= $2"
}

now_us() { python3 -c 'import time; print(time.time_ns() // 1000)'; }

# webhook_phase: on the running lifecycle server (approval delay 0), after its other runs.
webhook_phase() {
    local port recv_pid creds org id secret token since since_backlog endpoint
    log "webhooks: receiver, endpoint for a dedicated merchant"
    port=$(free_port)
    "$LOADGEN" receiver --port "$port" --duration-secs 400 >"$DIR/webhook-receiver.json" \
        2>"$DIR/webhook-receiver.log" &
    recv_pid=$!
    RECEIVER_PID=$recv_pid
    for _ in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
    done
    create_merchant bench-webhooks >"$DIR/webhooks.jsonl"
    creds=$DIR/webhooks.jsonl
    org=$(json_field "$creds" organisation_id)
    id=$(json_field "$creds" client_id)
    secret=$(json_field "$creds" client_secret)
    token=$(curl -fsS --max-time 10 -H 'content-type: application/json' \
        -d "{\"client_id\": \"$id\", \"client_secret\": \"$secret\"}" "$API/oauth/token" \
        | python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])') \
        || die "no token for the webhook merchant"
    curl -fsS --max-time 10 -H "authorization: Bearer $token" -H 'content-type: application/json' \
        -H "Idempotency-Key: $(python3 -c 'import uuid; print(uuid.uuid4())')" \
        -d "{\"url\": \"http://127.0.0.1:$port/hook\", \"events\": [\"charge.completed\"]}" \
        "$API/webhooks/endpoints" >"$DIR/webhook-endpoint.json" \
        || die "registering the webhook endpoint failed"
    endpoint=$(json_field "$DIR/webhook-endpoint.json" endpoint_id)
    log "  endpoint $endpoint -> 127.0.0.1:$port"

    log "webhooks: throughput, lifecycle of $LIFECYCLE_COUNT charges at full speed"
    since=$(now_us)
    loadgen 150 "$DIR/webhook-lifecycle.json" lifecycle --base-url "$API" --credentials "$creds" \
        --count "$LIFECYCLE_COUNT" --concurrency "$CONCURRENCY" --timeout-secs 120
    wait_deliveries "$org" "$since" 120 >"$DIR/webhook-wait-throughput.json"
    webhook_rows "$org" "$since" | webhook_stats throughput "$DIR/webhook-throughput.json" >/dev/null
    log "  as completed: $(tr -d '\n ' <"$DIR/webhook-throughput.json")"
    # Those deliveries followed the completions, so they show the completion rate. Now a backlog:
    # a redelivery of each of those events, queued through an instance that sends no webhooks
    # (MALIPO_WEBHOOK_CONCURRENCY=0, MALIPO_WORKERS=0) while the lifecycle server is stopped, so
    # that all of them are due before any is sent; then the server starts again on the same
    # database and drains them. The successful attempts are counted over their own span.
    log "webhooks: backlog, redelivering those events through an instance that sends none"
    local lifecycle_url=${MALIPO_ENV[0]#MALIPO_DATABASE_URL=}
    stop_server
    SERVER_EXTRA_ENV=(MALIPO_WORKERS=0 MALIPO_WEBHOOK_CONCURRENCY=0)
    start_server "$lifecycle_url" "$DIR/server-queue.log" 0 90
    SERVER_EXTRA_ENV=()
    if [[ $BACKEND == postgres ]]; then
        # The webhook tables were empty at the seeding ANALYZE; plan them on what they now hold,
        # as autovacuum would in a running system.
        "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$PG_DB" -c 'ANALYZE events, deliveries, delivery_attempts, webhook_endpoints' >/dev/null
    fi
    db_rows "SELECT id FROM events WHERE org_id = '$org' AND kind = 'charge.completed'
        AND created_at >= $since" >"$DIR/webhook-backlog-ids.txt"
    since_backlog=$(now_us)
    loadgen 120 "$DIR/webhook-redeliver.json" redeliver --base-url "$API" --client-id "$id" \
        --client-secret "$secret" --ids "$DIR/webhook-backlog-ids.txt" --concurrency "$CONCURRENCY"
    log "  queued: $(cat "$DIR/webhook-redeliver.json")"
    stop_server
    start_server "$lifecycle_url" "$DIR/server-lifecycle-2.log" 0 90
    backlog_wait "$since_backlog" "$(wc -l <"$DIR/webhook-backlog-ids.txt")" 120 \
        >"$DIR/webhook-wait-backlog.json"
    db_rows "SELECT attempted_at, status FROM delivery_attempts WHERE endpoint_id = '$endpoint'
        AND attempted_at >= $since_backlog" | python3 -c '
import json, sys
rows = [l.split("\t") for l in sys.stdin if l.strip()]
ok = sorted(int(a) for a, s in rows if s.strip() == "200")
res = {"attempts": len(rows), "delivered": len(ok), "expected": int(sys.argv[2])}
if len(ok) >= 2 and ok[-1] > ok[0]:
    res["span_secs"] = (ok[-1] - ok[0]) / 1e6
    res["deliveries_per_sec"] = len(ok) / res["span_secs"]
json.dump(res, open(sys.argv[1], "w"), indent=2)' "$DIR/webhook-backlog.json" \
        "$(wc -l <"$DIR/webhook-backlog-ids.txt")"
    log "  backlog: $(tr -d '\n ' <"$DIR/webhook-backlog.json")"

    log "webhooks: lag, charges at 200/s for 10 s"
    since=$(now_us)
    loadgen 60 "$DIR/webhook-paced.json" charges --base-url "$API" --client-id "$id" \
        --client-secret "$secret" --concurrency "$CONCURRENCY" --rate 200 --duration-secs 10
    loadgen 135 "$DIR/drain-webhooks-paced.json" wait-idle --base-url "$API" --credentials "$creds" \
        --timeout-secs 120
    wait_deliveries "$org" "$since" 120 >"$DIR/webhook-wait-lag.json"
    webhook_rows "$org" "$since" | webhook_stats lag "$DIR/webhook-lag.json" >/dev/null
    log "  $(cat "$DIR/webhook-lag.json" | tr -d '\n ')"

    kill -TERM "$recv_pid" 2>/dev/null || true
    wait "$recv_pid" 2>/dev/null || true
    RECEIVER_PID=
    log "  receiver: $(cat "$DIR/webhook-receiver.json")"
}

# ussd_phase: on the running lifecycle server, after the webhooks (so the figures before stay
# comparable): a live operator, agent (float funded), gateway and merchant, then live charges
# approved over the USSD menu (malipo-loadgen ussd: wallets opened and cashed in, then workers
# each push a charge to a customer and approve it in one session, PIN hop timed apart).
ussd_phase() {
    local kind org
    log "ussd: live operator, agent, gateway and merchant"
    for kind in operator agent gateway merchant; do
        create_org "bench-ussd-$kind" "$kind" >"$DIR/ussd-$kind-test.jsonl"
        org=$(json_field "$DIR/ussd-$kind-test.jsonl" organisation_id)
        issue_live "$org" >"$DIR/ussd-$kind.jsonl"
    done
    env "${MALIPO_ENV[@]}" timeout 60 "$MALIPO" account fund --mode live --amount 100000000 \
        --org "$(json_field "$DIR/ussd-agent.jsonl" organisation_id)" >"$DIR/ussd-fund.json" \
        2>>"$SERVER_LOG" || die "malipo account fund (the agent's live float) failed (log: $SERVER_LOG)"
    # A warm-up of 5 s first. On PostgreSQL, ussd_sessions was empty at the seeding ANALYZE, so its
    # lookup by primary key was planned as a sequential scan and kept so by every connection's
    # prepared statement (19,633 scans of ~1,926 rows in a run without this); analyze it once it
    # holds sessions, as autovacuum would in a running system (every hop updates a row).
    local -a ussd_args=(--base-url "$API"
        --operator-id "$(json_field "$DIR/ussd-operator.jsonl" client_id)"
        --operator-secret "$(json_field "$DIR/ussd-operator.jsonl" client_secret)"
        --agent-id "$(json_field "$DIR/ussd-agent.jsonl" client_id)"
        --agent-secret "$(json_field "$DIR/ussd-agent.jsonl" client_secret)"
        --gateway-id "$(json_field "$DIR/ussd-gateway.jsonl" client_id)"
        --gateway-secret "$(json_field "$DIR/ussd-gateway.jsonl" client_secret)"
        --merchant-id "$(json_field "$DIR/ussd-merchant.jsonl" client_id)"
        --merchant-secret "$(json_field "$DIR/ussd-merchant.jsonl" client_secret)"
        --customers "$USSD_CUSTOMERS" --concurrency "$USSD_CONCURRENCY" --balance 5000 --amount 10)
    log "ussd: warm-up, 5 s"
    loadgen 65 "$DIR/ussd-warmup.json" ussd "${ussd_args[@]}" --duration-secs 5
    if [[ $BACKEND == postgres ]]; then
        "$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$PG_DB" -c 'ANALYZE ussd_sessions' >/dev/null
    fi
    log "ussd: $USSD_CUSTOMERS customers, $USSD_CONCURRENCY sessions at a time, $USSD_SECS s"
    loadgen $((USSD_SECS + 60)) "$DIR/ussd.json" ussd "${ussd_args[@]}" --duration-secs "$USSD_SECS"
    log "  ussd: $(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("%d approved, %.1f/s, hop p50 %.2f ms p99 %.2f ms, PIN hop p50 %.2f ms p99 %.2f ms, errors %d, %d completed" % (r["sessions"], r["approvals_per_sec"], r["hop_p50_ms"], r["hop_p99_ms"], r["pin_hop_p50_ms"], r["pin_hop_p99_ms"], r["errors"], r["completed"]))' "$DIR/ussd.json")"
    record_rss "$DIR/rss-ussd.json"
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
    BACKEND=$name
    SQLITE_PATH=${url#sqlite://}
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

    # Rounds of 1 and 20 merchants alternating; each figure is the median round (one round is
    # one sample of a noisy machine: the one-merchant figure read 994/s in one run and 1,019-1,108/s
    # in three rounds right after).
    for round in $(seq "$LIFECYCLE_ROUNDS"); do
        for i in 1 20; do
            log "lifecycle, $i merchant(s), $LIFECYCLE_COUNT charges, round $round"
            loadgen 150 "$DIR/lifecycle-$i-r$round.json" lifecycle --base-url "$API" \
                --credentials "$DIR/lifecycle-$i.jsonl" --count "$LIFECYCLE_COUNT" \
                --concurrency "$CONCURRENCY" --timeout-secs 120
            log "  $(cat "$DIR/lifecycle-$i-r$round.json")"
        done
    done
    for i in 1 20; do
        median_round "$DIR/lifecycle-$i.json" "$DIR"/lifecycle-"$i"-r*.json
    done
    record_rss "$DIR/rss-lifecycle.json"
    # Phase 1b, webhooks: after the lifecycle figures, on the same server, so those stay comparable.
    webhook_phase
    # Phase 1c, USSD approvals in live mode: last on this server, so nothing above is disturbed.
    ussd_phase
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
    # Two builds, not one: built together, the load generator's features (serde_json's
    # arbitrary precision, through malipo-client) would be unified into the server's binary,
    # which would then differ from what `cargo build -p malipo` makes.
    cargo build --release -p malipo && cargo build --release -p malipo-loadgen
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

# BENCH_CORE_ONLY=1: the two backends' runs above alone (for a side-by-side of two builds), no
# report.
if [[ ${BENCH_CORE_ONLY:-0} == 1 ]]; then
    log "core runs done (BENCH_CORE_ONLY): $OUT"
    exit 0
fi

# Money out: its own servers on its own databases, after the rest, so nothing above is disturbed.
log "== money out: bench/payouts.sh"
BENCH_OUT=$OUT BENCH_SKIP_BUILD=1 BENCH_MALIPO_BIN=$MALIPO \
    BENCH_PAYOUTS_COMMAND="${BENCH_COMMAND:-bench/run.sh} (bench/payouts.sh)" timeout 1800 bash bench/payouts.sh

# Transactions at scale: a million seeded into one account, on databases of its own.
log "== transactions: bench/transactions.sh"
BENCH_OUT=$OUT BENCH_SKIP_BUILD=1 BENCH_MALIPO_BIN=$MALIPO timeout 1800 bash bench/transactions.sh

# Wrong client secrets against the token endpoint, and full-speed intake with backpressure.
log "== token flood: bench/token-flood.sh"
BENCH_OUT=$OUT timeout 900 bash bench/token-flood.sh "$MALIPO"
log "== console: bench/console.sh"
BENCH_OUT=$OUT timeout 1800 bash bench/console.sh "$MALIPO"
log "== console applications: bench/console_apps.sh"
BENCH_OUT=$OUT timeout 1800 bash bench/console_apps.sh
log "== database failover: bench/failover.sh"
BENCH_OUT=$OUT timeout 1800 bash bench/failover.sh
log "== synchronous replication and reports on the standbys: bench/replication.sh"
BENCH_OUT=$OUT BENCH_SKIP_BUILD=1 BENCH_MALIPO_BIN=$MALIPO BENCH_LOADGEN_BIN=$LOADGEN timeout 1800 bash bench/replication.sh
log "== full-speed intake: bench/intake.sh"
BENCH_OUT=$OUT timeout 1800 bash bench/intake.sh "$MALIPO" "$LOADGEN"
log "== sustained whole payments against TPC-B: bench/sustained.sh"
BENCH_OUT=$OUT timeout 1800 bash bench/sustained.sh "$MALIPO" "$LOADGEN"

date -u +%Y-%m-%dT%H:%M:%SZ | python3 -c 'import json, sys; p = sys.argv[1]; m = json.load(open(p)); m["finished"] = sys.stdin.read().strip(); json.dump(m, open(p, "w"), indent=2)' "$OUT/meta.json"
python3 bench/report.py "$OUT" "$REPORT"
log "done in ${SECONDS}s: $REPORT (raw results in $OUT)"
