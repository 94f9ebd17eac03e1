#!/usr/bin/env bash
# Token flood (issue 12): does a flood of wrong and unknown client credentials keep anyone from
# their token, or slow anyone else, also a client behind the flood's own address?
#
#   bash bench/token-flood.sh [MALIPO_BINARY]     (default: target/release/malipo, built if absent)
#
# For each backend (BENCH_FLOOD_BACKENDS, default "sqlite postgres"): a fresh database, one merchant,
# a server with the per-credential rate limit out of the way and sandbox approvals an hour away (so no
# background work competes). A legitimate client on 127.0.0.1 (bench/token_flood.py: token request,
# balance, charge creation, BENCH_FLOOD_ROUNDS rounds over one keep-alive connection) is timed
#   1. alone (baseline);
#   2. while 64 wrk connections from the same address, 127.0.0.1 (integrators share egress
#      addresses: a NAT gateway, a hosting platform), post wrong secrets for the merchant's own
#      client id and unknown client ids in turn (the default failure limits: the address's
#      failures are soon answered 429, each held a second once it goes on, while every request is
#      still checked, so the right secret from that address gets its token);
#   3. the same on a server whose failure limits are lifted, as for a flood spread over many
#      addresses: every failure is answered at once, 401.
# Every token request of the legitimate client must be answered 200 (its statuses are reported).
# Writes $BENCH_OUT/token-flood-<backend>.json (default bench-out/) and prints a summary.
# Needs wrk, curl, python3, and PostgreSQL at PGHOST (127.0.0.1) for the postgres backend.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-$ROOT/target/release/malipo}
OUT=${BENCH_OUT:-$ROOT/bench-out}
ROUNDS=${BENCH_FLOOD_ROUNDS:-300}
SECS=${BENCH_FLOOD_SECS:-20}
export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres}
# Loopback connections without TLS (PGSSLMODE, read by libpq in pgbench, psql and the server
# alike): TLS to a database on the same machine protects nothing and cost a quarter of the CPU.
export PGSSLMODE=${PGSSLMODE:-disable}
mkdir -p "$OUT"
[ -x "$BIN" ] || (cd "$ROOT" && cargo build --release -p malipo)
if ! command -v wrk >/dev/null; then
  echo "installing wrk (Debian's package)" >&2
  (apt-get update -qq && apt-get install -y -qq wrk) >&2 || { echo "wrk is needed and could not be installed (apt-get install wrk)" >&2; exit 1; }
fi

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
hwm() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo null; }

SERVER=""
stop_server() { if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; SERVER=""; fi; }
trap stop_server EXIT

start_server() { # extra env as arguments
  PORT=$(port)
  env MALIPO_BIND=127.0.0.1:$PORT "$@" "$BIN" serve >"$WORK/server.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 100); do curl -sf "127.0.0.1:$PORT/readyz" >/dev/null && return 0; sleep 0.1; done
  cat "$WORK/server.log" >&2; echo "the server did not start" >&2; exit 1
}

legit() { python3 "$ROOT/bench/token_flood.py" "http://127.0.0.1:$PORT" "$CID" "$CS" 127.0.0.1 "$ROUNDS"; }

flood() { # prints {"client": ..., "wrong_per_sec": ...}
  # Wrong secrets for the merchant's client id and unknown client ids, in turn.
  cat >"$WORK/wrong.lua" <<LUA
local n = 0
local headers = {["Content-Type"] = "application/json"}
request = function()
  n = n + 1
  local id = "$CID"
  if n % 2 == 1 then id = string.format("ck_test_nobody%08d", n) end
  local body = string.format('{"client_id":"%s","client_secret":"cs_test_wrongwrongwrongwrongwrongwrongwrong00"}', id)
  return wrk.format("POST", nil, headers, body)
end
LUA
  wrk -t2 -c64 -d"${SECS}s" -s "$WORK/wrong.lua" "http://127.0.0.1:$PORT/api/v1/oauth/token" >"$WORK/wrk.txt" &
  local w=$!
  sleep 3
  local client; client=$(legit)
  local still=0; kill -0 $w 2>/dev/null && still=1
  wait $w
  local rps; rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.txt")
  printf '{"client": %s, "wrong_per_sec": %s, "flood_outlasted_client": %s}' "$client" "${rps:-null}" "$([ $still = 1 ] && echo true || echo false)"
}

for backend in ${BENCH_FLOOD_BACKENDS:-sqlite postgres}; do
  WORK=$(mktemp -d)
  common=(MALIPO_LOG=error MALIPO_DEMO=false MALIPO_RATE_LIMIT_TEST=1000000 MALIPO_SANDBOX_APPROVAL_DELAY_MS=3600000 MALIPO_CHARGE_TTL_SECONDS=7200)
  if [ "$backend" = postgres ]; then
    psql -q -d postgres -c "DROP DATABASE IF EXISTS malipo_flood" -c "CREATE DATABASE malipo_flood" >/dev/null
    common+=(MALIPO_DATABASE_URL="postgres://$PGUSER@$PGHOST/malipo_flood" MALIPO_WEBHOOK_KEY="$(head -c 32 /dev/urandom | base64)")
  else
    common+=(MALIPO_DATABASE_URL="sqlite://$WORK/malipo.db")
  fi
  ORG=$(env "${common[@]}" "$BIN" org create --name Flood --kind merchant --json)
  CID=$(field client_id <<<"$ORG"); CS=$(field client_secret <<<"$ORG")

  echo "== token flood, $backend: baseline, then 64 connections from the client's address posting wrong and unknown credentials (default failure limits)" >&2
  start_server "${common[@]}"
  baseline=$(legit)
  limited=$(flood)
  rss_limited=$(hwm "$SERVER")
  stop_server
  echo "== token flood, $backend: failure limits lifted (a flood from many addresses)" >&2
  start_server "${common[@]}" MALIPO_TOKEN_FAILURES_PER_CLIENT=1000000000 MALIPO_TOKEN_FAILURES_PER_ADDRESS=1000000000
  unlimited=$(flood)
  rss_unlimited=$(hwm "$SERVER")
  stop_server
  printf '{"backend": "%s", "rounds": %s, "flood_secs": %s, "baseline": %s, "limited": %s, "unlimited": %s, "rss_kib": {"limited": %s, "unlimited": %s}}\n' \
    "$backend" "$ROUNDS" "$SECS" "$baseline" "$limited" "$unlimited" "$rss_limited" "$rss_unlimited" >"$OUT/token-flood-$backend.json"
  python3 - "$OUT/token-flood-$backend.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
b = r["baseline"]
for phase in ("limited", "unlimited"):
    f = r[phase]
    parts = [f"{phase}: failing requests {f['wrong_per_sec']:.0f}/s"]
    for call in ("token", "balance", "charge"):
        c = f["client"][call]
        parts.append(f"{call} p50 {c['p50_ms']:.1f} ms ({c['p50_ms'] / b[call]['p50_ms']:.2f}x), p99 {c['p99_ms']:.1f} ms ({c['p99_ms'] / b[call]['p99_ms']:.2f}x) {c['statuses']}")
    print(f"{r['backend']} " + "; ".join(parts))
PY
  if [ "$backend" = postgres ]; then psql -q -d postgres -c "DROP DATABASE IF EXISTS malipo_flood" >/dev/null; fi
  rm -rf "$WORK"
done
