#!/usr/bin/env bash
# One merchant against twenty, side by side: the sandbox lifecycle rate (created -> completed) of
# one server binary when all charges go to one merchant and when they are spread over twenty.
#
#   bash bench/merchants.sh [BINARY] [ROUNDS]
#
# For each backend (SQLite, then PostgreSQL) it alternates 1, 20, 1, 20, ... ROUNDS times
# (default 3), each round on a fresh database with the sandbox approving at once, and measures
# 3,000 charges (BENCH_LIFECYCLE_COUNT) with target/release/malipo-loadgen. Prints each round and
# the medians with the one/twenty ratio: a row that every charge of a merchant updates shows as
# a ratio well under 1. BENCH_AB_BACKENDS (default "sqlite postgres") picks the backends. Needs
# PostgreSQL at 127.0.0.1:5432 (user postgres) and python3.
set -euo pipefail
export PGOPTIONS="-c client_min_messages=warning"
cd "$(dirname "$0")/.."

BIN=${1:-target/release/malipo} ROUNDS=${2:-3}
LOADGEN=${BENCH_LOADGEN:-target/release/malipo-loadgen}
COUNT=${BENCH_LIFECYCLE_COUNT:-3000}
KEY=$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')
WORK=$(mktemp -d)
trap 'kill "${PID:-0}" 2>/dev/null || true; rm -rf "$WORK"' EXIT

run_round() { # run_round MERCHANTS DATABASE_URL -> prints the lifecycle rate
    local merchants=$1 url=$2 port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local env=(MALIPO_DATABASE_URL="$url" MALIPO_BIND="127.0.0.1:$port" MALIPO_RATE_LIMIT_TEST=1000000
        MALIPO_SANDBOX_APPROVAL_DELAY_MS=0 MALIPO_CHARGE_TTL_SECONDS=600 MALIPO_LOG=warn MALIPO_WEBHOOK_KEY="$KEY")
    env "${env[@]}" "$BIN" serve >"$WORK/server.log" 2>&1 &
    PID=$!
    for _ in $(seq 300); do
        curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    : >"$WORK/creds.jsonl"
    for i in $(seq "$merchants"); do
        env "${env[@]}" timeout 60 "$BIN" org create --name "m$i" --kind merchant --json 2>/dev/null |
            python3 -c 'import json, sys; t = sys.stdin.read(); print(json.dumps(json.loads(t[t.index("{"):])))' >>"$WORK/creds.jsonl"
    done
    timeout 150 "$LOADGEN" lifecycle --base-url "http://127.0.0.1:$port/api/v1" --credentials "$WORK/creds.jsonl" \
        --count "$COUNT" --concurrency 32 --timeout-secs 120 |
        python3 -c 'import json, sys; print("%.1f" % json.load(sys.stdin)["lifecycle_per_sec"])'
    kill "$PID"
    wait "$PID" 2>/dev/null || true
}

for backend in ${BENCH_AB_BACKENDS:-sqlite postgres}; do
    one=() twenty=()
    for i in $(seq "$ROUNDS"); do
        for merchants in 1 20; do
            if [[ $backend == sqlite ]]; then
                url="sqlite://$WORK/m-$merchants-$i.db"
            else
                db="malipo_merchants_${merchants}_$i"
                psql -X -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
                url="postgres://postgres@127.0.0.1:5432/$db"
            fi
            rate=$(run_round "$merchants" "$url")
            echo "$backend round $i, $merchants merchant(s): $rate/s"
            if [[ $merchants == 1 ]]; then one+=("$rate"); else twenty+=("$rate"); fi
            [[ $backend == postgres ]] && psql -X -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db"
        done
    done
    python3 - "$backend" "${one[*]}" "${twenty[*]}" <<'PY'
import statistics, sys
backend, one, twenty = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
m1, m20 = statistics.median(one), statistics.median(twenty)
print(f"{backend}: median one merchant {m1:.1f}/s, twenty {m20:.1f}/s, one/twenty {m1 / m20:.2f}")
PY
done
