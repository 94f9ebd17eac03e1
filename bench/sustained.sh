#!/usr/bin/env bash
# Sustained whole payments on PostgreSQL (issue 43): the rate a merchant gets for a minute on end,
# beside pgbench's TPC-B-like transaction on the same PostgreSQL in the same run.
#
#   bash bench/sustained.sh [MALIPO_BINARY] [LOADGEN_BINARY]   (defaults: target/release/…, built if absent)
#
# For each merchant count in BENCH_SUSTAINED_MERCHANTS (default "1 20"): a fresh database, the
# merchants (the CLI), the server with the sandbox approving at once
# (MALIPO_SANDBOX_APPROVAL_DELAY_MS=0), its default backlog bound (10 s) and the per-credential
# rate limit out of the way. `malipo-loadgen charges` creates charges with 32 connections as fast
# as the server takes them for BENCH_SUSTAINED_SECS (60), the requests spread round-robin over
# the merchants, each paid by one of BENCH_SUSTAINED_PAYERS (10,000) customers in turn, whose
# wallets the warm-up opened (0: a new random payer each, its wallet opened with the payment);
# then every accepted charge is left to reach a final state. Each is run with two
# clients (BENCH_SUSTAINED_CLIENTS, default "sdk hammer"): `sdk` waits the Retry-After of a 503
# before its next request, as malipo-client does; `hammer` sends again at once, as wrk does. From the database:
# the charges by state and the span from the first creation to the last completion; the
# whole-payment rate is the completed charges over that span. Refused requests (503, with
# Retry-After) come from the load generator's status counts; expired charges must be 0.
#
# The yardstick: `pgbench` TPC-B-like (its built-in script) at scale 32 with 16 clients and 2
# threads, `-M prepared`, BENCH_SUSTAINED_PGBENCH_SECS (30) a round, on a database of its own, run
# before, between and after the Malipo runs; its median is the run's TPC-B figure, and each rate
# is reported as a share of it. Where PostgreSQL loads pg_stat_statements
# (shared_preload_libraries), every statement of a measured run is counted too. Writes
# $BENCH_OUT/sustained.json (default bench-out/).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-$ROOT/target/release/malipo}
LOADGEN=${2:-$ROOT/target/release/malipo-loadgen}
OUT=${BENCH_OUT:-$ROOT/bench-out}
SECS=${BENCH_SUSTAINED_SECS:-60}
PGBENCH_SECS=${BENCH_SUSTAINED_PGBENCH_SECS:-30}
PAYERS=${BENCH_SUSTAINED_PAYERS:-10000}
export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres}
# Loopback connections without TLS, as bench/run.sh.
export PGSSLMODE=${PGSSLMODE:-disable} PGOPTIONS="-c client_min_messages=warning"
mkdir -p "$OUT"
[ -x "$BIN" ] && [ -x "$LOADGEN" ] || (cd "$ROOT" && cargo build --release -p malipo -p malipo-loadgen)
PGBENCH=$(command -v pgbench || ls -d /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | sort -V | tail -n 1)
[ -x "$PGBENCH" ] || { echo "pgbench not found (apt-get install postgresql-contrib)" >&2; exit 1; }
DB=malipo_sustained
TPCB_DB=malipo_tpcb
URL="postgres://$PGUSER@$PGHOST/$DB"
WORK=$(mktemp -d)
SERVER=""
stop_server() { if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; SERVER=""; fi; }
trap 'stop_server; rm -rf "$WORK"' EXIT
log() { printf '[sustained %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
sql() { psql -X -qAt -d "$DB" -c "$1"; }

tpcb() { # round
  "$PGBENCH" -n -M prepared -c 16 -j 2 -T "$PGBENCH_SECS" "$TPCB_DB" >"$WORK/tpcb-$1.txt" 2>&1
  local tps; tps=$(awk '/^tps/ {print $3; exit}' "$WORK/tpcb-$1.txt")
  log "pgbench TPC-B-like round $1: $tps tps"
  echo "$tps" >>"$WORK/tpcb.txt"
}

run() { # merchants client (hammer: sends again at once after a 503; sdk: waits its Retry-After)
  local merchants=$1 client=$2 name="$1-$2" honor=()
  [ "$client" = sdk ] && honor=(--honor-retry-after)
  psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
  local env=(MALIPO_DATABASE_URL="$URL" MALIPO_WEBHOOK_KEY="$(head -c 32 /dev/urandom | base64)" MALIPO_LOG=error MALIPO_DEMO=false
    MALIPO_RATE_LIMIT_TEST=1000000 MALIPO_SANDBOX_APPROVAL_DELAY_MS=0)
  : >"$WORK/creds.jsonl"
  for i in $(seq "$merchants"); do
    env "${env[@]}" "$BIN" org create --name "Sustained $i" --kind merchant --json |
      python3 -c 'import json, sys; t = sys.stdin.read(); print(json.dumps(json.loads(t[t.index("{"):])))' >>"$WORK/creds.jsonl"
  done
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  env "${env[@]}" MALIPO_BIND=127.0.0.1:$port "$BIN" serve >"$WORK/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 100); do curl -sf "127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  # As bench/run.sh does: a first run of charges, then ANALYZE, so that the measured run is
  # planned on populated tables, as a running system's autovacuum would have it (statements
  # prepared on empty tables keep plans that scan them as they grow). Only the charges created
  # after it are counted.
  # With a population of payers, the warm-up pays once from each, so that every payer of the
  # measured run has a wallet (returning customers), as in a live system.
  local warmup=${BENCH_SUSTAINED_WARMUP:-2000}
  [ "$PAYERS" -gt "$warmup" ] && warmup=$PAYERS
  timeout 150 "$LOADGEN" lifecycle --base-url "http://127.0.0.1:$port/api/v1" --credentials "$WORK/creds.jsonl" \
    --count "$warmup" --payers "$PAYERS" --concurrency 32 --timeout-secs 120 >/dev/null
  psql -X -q -d "$DB" -c 'ANALYZE'
  local cutoff; cutoff=$(sql "SELECT coalesce(max(created_at), 0) FROM charges")
  # Statements are counted where PostgreSQL loads pg_stat_statements (shared_preload_libraries;
  # see docs/throughput.md): from here to the run's end, this database's only.
  local statements=false
  if [ "$(sql "SELECT count(*) FROM pg_settings WHERE name = 'shared_preload_libraries' AND setting ~ 'pg_stat_statements'")" = 1 ]; then
    statements=true
    psql -X -q -d "$DB" -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' -c 'SELECT pg_stat_statements_reset()' >/dev/null
  fi
  log "$merchants merchant(s), $client client: full-speed intake for ${SECS}s"
  local cpu0; cpu0=$(awk '{print $14 + $15}' "/proc/$SERVER/stat")
  local busy0; busy0=$(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat)
  local wal0; wal0=$(psql -X -qAt -d postgres -c "SELECT wal_records || ' ' || wal_bytes FROM pg_stat_wal")
  local db0; db0=$(sql "SELECT xact_commit || ' ' || tup_inserted || ' ' || tup_updated FROM pg_stat_database WHERE datname = current_database()")
  local TIMEFORMAT='%U %S'
  { time "$LOADGEN" charges --base-url "http://127.0.0.1:$port/api/v1" --credentials "$WORK/creds.jsonl" \
    --concurrency 32 --duration-secs "$SECS" --payers "$PAYERS" "${honor[@]}" >"$WORK/load-$name.json" 2>"$WORK/load-$name.err"; } 2>"$WORK/load-$name.time"
  local deadline=$((SECONDS + 600))
  while [ "$(sql "SELECT count(*) FROM charges WHERE state IN ('pending','authorised') AND created_at > $cutoff")" != 0 ]; do
    [ $SECONDS -lt $deadline ] || { log "charges still open after 600 s"; break; }
    sleep 0.5
  done
  local cpu1; cpu1=$(awk '{print $14 + $15}' "/proc/$SERVER/stat")
  local busy1; busy1=$(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat)
  local states; states=$(sql "SELECT coalesce(json_object_agg(state, n), '{}') FROM (SELECT state, count(*) n FROM charges WHERE created_at > $cutoff GROUP BY state) s")
  local span; span=$(sql "SELECT (max(completed_at) - min(created_at)) FROM charges WHERE created_at > $cutoff")
  # The server's backends report their counts as they end.
  stop_server
  local wal1; wal1=$(psql -X -qAt -d postgres -c "SELECT wal_records || ' ' || wal_bytes FROM pg_stat_wal")
  local db1; db1=$(sql "SELECT xact_commit || ' ' || tup_inserted || ' ' || tup_updated FROM pg_stat_database WHERE datname = current_database()")
  # Rows read by sequential scans over the whole run (warm-up included): a table read whole by a
  # statement of the payment's path shows here.
  local scans; scans=$(sql "SELECT coalesce(json_object_agg(relname, seq_tup_read), '{}') FROM pg_stat_user_tables WHERE seq_tup_read > 1000")
  # Every statement of the measured run (the warm-up's were reset), the most called first.
  local stmts='null'
  if $statements; then
    stmts=$(sql "SELECT coalesce(json_agg(s ORDER BY s.calls DESC), '[]') FROM (SELECT calls, rows, round(total_exec_time::numeric, 1) AS exec_ms,
      left(regexp_replace(query, '\s+', ' ', 'g'), 160) AS query FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query !~ 'pg_stat_statements') s")
  fi
  python3 - "$merchants" "$WORK/load-$name.json" "$states" "$span" "$((cpu1 - cpu0))" "$(getconf CLK_TCK)" "$SECS" \
    "$((busy1 - busy0))" "$wal0" "$wal1" "$db0" "$db1" "$client" "$(cat "$WORK/load-$name.time")" "$scans" "$stmts" "$PAYERS" >"$WORK/run-$name.json" <<'PY'
import json, sys
merchants, load, states, span, ticks, hz, secs, busy, wal0, wal1, db0, db1, client, loadgen_cpu, scans, stmts, payers = sys.argv[1:]
stmts = json.loads(stmts)
loadgen_secs = sum(float(x) for x in loadgen_cpu.split())
delta = lambda a, b: [int(y) - int(x) for x, y in zip(a.split(), b.split())]
wal_records, wal_bytes = delta(wal0, wal1)
commits, inserted, updated = delta(db0, db1)
load = json.load(open(load))
states = json.loads(states)
completed = states.get("completed", 0)
span_secs = int(span or 0) / 1e6
print(json.dumps({
    "merchants": int(merchants), "client": client, "payers": int(payers), "secs": int(secs), "states": states, "created": sum(states.values()),
    "completed": completed, "expired": states.get("expired", 0), "span_secs": span_secs,
    "whole_payments_per_sec": completed / span_secs if span_secs else None,
    "refused_503": load["status_counts"].get("503", 0), "accepted": load["ok"], "load": load,
    "seq_scan_rows": json.loads(scans),
    # pg_stat_statements (None where it is not loaded): calls a payment, each statement's and all.
    "statements_per_payment": sum(s["calls"] for s in stmts) / completed if stmts is not None and completed else None,
    "statements": [dict(s, per_payment=s["calls"] / completed) for s in stmts] if stmts is not None and completed else None,
    "server_cpu_secs": int(ticks) / int(hz),
    "server_cpu_ms_per_payment": 1000 * int(ticks) / int(hz) / completed if completed else None,
    # The whole machine (server, PostgreSQL, load generator) from the load's start to the last
    # charge's end.
    "machine_cpu_ms_per_payment": 1000 * int(busy) / int(hz) / completed if completed else None,
    "loadgen_cpu_ms_per_payment": 1000 * loadgen_secs / completed if completed else None,
    # What is left of the machine's: PostgreSQL (and anything else running).
    "postgres_cpu_ms_per_payment": (1000 * (int(busy) - int(ticks)) / int(hz) - 1000 * loadgen_secs) / completed if completed else None,
    "per_payment": {k: v / completed if completed else None for k, v in
                    {"commits": commits, "rows_inserted": inserted, "rows_updated": updated,
                     "wal_records": wal_records, "wal_bytes": wal_bytes}.items()},
}))
PY
  python3 - "$WORK/run-$name.json" >&2 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{r['merchants']} merchant(s), {r['client']} client: {r['completed']} completed over {r['span_secs']:.1f} s = {r['whole_payments_per_sec']:.0f}/s, "
      f"refused 503 {r['refused_503']}, expired {r['expired']}, states {r['states']}, "
      f"CPU ms a payment: server {r['server_cpu_ms_per_payment']:.2f}, PostgreSQL {r['postgres_cpu_ms_per_payment']:.2f}, "
      f"load generator {r['loadgen_cpu_ms_per_payment']:.2f}, machine {r['machine_cpu_ms_per_payment']:.2f}; a payment: "
      + ", ".join(f"{k} {v:.1f}" for k, v in r["per_payment"].items()) + f"; rows read by sequential scans {r['seq_scan_rows']}")
if r["statements"] is not None:
    print(f"statements a payment: {r['statements_per_payment']:.2f}")
    for s in r["statements"][:40]:
        print(f"  {s['per_payment']:6.2f}/payment {s['exec_ms'] / max(s['calls'], 1) * 1000:7.1f} µs  {s['query']}")
PY
}

STARTED=$(date -u +%Y-%m-%dT%H:%MZ)
log "pgbench TPC-B-like: initialising scale 32 in $TPCB_DB"
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $TPCB_DB" -c "CREATE DATABASE $TPCB_DB"
"$PGBENCH" -i -q -s 32 "$TPCB_DB" >"$WORK/tpcb-init.txt" 2>&1
: >"$WORK/tpcb.txt"
round=1
tpcb $round
names=()
for client in ${BENCH_SUSTAINED_CLIENTS:-sdk hammer}; do
  for m in ${BENCH_SUSTAINED_MERCHANTS:-1 20}; do
    run "$m" "$client"
    names+=("$m-$client")
    round=$((round + 1))
    tpcb $round
  done
done
python3 - "$WORK" "$OUT/sustained.json" "$STARTED" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo n/a)" "${names[@]}" <<'PY'
import json, statistics, sys
work, out, measured_at, commit, *names = sys.argv[1:]
tps = [float(l) for l in open(f"{work}/tpcb.txt") if l.strip()]
median = statistics.median(tps)
runs = [json.load(open(f"{work}/run-{n}.json")) for n in names]
for r in runs:
    r["ratio_to_tpcb"] = r["whole_payments_per_sec"] / median if r["whole_payments_per_sec"] else None
json.dump({"measured_at": measured_at, "git_commit": commit,
           "tpcb_tps": tps, "tpcb_median": median, "tpcb": "built-in TPC-B-like, scale 32, -c 16 -j 2 -M prepared",
           "runs": runs}, open(out, "w"), indent=1)
for r in runs:
    print(f"{r['merchants']} merchant(s), {r['client']} client: {r['whole_payments_per_sec']:.0f} whole payments/s, "
          f"{r['ratio_to_tpcb']:.3f} of TPC-B ({median:.0f} tps median of {tps}), refused 503 {r['refused_503']}, expired {r['expired']}")
PY
# BENCH_SUSTAINED_KEEP_DB=1 keeps the last run's database, to study its statements afterwards.
[ "${BENCH_SUSTAINED_KEEP_DB:-0}" = 1 ] || psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB"
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $TPCB_DB"
