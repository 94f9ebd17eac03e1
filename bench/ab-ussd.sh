#!/usr/bin/env bash
# Side-by-side USSD approval rate of two server binaries (e.g. before and after a change):
#
#   bash bench/ab-ussd.sh OLD_BINARY NEW_BINARY [ROUNDS]
#
# For each backend (SQLite, then PostgreSQL) it alternates OLD, NEW, OLD, NEW, ... ROUNDS times
# (default 3), each round on a fresh database, as bench/run.sh's USSD phase: a live operator,
# agent (float funded), gateway and merchant from the CLI, then target/release/malipo-loadgen ussd
# (50 customers, 8 sessions at a time, each a live charge approved over the menu) for 5 s of
# warm-up (then ANALYZE on PostgreSQL) and BENCH_USSD_SECS (15) measured. Prints each round
# (approvals/s, PIN hop p99) and the medians with the NEW/OLD ratio.
# BENCH_AB_BACKENDS (default "sqlite postgres") picks the backends. Needs PostgreSQL at
# 127.0.0.1:5432 (user postgres), curl and python3.
set -euo pipefail
export PGOPTIONS="-c client_min_messages=warning"
export PGSSLMODE=${PGSSLMODE:-disable} # loopback without TLS, as bench/run.sh
cd "$(dirname "$0")/.."

OLD=${1:?old server binary} NEW=${2:?new server binary} ROUNDS=${3:-3}
LOADGEN=${BENCH_LOADGEN:-target/release/malipo-loadgen}
SECS=${BENCH_USSD_SECS:-15}
KEY=$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')
WORK=$(mktemp -d)
SERVER=
trap '[[ -n $SERVER ]] && kill "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT

json() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
# The last JSON object printed by a CLI command, on one line.
last_object() {
    python3 -c '
import json, sys
text, found, i = sys.stdin.read(), None, 0
while (i := text.find("{", i)) >= 0:
    try:
        found, i = json.JSONDecoder().raw_decode(text, i)
    except ValueError:
        i += 1
print(json.dumps(found))'
}

# round BINARY URL OUT: one measured USSD run on a fresh database; its report in OUT.
round() {
    local bin=$1 url=$2 out=$3 port kind org agent_org
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local -a env=(MALIPO_DATABASE_URL="$url" MALIPO_BIND="127.0.0.1:$port" MALIPO_RATE_LIMIT_TEST=1000000
        MALIPO_RATE_LIMIT_LIVE=1000000 MALIPO_SANDBOX_APPROVAL_DELAY_MS=0 MALIPO_CHARGE_TTL_SECONDS=90
        MALIPO_LOG=warn MALIPO_WEBHOOK_KEY="$KEY")
    env "${env[@]}" "$bin" serve >"$WORK/server.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 600); do
        curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/readyz" 2>/dev/null && break
        kill -0 "$SERVER" 2>/dev/null || { tail -n 20 "$WORK/server.log" >&2; exit 1; }
        sleep 0.1
    done
    local -a args=(--base-url "http://127.0.0.1:$port/api/v1" --customers 50 --concurrency 8 --balance 5000 --amount 10)
    for kind in operator agent gateway merchant; do
        org=$(json "$(env "${env[@]}" "$bin" org create --name "ab-$kind" --kind "$kind" --json 2>>"$WORK/server.log" | last_object)" organisation_id)
        local live
        live=$(env "${env[@]}" "$bin" credentials issue --org "$org" --mode live --json 2>>"$WORK/server.log" | last_object)
        args+=("--$kind-id" "$(json "$live" client_id)" "--$kind-secret" "$(json "$live" client_secret)")
        [[ $kind == agent ]] && agent_org=$org
    done
    env "${env[@]}" "$bin" account fund --mode live --amount 100000000 --org "$agent_org" >/dev/null 2>>"$WORK/server.log"
    timeout 120 "$LOADGEN" ussd "${args[@]}" --duration-secs 5 >/dev/null
    if [[ $url == postgres* ]]; then
        psql -X -q "$url" -c 'ANALYZE ussd_sessions'
    fi
    timeout $((SECS + 120)) "$LOADGEN" ussd "${args[@]}" --duration-secs "$SECS" >"$out"
    kill "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
    SERVER=
}

for backend in ${BENCH_AB_BACKENDS:-sqlite postgres}; do
    for i in $(seq "$ROUNDS"); do
        for which in old new; do
            bin=$OLD
            [[ $which == new ]] && bin=$NEW
            if [[ $backend == sqlite ]]; then
                url="sqlite://$WORK/ab-$which-$i.db"
            else
                db="malipo_ab_ussd_${which}_$i"
                psql -X -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
                url="postgres://postgres@127.0.0.1:5432/$db"
            fi
            round "$bin" "$url" "$WORK/$backend-$which-$i.json"
            python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("%s round %s %s: %.1f approvals/s, PIN hop p99 %.2f ms, errors %d" % (sys.argv[2], sys.argv[3], sys.argv[4], r["approvals_per_sec"], r["pin_hop_p99_ms"], r["errors"]))' \
                "$WORK/$backend-$which-$i.json" "$backend" "$i" "$which"
            if [[ $backend == postgres ]]; then
                psql -X -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
            fi
        done
    done
    python3 - "$WORK" "$backend" "$ROUNDS" <<'PY'
import json, statistics, sys
work, backend, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
rate = lambda which: [json.load(open(f"{work}/{backend}-{which}-{i}.json"))["approvals_per_sec"] for i in range(1, rounds + 1)]
old, new = statistics.median(rate("old")), statistics.median(rate("new"))
print(f"{backend}: median old {old:.1f}/s, new {new:.1f}/s, new/old {new / old:.2f}x")
PY
done
