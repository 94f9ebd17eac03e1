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
export PGSSLMODE=${PGSSLMODE:-disable} # loopback without TLS, as bench/run.sh
cd "$(dirname "$0")/.."

BIN=${1:-target/release/malipo} ROUNDS=${2:-3}
LOADGEN=${BENCH_LOADGEN:-target/release/malipo-loadgen}
COUNT=${BENCH_LIFECYCLE_COUNT:-3000}
KEY=$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')
WORK=$(mktemp -d)
# Each round runs in a command substitution (a subshell), so its server's pid comes back in a
# file: an unset $PID here made `kill 0`, which stopped this script's whole process group (and a
# pipe reading its output) at exit.
trap '[[ -s $WORK/server.pid ]] && kill "$(cat "$WORK/server.pid")" 2>/dev/null || true; rm -rf "$WORK"' EXIT

# shellcheck source=bench/lifecycle-round.sh
source bench/lifecycle-round.sh

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
            rate=$(lifecycle_round "$BIN" "$url" "$merchants")
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
