#!/usr/bin/env bash
# Transactions at scale: one merchant's collection account holding BENCH_TX_ROWS transactions
# (1,000,000 by default, BENCH_TX_PER_DAY a local day), seeded with SQL straight into the tables
# (not through the API; each with its wallet and revenue lines, 3,000,000 postings in all), on
# PostgreSQL and SQLite. Called by bench/run.sh (`just bench`), or alone.
#
# For each backend it creates the merchant with the CLI, seeds the journals and postings with one
# INSERT ... SELECT (a running balance, so every day chains), starts the release server, and
# measures:
#   - GET /transactions: the first page and a deep page (cursor in the middle), 200 requests
#     each over one kept-alive connection: p50/p99 from curl's own timings;
#   - GET /reconciliation/daily for one seeded day (BENCH_TX_PER_DAY transactions): 5 runs;
#   - GET /transactions/export of the whole account: rows/s, bytes, and the server's peak
#     resident memory (VmHWM) before and after;
#   - on PostgreSQL, EXPLAIN of the list's and the report's queries (index use).
# The seeded journals carry no audit-chain hashes, so `ledger verify` is not run on them.
# Results: BENCH_OUT/transactions-<backend>.json (+ transactions-explain.txt); bench/report.py
# writes the "Transactions" section of docs/performance.md.
#
# Knobs: BENCH_OUT (bench-out), BENCH_MALIPO_BIN (target/release/malipo), BENCH_SKIP_BUILD (0),
# BENCH_TX_BACKENDS ("postgres sqlite"), BENCH_TX_ROWS (1000000), BENCH_TX_PER_DAY (100000).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=${BENCH_OUT:-$ROOT/bench-out}
MALIPO=${BENCH_MALIPO_BIN:-$ROOT/target/release/malipo}
BACKENDS=${BENCH_TX_BACKENDS:-postgres sqlite}
ROWS=${BENCH_TX_ROWS:-1000000}
PER_DAY=${BENCH_TX_PER_DAY:-100000}
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
# Loopback connections without TLS (PGSSLMODE, read by libpq in pgbench, psql and the server
# alike): TLS to a database on the same machine protects nothing and cost a quarter of the CPU.
export PGSSLMODE=${PGSSLMODE:-disable}
PG_DB=malipo_bench_transactions
KEY=$(head -c 32 /dev/urandom | base64)
SERVER_PID=
WORK=$(mktemp -d)
mkdir -p "$OUT"

log() { printf '[transactions %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
stop_server() { [[ -n $SERVER_PID ]] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; SERVER_PID=; }
cleanup() { stop_server || true; rm -rf "$WORK"; }
trap cleanup EXIT

if [[ ${BENCH_SKIP_BUILD:-0} != 1 ]]; then
    cargo build --release -p malipo --quiet
fi
[[ -x $MALIPO ]] || die "$MALIPO not built"

# seed_sql BACKEND ACCOUNT_ID (uses ROWS and PER_DAY).
# shellcheck source=bench/seed-transactions.sh
. "$ROOT/bench/seed-transactions.sh"

# timings URL N: N requests over one connection; prints each time_total in ms.
timings() {
    local args=() i
    for ((i = 0; i < $2; i++)); do args+=(-o /dev/null "$1"); done
    curl -s -H "Authorization: Bearer $TOKEN" -w '%{time_total}\n' "${args[@]}" | awk '{printf "%.3f\n", $1 * 1000}'
}

# stats FILE: {"p50":..,"p99":..} of a column of numbers.
stats() {
    python3 -c 'import json,statistics,sys; v=sorted(float(x) for x in open(sys.argv[1]) if x.strip()); print(json.dumps({"n": len(v), "p50": round(statistics.median(v), 2), "p99": round(v[min(len(v)-1, int(len(v)*0.99))], 2)}))' "$1"
}

hwm_kb() { awk '/VmHWM/ {print $2}' "/proc/$SERVER_PID/status"; }

for backend in $BACKENDS; do
    log "$backend: fresh database"
    if [[ $backend == postgres ]]; then
        psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $PG_DB" -c "CREATE DATABASE $PG_DB" >/dev/null
        URL="postgres://$PGUSER@$PGHOST:$PGPORT/$PG_DB"
        SQL=(psql -qAt -v ON_ERROR_STOP=1 -d "$PG_DB")
    else
        URL="sqlite://$WORK/bench.db"
        SQL=(python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.stdin.read()) if len(sys.argv)<3 else print("\n".join("|".join(map(str,r)) for r in c.execute(sys.argv[2]))); c.commit()' "$WORK/bench.db")
    fi
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    ENV=(MALIPO_DATABASE_URL="$URL" MALIPO_BIND="127.0.0.1:$port" MALIPO_WEBHOOK_KEY="$KEY" MALIPO_LOG=warn
         MALIPO_RATE_LIMIT_TEST=1000000 MALIPO_SANDBOX_APPROVAL_DELAY_MS=3600000)
    env "${ENV[@]}" "$MALIPO" migrate >/dev/null
    org=$(env "${ENV[@]}" "$MALIPO" org create --name "Bench Shop" --kind merchant --json)
    org_id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["organisation_id"])' "$org")
    client_id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["client_id"])' "$org")
    secret=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["client_secret"])' "$org")
    account_query="SELECT id FROM accounts WHERE org_id = '$org_id' AND mode = 'test' AND kind = 'collection'"
    if [[ $backend == postgres ]]; then account=$("${SQL[@]}" -c "$account_query"); else account=$("${SQL[@]}" "$account_query"); fi
    log "$backend: seeding $ROWS transactions ($PER_DAY a day) into $account"
    t0=$(date +%s.%N)
    seed_sql "$backend" "$account" | "${SQL[@]}" >/dev/null
    seed_secs=$(python3 -c "import sys; print(round($(date +%s.%N) - $t0, 1))")
    log "$backend: seeded in ${seed_secs}s"

    env "${ENV[@]}" "$MALIPO" serve >"$WORK/server-$backend.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
    API="http://127.0.0.1:$port/api/v1"
    TOKEN=$(curl -sf "$API/oauth/token" -H 'Content-Type: application/json' \
        -d "{\"client_id\":\"$client_id\",\"client_secret\":\"$secret\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')

    timings "$API/transactions?limit=100" 200 >"$WORK/first.txt"
    # A cursor is a posting's place in ledger order: the middle of the seeded run.
    mid=$(curl -sf -H "Authorization: Bearer $TOKEN" "$API/transactions?limit=1" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["next_cursor"]) - '"$ROWS"' // 2)')
    timings "$API/transactions?limit=100&cursor=$mid" 200 >"$WORK/deep.txt"
    day=$(python3 -c "import datetime; print((datetime.datetime.utcnow() + datetime.timedelta(hours=3) - datetime.timedelta(days=3)).date())")
    timings "$API/reconciliation/daily?date=$day" 5 >"$WORK/daily.txt"
    read -r count day_from day_to < <(curl -sf -H "Authorization: Bearer $TOKEN" "$API/reconciliation/daily?date=$day" | python3 -c '
import datetime, json, sys
r = json.load(sys.stdin)
us = lambda t: int(datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()) * 1000000
print(r["transaction_count"], us(r["from"]), us(r["to"]))')
    hwm_before=$(hwm_kb)
    read -r export_secs export_bytes < <(curl -s -H "Authorization: Bearer $TOKEN" -o "$WORK/export.csv" -w '%{time_total} %{size_download}\n' "$API/transactions/export?account=collection")
    hwm_after=$(hwm_kb)
    export_rows=$(($(wc -l <"$WORK/export.csv") - 1))
    rm -f "$WORK/export.csv"
    if [[ $backend == postgres ]]; then
        {
            echo "-- the list's first page"
            psql -qAt -d "$PG_DB" -c "EXPLAIN SELECT p.id FROM postings p JOIN journals j ON j.id = p.journal_id WHERE p.account_id = '$account' ORDER BY p.id DESC LIMIT 101"
            echo "-- a deep page"
            psql -qAt -d "$PG_DB" -c "EXPLAIN SELECT p.id FROM postings p JOIN journals j ON j.id = p.journal_id WHERE p.account_id = '$account' AND p.id < $mid ORDER BY p.id DESC LIMIT 101"
            echo "-- a day of the report: where it starts (the account's last posting before the day)"
            last_before="SELECT p.id FROM postings p WHERE p.account_id = '$account' AND p.created_at < $day_from ORDER BY p.account_id DESC, p.created_at DESC, p.id DESC LIMIT 1"
            psql -qAt -d "$PG_DB" -c "EXPLAIN $last_before"
            lo=$(psql -qAt -d "$PG_DB" -c "$last_before")
            hi=$(psql -qAt -d "$PG_DB" -c "SELECT p.id FROM postings p WHERE p.account_id = '$account' AND p.created_at < $day_to ORDER BY p.account_id DESC, p.created_at DESC, p.id DESC LIMIT 1")
            echo "-- a page of the day (seq bounds $lo..$hi)"
            psql -qAt -d "$PG_DB" -c "EXPLAIN SELECT p.id FROM postings p JOIN journals j ON j.id = p.journal_id WHERE p.account_id = '$account' AND p.id > $lo AND p.id <= $hi ORDER BY p.id LIMIT 10000"
        } >"$OUT/transactions-explain.txt"
    fi
    stop_server
    python3 - "$OUT/transactions-$backend.json" <<PY
import json, sys
def stats(path):
    v = sorted(float(x) for x in open(path) if x.strip())
    return {"n": len(v), "p50": round(v[len(v) // 2], 2), "p99": round(v[min(len(v) - 1, int(len(v) * 0.99))], 2)}
json.dump({
    "backend": "$backend", "rows": $ROWS, "per_day": $PER_DAY, "seed_secs": $seed_secs,
    "first_page_ms": stats("$WORK/first.txt"), "deep_page_ms": stats("$WORK/deep.txt"),
    "daily_ms": stats("$WORK/daily.txt"), "daily_count": $count,
    "export_secs": $export_secs, "export_rows": $export_rows, "export_bytes": $export_bytes,
    "export_rows_per_sec": round($export_rows / $export_secs),
    "rss_peak_before_mib": round($hwm_before / 1024, 1), "rss_peak_after_mib": round($hwm_after / 1024, 1),
}, open(sys.argv[1], "w"), indent=1)
PY
    log "$backend: $(tr -d '\n ' <"$OUT/transactions-$backend.json")"
    if [[ $backend == postgres ]]; then psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $PG_DB" >/dev/null; fi
done
