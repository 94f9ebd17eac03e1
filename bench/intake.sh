#!/usr/bin/env bash
# Full-speed charge intake on PostgreSQL (issue 12, backpressure): does any charge expire because the
# server was busy?
#
#   bash bench/intake.sh [MALIPO_BINARY] [LOADGEN_BINARY]   (defaults: target/release/…, built if absent)
#
# A fresh database, one merchant, the server with its defaults (sandbox approval after 2 s, a 90 s
# time-to-live, MALIPO_MAX_BACKLOG_SECONDS=10) and the per-credential rate limit out of the way.
# `malipo-loadgen charges` creates charges with 32 connections as fast as the server takes them for
# BENCH_INTAKE_SECS (60) while /metrics is sampled every second; then every charge is left to reach
# a final state. The same is then run with the gate off (MALIPO_MAX_BACKLOG_SECONDS=0) for comparison
# (BENCH_INTAKE_GATES, default "10 0", lists the bounds to run). Writes $BENCH_OUT/intake-<gate>.json
# (default bench-out/).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-$ROOT/target/release/malipo}
LOADGEN=${2:-$ROOT/target/release/malipo-loadgen}
OUT=${BENCH_OUT:-$ROOT/bench-out}
SECS=${BENCH_INTAKE_SECS:-60}
export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres}
# Loopback connections without TLS (PGSSLMODE, read by libpq in pgbench, psql and the server
# alike): TLS to a database on the same machine protects nothing and cost a quarter of the CPU.
export PGSSLMODE=${PGSSLMODE:-disable}
mkdir -p "$OUT"
[ -x "$BIN" ] && [ -x "$LOADGEN" ] || (cd "$ROOT" && cargo build --release -p malipo && cargo build --release -p malipo-loadgen)
DB=malipo_intake
URL="postgres://$PGUSER@$PGHOST/$DB"
WORK=$(mktemp -d)
SERVER=""
stop_server() { if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; SERVER=""; fi; }
trap 'stop_server; rm -rf "$WORK"' EXIT
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
sql() { psql -qAt -d "$DB" -c "$1"; }

run() { # gate seconds
  local gate=$1
  psql -q -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null
  local env=(MALIPO_DATABASE_URL="$URL" MALIPO_WEBHOOK_KEY="$(head -c 32 /dev/urandom | base64)" MALIPO_LOG=error MALIPO_DEMO=false
    MALIPO_RATE_LIMIT_TEST=1000000 MALIPO_MAX_BACKLOG_SECONDS="$gate")
  local org; org=$(env "${env[@]}" "$BIN" org create --name Intake --kind merchant --json)
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  env "${env[@]}" MALIPO_METRICS_TOKEN=bench-metrics MALIPO_BIND=127.0.0.1:$port "$BIN" serve >"$WORK/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 100); do curl -sf "127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  echo "== intake at full speed for ${SECS}s, MALIPO_MAX_BACKLOG_SECONDS=$gate" >&2
  ( for _ in $(seq 1 $((SECS + 5))); do
      curl -s -H "Authorization: Bearer bench-metrics" "127.0.0.1:$port/metrics" | awk '/^malipo_backlog_age_seconds\{work="charges"\}/ {a=$2} /^malipo_intake_refused\{work="charges"\}/ {r=$2}
        /^malipo_backlog_due_charges / {d=$2} /^malipo_backlog_predicted_wait_seconds / {p=$2} END {print a+0, r+0, d+0, p+0}'
      sleep 1
    done >"$WORK/samples.txt" ) &
  local sampler=$!
  "$LOADGEN" charges --base-url "http://127.0.0.1:$port/api/v1" --client-id "$(field client_id <<<"$org")" \
    --client-secret "$(field client_secret <<<"$org")" --concurrency 32 --duration-secs "$SECS" >"$WORK/load.json"
  kill $sampler 2>/dev/null || true; wait $sampler 2>/dev/null || true
  local t0; t0=$(date +%s.%N)
  for _ in $(seq 1 600); do
    [ "$(sql "SELECT count(*) FROM charges WHERE state IN ('pending','authorised')")" = 0 ] && break
    sleep 1
  done
  local drained; drained=$(python3 -c "import time; print(round(time.time() - $t0, 1))")
  local rss; rss=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER/status")
  local states; states=$(sql "SELECT coalesce(json_object_agg(state, n), '{}') FROM (SELECT state, count(*) n FROM charges GROUP BY state) s")
  stop_server
  python3 - "$gate" "$WORK/load.json" "$WORK/samples.txt" "$states" "$drained" "$rss" "$SECS" >"$OUT/intake-$gate.json" <<'PY'
import json, sys
gate, load, samples, states, drained, rss, secs = sys.argv[1:]
load = json.load(open(load))
rows = [tuple(map(float, l.split())) for l in open(samples) if l.strip()]
ages = [(r[0], r[1]) for r in rows]
states = json.loads(states)
created = sum(states.values())
print(json.dumps({
    "max_backlog_seconds": int(gate), "secs": int(secs), "load": load, "states": states, "created": created,
    "expired": states.get("expired", 0), "expired_share": states.get("expired", 0) / created if created else None,
    "refused_503": load["status_counts"].get("503", 0),
    "max_backlog_age_seconds": max((a for a, _ in ages), default=None),
    "refusing_samples": sum(1 for _, r in ages if r >= 1), "samples": len(ages),
    "drain_secs_after_load": float(drained), "rss_kib": int(rss),
    # Each second: oldest due charge's wait (s), refusing (0/1), charges due within the bound, predicted wait (s).
    "samples_series": [list(r) for r in rows],
}))
PY
  python3 - "$OUT/intake-$gate.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"gate {r['max_backlog_seconds']} s: created {r['created']} ({r['created'] / r['secs']:.0f}/s), refused 503 {r['refused_503']}, "
      f"states {r['states']}, expired {100 * (r['expired_share'] or 0):.1f}%, largest backlog sampled {r['max_backlog_age_seconds']} s, "
      f"final {r['drain_secs_after_load']} s after the load")
PY
}

for gate in ${BENCH_INTAKE_GATES:-10 0}; do run "$gate"; done
psql -q -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null
