#!/usr/bin/env bash
# The console under load (issue 30), on PostgreSQL and SQLite. Called by bench/run.sh
# (`just bench`), or alone:
#
#   bash bench/console.sh [MALIPO_BINARY]     (default: target/release/malipo, built if absent)
#
# For each backend (BENCH_CONSOLE_BACKENDS, default "postgres sqlite"): a fresh database, a merchant
# (the CLI), BENCH_CONSOLE_CHARGES charges (1,000,000 by default, over the last ten days: 98%
# completed, 1% failed, 1% expired, 10,000 payers) seeded with SQL straight into the table, two
# people invited with `malipo user invite` (role viewer: no second factor to enter), and the release
# server. Then, with bench/console_bench.py (one keep-alive connection, as a browser) and wrk:
#   - Charges: the first page, a page filtered by state (failed: 1 in 100), by phone number (a
#     payer's 100 charges) and by a date five days back: 200 requests each, p50/p99; then the first
#     page under load (wrk, 8 connections with the session's cookie, 10 s): p50/p99 and pages/s;
#   - Home (the 14-day chart and today's figures over the seeded charges): 50 requests;
#   - sign-in: a wrong password for a known email and an unknown email, interleaved, each from its
#     own address (p50 of each: the same answer in the same time); the right password at full
#     speed (wrk, 4 connections, 10 s): sign-ins/s and p50/p99, with the Argon2id parameters;
#   - a flood: 64 wrk connections from 127.0.0.1 posting wrong passwords (the first person's email
#     and unknown emails in turn, so the account and then the address lock) while another person
#     signs in and calls the API from 127.0.0.2 (BENCH_CONSOLE_VICTIM_ROUNDS rounds); the same
#     rounds without the flood first: the ratio of p50s is the slowdown.
# Writes BENCH_OUT/console-<backend>.json (default bench-out/); bench/report.py writes the
# "Console" section of docs/performance.md.
# Needs wrk, curl, python3, and PostgreSQL at PGHOST (127.0.0.1) for the postgres backend.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
MALIPO=${1:-$ROOT/target/release/malipo}
OUT=${BENCH_OUT:-$ROOT/bench-out}
BACKENDS=${BENCH_CONSOLE_BACKENDS:-postgres sqlite}
CHARGES=${BENCH_CONSOLE_CHARGES:-1000000}
ROUNDS=${BENCH_CONSOLE_VICTIM_ROUNDS:-40}
export PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
export PGSSLMODE=${PGSSLMODE:-disable}
PG_DB=malipo_bench_console
KEY=$(head -c 32 /dev/urandom | base64)
PASSWORD="bench console passphrase 2026"
DRIVER=(python3 "$ROOT/bench/console_bench.py")
SERVER_PID=
WORK=$(mktemp -d)
mkdir -p "$OUT"

log() { printf '[console %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
stop_server() { if [[ -n $SERVER_PID ]]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=; fi; }
cleanup() { stop_server; rm -rf "$WORK"; }
trap cleanup EXIT

[[ -x $MALIPO ]] || cargo build --release -p malipo --quiet
if ! command -v wrk >/dev/null; then
  log "installing wrk (Debian's package)"
  (apt-get update -qq && apt-get install -y -qq wrk) >&2 || die "wrk is needed (apt-get install wrk)"
fi
json() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# seed_sql BACKEND ORG ACCOUNT: CHARGES charges of KES 250.00 (fee 2.50) over the last ten days,
# ids as the service draws them (a UUIDv7 whose first 48 bits are the creation's millisecond).
seed_sql() {
  local now_us step_us start_us
  now_us=$(($(date +%s) * 1000000))
  step_us=$((864000000000 / CHARGES))
  start_us=$((now_us - CHARGES * step_us))
  local cols="id, org_id, mode, payer_msisdn, amount, fee, currency, amount_reversed, reference, state, failure_reason, transaction_id, merchant_account, created_at, updated_at, expires_at, completed_at, next_action_at, kind, commission"
  if [[ $1 == postgres ]]; then
    cat <<SQL
INSERT INTO charges ($cols)
SELECT 'ch_' || lpad(to_hex((t / 1000)::bigint), 12, '0') || '7' || lpad(to_hex(i), 19, '0'), '$2', 'test',
       '2547' || lpad((i % 10000)::text, 8, '0'), 25000, 250, 'KES', 0, 'order-' || i,
       CASE i % 100 WHEN 0 THEN 'failed' WHEN 1 THEN 'expired' ELSE 'completed' END,
       CASE i % 100 WHEN 0 THEN 'insufficient_funds' WHEN 1 THEN 'expired' END,
       CASE WHEN i % 100 > 1 THEN 'tx_seed' || i END, '$3', t, t, t + 90000000,
       CASE WHEN i % 100 > 1 THEN t + 2000000 END, NULL, 'charge', 0
FROM (SELECT i, $start_us + i::bigint * $step_us AS t FROM generate_series(1, $CHARGES) AS i) AS s;
ANALYZE charges;
SQL
  else
    cat <<SQL
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $CHARGES),
     s(i, t) AS (SELECT i, $start_us + i * $step_us FROM n)
INSERT INTO charges ($cols)
SELECT printf('ch_%012x7%019x', t / 1000, i), '$2', 'test', printf('2547%08d', i % 10000), 25000, 250, 'KES', 0,
       'order-' || i,
       CASE i % 100 WHEN 0 THEN 'failed' WHEN 1 THEN 'expired' ELSE 'completed' END,
       CASE i % 100 WHEN 0 THEN 'insufficient_funds' WHEN 1 THEN 'expired' END,
       CASE WHEN i % 100 > 1 THEN 'tx_seed' || i END, '$3', t, t, t + 90000000,
       CASE WHEN i % 100 > 1 THEN t + 2000000 END, NULL, 'charge', 0
FROM s;
ANALYZE;
SQL
  fi
}

# wrk_stats FILE: {"p50":..,"p99":..,"per_sec":..,"non_2xx_3xx":..} from wrk --latency output.
wrk_stats() {
  python3 - "$1" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
def ms(v):
    n, unit = re.match(r"([\d.]+)(us|ms|s)", v).groups()
    return round(float(n) * {"us": 0.001, "ms": 1, "s": 1000}[unit], 2)
lat = dict(re.findall(r"^\s+(50|99)(?:\.000)?%\s+(\S+)", text, re.M))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(json.dumps({"p50": ms(lat["50"]), "p99": ms(lat["99"]), "per_sec": float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)),
                  "non_2xx_3xx": int(bad.group(1)) if bad else 0}))
PY
}

for backend in $BACKENDS; do
  log "$backend: fresh database"
  if [[ $backend == postgres ]]; then
    psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" -c "CREATE DATABASE $PG_DB" >/dev/null
    URL="postgres://$PGUSER@$PGHOST:$PGPORT/$PG_DB"
    SQL=(psql -qAt -v ON_ERROR_STOP=1 -d "$PG_DB")
  else
    rm -f "$WORK"/bench.db*
    URL="sqlite://$WORK/bench.db"
    SQL=(python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.stdin.read()) if len(sys.argv)<3 else print("\n".join("|".join(map(str,r)) for r in c.execute(sys.argv[2]))); c.commit()' "$WORK/bench.db")
  fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  BASE="http://127.0.0.1:$port"
  ENV=(MALIPO_DATABASE_URL="$URL" MALIPO_BIND="127.0.0.1:$port" MALIPO_WEBHOOK_KEY="$KEY" MALIPO_LOG=warn MALIPO_DEMO=false
       MALIPO_CONSOLE_URL="$BASE/console" MALIPO_RATE_LIMIT_TEST=1000000 MALIPO_SANDBOX_APPROVAL_DELAY_MS=3600000)
  env "${ENV[@]}" "$MALIPO" migrate >/dev/null
  org=$(env "${ENV[@]}" "$MALIPO" org create --name "Bench Shop" --kind merchant --json)
  org_id=$(json "$org" organisation_id); client_id=$(json "$org" client_id); secret=$(json "$org" client_secret)
  account_query="SELECT id FROM accounts WHERE org_id = '$org_id' AND mode = 'test' AND kind = 'collection'"
  if [[ $backend == postgres ]]; then account=$("${SQL[@]}" -c "$account_query"); else account=$("${SQL[@]}" "$account_query"); fi
  log "$backend: seeding $CHARGES charges"
  t0=$(date +%s.%N)
  seed_sql "$backend" "$org_id" "$account" | "${SQL[@]}" >/dev/null
  seed_secs=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
  log "$backend: seeded in ${seed_secs}s"

  env "${ENV[@]}" "$MALIPO" serve >"$WORK/server-$backend.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 300); do curl -sf "$BASE/readyz" >/dev/null && break; sleep 0.2; done
  curl -sf "$BASE/readyz" >/dev/null || { tail -n 30 "$WORK/server-$backend.log" >&2; die "the server did not start"; }

  emails=()
  for who in first second sa1 sa2 sa3 sa4 sa5 sa6; do
    email="$who-$backend@bench.example"
    invited=$(env "${ENV[@]}" "$MALIPO" user invite --org "$org_id" --email "$email" --role viewer --json)
    "${DRIVER[@]}" accept "$BASE" "$(json "$invited" invite_url)" "$PASSWORD" >/dev/null
    emails+=("$email")
  done

  day=$(python3 -c "import datetime; print((datetime.datetime.utcnow() + datetime.timedelta(hours=3) - datetime.timedelta(days=5)).date())")
  log "$backend: Charges and Home"
  pages=$("${DRIVER[@]}" pages "$BASE" "${emails[0]}" "$PASSWORD" 200 /console/charges "/console/charges?state=failed" \
    "/console/charges?phone=0700001234" "/console/charges?from=$day&to=$day")
  home=$("${DRIVER[@]}" pages "$BASE" "${emails[0]}" "$PASSWORD" 50 /console/)
  cookie=$(json "$pages" cookie)
  wrk -t2 -c8 -d10s --latency -H "Cookie: malipo_session=$cookie" "$BASE/console/charges" >"$WORK/wrk-charges.txt"
  charges_load=$(wrk_stats "$WORK/wrk-charges.txt")

  log "$backend: sign-in"
  same=$("${DRIVER[@]}" same-answer "$BASE" "${emails[@]:2}" -- 54)
  cat >"$WORK/signin.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Origin"] = "$BASE"
wrk.body = "email=${emails[1]}&password=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote_plus(sys.argv[1]))' "$PASSWORD")"
LUA
  wrk -t2 -c4 -d10s --latency -s "$WORK/signin.lua" "$BASE/console/login" >"$WORK/wrk-signin.txt"
  signin_load=$(wrk_stats "$WORK/wrk-signin.txt")

  log "$backend: a flood of wrong passwords from 127.0.0.1, another person at 127.0.0.2"
  alone=$("${DRIVER[@]}" victim "$BASE" "${emails[1]}" "$PASSWORD" "$client_id" "$secret" 127.0.0.2 "$ROUNDS")
  cat >"$WORK/flood.lua" <<LUA
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Origin"] = "$BASE"
request = function()
  n = n + 1
  local email = "${emails[0]}"
  if n % 2 == 1 then email = string.format("nobody%08d@bench.example", n) end
  return wrk.format(nil, nil, nil, "email=" .. email .. "&password=wrong+wrong+wrong+wrong")
end
LUA
  wrk -t2 -c64 -d30s --latency -s "$WORK/flood.lua" "$BASE/console/login" >"$WORK/wrk-flood.txt" &
  flood_pid=$!
  sleep 3
  flooded=$("${DRIVER[@]}" victim "$BASE" "${emails[1]}" "$PASSWORD" "$client_id" "$secret" 127.0.0.2 "$ROUNDS")
  still=false; kill -0 $flood_pid 2>/dev/null && still=true
  wait $flood_pid
  flood=$(wrk_stats "$WORK/wrk-flood.txt")
  rss=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER_PID/status")
  stop_server

  python3 - "$OUT/console-$backend.json" <<PY
import json, re, sys
src = open("$ROOT/crates/malipo-auth/src/password.rs").read()
m = re.search(r"Self::with_params\((\d+) \* 1024, (\d+), (\d+)\)", src)
argon = [int(g) for g in m.groups()] if m else None
alone, flooded = json.loads('''$alone'''), json.loads('''$flooded''')
ratio = lambda k: round(flooded[k]["p50"] / alone[k]["p50"], 2)
json.dump({
    "backend": "$backend", "measured_at": "$(date -u +%Y-%m-%dT%H:%MZ)", "git_commit": "$(git rev-parse --short HEAD 2>/dev/null)",
    "charges": $CHARGES, "seed_secs": $seed_secs,
    "pages": json.loads('''$pages''')["pages"], "home": json.loads('''$home''')["pages"]["/console/"],
    "charges_under_load": json.loads('''$charges_load'''),
    "same_answer": json.loads('''$same'''),
    "sign_in_load": json.loads('''$signin_load'''),
    "argon2id": {"m_cost_mib": argon[0], "t_cost": argon[1], "p_cost": argon[2]} if argon else None,
    "flood": {"wrong_per_sec": json.loads('''$flood''')["per_sec"], "flood_outlasted_victim": "$still" == "true",
              "alone": alone, "flooded": flooded,
              "sign_in_ratio": ratio("sign_in_ms"), "api_ratio": ratio("api_ms")},
    "rss_peak_mib": round($rss / 1024, 1),
}, open(sys.argv[1], "w"), indent=1)
PY
  log "$backend: $(tr -d '\n ' <"$OUT/console-$backend.json" | cut -c1-600)"
  if [[ $backend == postgres ]]; then psql -qAt -d postgres -c "DROP DATABASE IF EXISTS $PG_DB WITH (FORCE)" >/dev/null; fi
done
