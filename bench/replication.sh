#!/usr/bin/env bash
# The price of synchronous replication, and what a read replica buys. Called by bench/run.sh
# (`just bench`), or alone (as root, like scripts/cluster/up.sh):
#
#   bash bench/replication.sh
#
# On a three-node Patroni cluster of its own (scripts/cluster/up.sh: synchronous, strict mode)
# beside the machine's own PostgreSQL (127.0.0.1:5432), with the release server:
#   - the sandbox lifecycle rate (bench/lifecycle-round.sh, one merchant, BENCH_LIFECYCLE_COUNT
#     charges) on one server (a fresh database on the machine's PostgreSQL) and on the cluster's
#     primary, whose every commit waits for its synchronous standby's flush; BENCH_REPL_ROUNDS
#     rounds (5), the two alternating;
#   - charge creation at an offered BENCH_REPL_RATE/s (200) for BENCH_REPL_SECS (20, after 3 s of
#     warm-up) by one merchant, p50/p99, while another merchant's transactions export of
#     BENCH_TX_ROWS transactions (1,000,000, seeded with SQL) streams again and again: with
#     MALIPO_DATABASE_READ_URL on the standbys (the export read there), and without (read on the
#     primary); and the same load with no export as the baseline.
# Everything runs on this one machine: the standbys replay, and the export is read, on the same
# cores as the primary, which separate machines would not share.
#
# Writes BENCH_OUT/replication.json; bench/report_failover.py writes it into docs/performance.md.
# Knobs: BENCH_OUT (bench-out), BENCH_MALIPO_BIN, BENCH_LOADGEN_BIN (target/release/…),
# BENCH_SKIP_BUILD (0), BENCH_REPL_ROUNDS (5), BENCH_LIFECYCLE_COUNT (3000), BENCH_REPL_RATE
# (200), BENCH_REPL_SECS (20), BENCH_TX_ROWS (1000000), BENCH_TX_PER_DAY (100000).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=${BENCH_OUT:-$ROOT/bench-out}
MALIPO=${BENCH_MALIPO_BIN:-$ROOT/target/release/malipo}
LOADGEN=${BENCH_LOADGEN_BIN:-$ROOT/target/release/malipo-loadgen}
ROUNDS=${BENCH_REPL_ROUNDS:-5}
COUNT=${BENCH_LIFECYCLE_COUNT:-3000}
RATE=${BENCH_REPL_RATE:-200}
SECS=${BENCH_REPL_SECS:-20}
ROWS=${BENCH_TX_ROWS:-1000000}
PER_DAY=${BENCH_TX_PER_DAY:-100000}
export PGSSLMODE=${PGSSLMODE:-disable}
SINGLE_DB=malipo_bench_replication
SINGLE_URL="postgres://postgres@127.0.0.1:5432/$SINGLE_DB"
KEY=$(head -c 32 /dev/urandom | base64)
WORK=$(mktemp -d)
# Not inside WORK (mode 700, root's): up.sh gives its directory to the postgres user.
CLUSTER=$(mktemp -d)
SERVER_PID=
EXPORTER_PID=
mkdir -p "$OUT"

log() { printf '[replication %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
stop_server() {
    if [[ -n $SERVER_PID ]]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    SERVER_PID=
}
cleanup() {
    [[ -z $EXPORTER_PID ]] || kill "$EXPORTER_PID" 2>/dev/null || true
    stop_server
    [[ ! -f $WORK/server.pid ]] || kill "$(cat "$WORK/server.pid")" 2>/dev/null || true
    bash scripts/cluster/down.sh "$CLUSTER" >/dev/null 2>&1 || true
    psql -qAt -d "postgres://postgres@127.0.0.1:5432/postgres" -c "DROP DATABASE IF EXISTS $SINGLE_DB WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

if [[ ${BENCH_SKIP_BUILD:-0} != 1 ]]; then
    cargo build --release -p malipo --quiet && cargo build --release -p malipo-loadgen --quiet
fi
# shellcheck source=bench/lifecycle-round.sh
. "$ROOT/bench/lifecycle-round.sh"
# shellcheck source=bench/seed-transactions.sh
. "$ROOT/bench/seed-transactions.sh"

log "cluster up"
CLUSTER_URL=$(bash scripts/cluster/up.sh "$CLUSTER" | tail -n 1)
READ_URL=${CLUSTER_URL/target_session_attrs=read-write/target_session_attrs=prefer-standby}
psql -qAt -d "postgres://postgres@127.0.0.1:5432/postgres" -c "DROP DATABASE IF EXISTS $SINGLE_DB WITH (FORCE)" -c "CREATE DATABASE $SINGLE_DB" >/dev/null

: >"$WORK/lifecycle.txt"
for round in $(seq 1 "$ROUNDS"); do
    single=$(lifecycle_round "$MALIPO" "$SINGLE_URL" 1)
    pair=$(lifecycle_round "$MALIPO" "$CLUSTER_URL" 1)
    log "lifecycle round $round: one server $single/s, synchronous pair $pair/s"
    echo "$single $pair" >>"$WORK/lifecycle.txt"
done

# A database of its own on the cluster (the lifecycle's wallets would collide with the seeded
# ones), with two merchants: one whose account holds ROWS transactions, one that takes charges.
psql -qAt -d "$CLUSTER_URL" -c "CREATE DATABASE malipo_export" >/dev/null
# Every node has it before the URL is used (libpq stops at a host without the database).
# shellcheck source=/dev/null
. "$CLUSTER/cluster.env"
for node in $NODES; do
    port_var="PG_PORT_$node"
    until psql -qAt -h 127.0.0.1 -p "${!port_var}" -U postgres -d malipo_export -c 'select 1' >/dev/null 2>&1; do sleep 0.2; done
done
CLUSTER_URL=${CLUSTER_URL/\/malipo?//malipo_export?}
READ_URL=${READ_URL/\/malipo?//malipo_export?}
env MALIPO_DATABASE_URL="$CLUSTER_URL" MALIPO_WEBHOOK_KEY="$KEY" "$MALIPO" migrate >/dev/null
ENV=(MALIPO_DATABASE_URL="$CLUSTER_URL" MALIPO_WEBHOOK_KEY="$KEY" MALIPO_LOG=warn MALIPO_RATE_LIMIT_TEST=1000000
     MALIPO_SANDBOX_APPROVAL_DELAY_MS=0 MALIPO_CHARGE_TTL_SECONDS=600)
json_field() { python3 -c 'import json, sys; t = sys.argv[1]; print(json.loads(t[t.index("{"):])[sys.argv[2]])' "$1" "$2"; }
shop=$(env "${ENV[@]}" "$MALIPO" org create --name "Export Shop" --kind merchant --json)
loader=$(env "${ENV[@]}" "$MALIPO" org create --name "Load Shop" --kind merchant --json)
account=$(psql -qAt -d "$CLUSTER_URL" -c "SELECT id FROM accounts WHERE org_id = '$(json_field "$shop" organisation_id)' AND mode = 'test' AND kind = 'collection'")
log "seeding $ROWS transactions into $account on the cluster"
seed_sql postgres "$account" | psql -qAt -v ON_ERROR_STOP=1 -d "$CLUSTER_URL" >/dev/null

# charges_under MODE: the charge load's report (JSON) with the export streaming as MODE says.
charges_under() {
    local mode=$1 port env=("${ENV[@]}")
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    [[ $mode != replica ]] || env+=(MALIPO_DATABASE_READ_URL="$READ_URL")
    env "${env[@]}" MALIPO_METRICS_TOKEN=bench-metrics MALIPO_BIND="127.0.0.1:$port" "$MALIPO" serve >"$WORK/server-$mode.log" 2>&1 &
    SERVER_PID=$!
    local api="http://127.0.0.1:$port/api/v1" deadline=$((SECONDS + 120))
    until curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || { log "the server did not get ready"; return 1; }
        sleep 0.2
    done
    if [[ $mode == replica ]]; then
        until curl -fs -H "Authorization: Bearer bench-metrics" "http://127.0.0.1:$port/metrics" | grep -qx 'malipo_db_replica_in_use 1'; do
            ((SECONDS < deadline)) || { log "the replica never got within its bound"; return 1; }
            sleep 0.5
        done
    fi
    : >"$WORK/exports-$mode.txt"
    if [[ $mode != baseline ]]; then
        local token
        token=$(curl -fs "$api/oauth/token" -H 'Content-Type: application/json' \
            -d "{\"client_id\":\"$(json_field "$shop" client_id)\",\"client_secret\":\"$(json_field "$shop" client_secret)\"}" |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')
        while :; do
            curl -s -H "Authorization: Bearer $token" -o /dev/null -w '%{time_total} %{size_download}\n' \
                "$api/transactions/export?account=collection" >>"$WORK/exports-$mode.txt"
        done &
        EXPORTER_PID=$!
        sleep 2
    fi
    "$LOADGEN" charges --base-url "$api" --client-id "$(json_field "$loader" client_id)" \
        --client-secret "$(json_field "$loader" client_secret)" --rate "$RATE" --duration-secs "$SECS" --warmup-secs 3 \
        >"$WORK/charges-$mode.json"
    if [[ -n $EXPORTER_PID ]]; then kill "$EXPORTER_PID" 2>/dev/null || true; wait "$EXPORTER_PID" 2>/dev/null || true; EXPORTER_PID=; fi
    curl -fs -H "Authorization: Bearer bench-metrics" "http://127.0.0.1:$port/metrics" | grep '^malipo_db_replica_fallbacks_total' | awk '{print $2}' >"$WORK/fallbacks-$mode.txt" || true
    stop_server
    log "$mode: $(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("p50 %.2f ms, p99 %.2f ms, %d ok" % (r["p50_ms"], r["p99_ms"], r["ok"]))' "$WORK/charges-$mode.json"), $(wc -l <"$WORK/exports-$mode.txt") exports begun"
}

for mode in baseline primary replica; do
    charges_under "$mode"
done

python3 - "$WORK" "$OUT/replication.json" "$ROWS" "$RATE" "$SECS" "$COUNT" <<'PY'
import datetime, json, statistics, subprocess, sys
work, out, rows, rate, secs, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
pairs = [tuple(float(x) for x in l.split()) for l in open(f"{work}/lifecycle.txt") if l.strip()]
def exports(mode):
    done = [l.split() for l in open(f"{work}/exports-{mode}.txt") if l.strip()]
    # The last export was cut off when the load ended: only whole ones count.
    full = [(float(t), int(b)) for t, b in done if int(b) > 0]
    return {"begun": len(done), "seconds": [round(t, 2) for t, _ in full[:-1] or full]}
def fallbacks(mode):
    text = open(f"{work}/fallbacks-{mode}.txt").read().strip()
    return int(float(text)) if text else None
charges = {m: json.load(open(f"{work}/charges-{m}.json")) for m in ("baseline", "primary", "replica")}
result = {
    "measured_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    "git_commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip(),
    "lifecycle": {"count": count, "single": [p[0] for p in pairs], "pair": [p[1] for p in pairs],
                  "ratios": [round(p[1] / p[0], 3) for p in pairs if p[0]]},
    "export_rows": rows, "rate": rate, "secs": secs,
    "charges": {m: {k: r[k] for k in ("ok", "errors", "p50_ms", "p99_ms", "rate_per_sec") if k in r} for m, r in charges.items()},
    "exports": {m: exports(m) for m in ("primary", "replica")},
    "replica_fallbacks": fallbacks("replica"),
}
json.dump(result, open(out, "w"), indent=2)
print(f"[replication] -> {out}: lifecycle ratio {statistics.median(result['lifecycle']['ratios']):.2f}; p99 "
      + ", ".join(f"{m} {c['p99_ms']:.1f} ms" for m, c in result["charges"].items()), file=sys.stderr)
PY
