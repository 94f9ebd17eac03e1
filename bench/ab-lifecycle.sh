#!/usr/bin/env bash
# Side-by-side sandbox lifecycle rate of two server binaries (e.g. before and after a change):
#
#   bash bench/ab-lifecycle.sh OLD_BINARY NEW_BINARY [ROUNDS]
#
# For each backend (SQLite, then PostgreSQL) it alternates OLD, NEW, OLD, NEW, ... ROUNDS times
# (default 3), each round on a fresh database with the sandbox approving at once, and measures
# created -> completed for 3,000 charges with target/release/malipo-loadgen.
# Prints each round and the medians with the NEW/OLD ratio, so a regression is measured on the
# same machine at the same time rather than against an older run's figures.
# To compare two load generators instead (e.g. before and after it moved onto malipo-client), give
# the same server binary twice and BENCH_AB_OLD_LOADGEN / BENCH_AB_NEW_LOADGEN (each defaults to
# the one load generator).
# BENCH_AB_BACKENDS (default "sqlite postgres") picks the backends, BENCH_AB_MERCHANTS (default 1)
# how many merchants the charges are spread over. Needs PostgreSQL at
# 127.0.0.1:5432 (user postgres) and python3.
set -euo pipefail
export PGOPTIONS="-c client_min_messages=warning"
export PGSSLMODE=${PGSSLMODE:-disable} # loopback without TLS, as bench/run.sh
cd "$(dirname "$0")/.."

OLD=${1:?old server binary} NEW=${2:?new server binary} ROUNDS=${3:-3}
LOADGEN=${BENCH_LOADGEN:-target/release/malipo-loadgen}
OLD_LOADGEN=${BENCH_AB_OLD_LOADGEN:-$LOADGEN} NEW_LOADGEN=${BENCH_AB_NEW_LOADGEN:-$LOADGEN}
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
    old=() new=()
    for i in $(seq "$ROUNDS"); do
        for which in old new; do
            if [[ $backend == sqlite ]]; then
                url="sqlite://$WORK/ab-$which-$i.db"
            else
                db="malipo_ab_${which}_$i"
                psql -X -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
                url="postgres://postgres@127.0.0.1:5432/$db"
            fi
            bin=$OLD LOADGEN=$OLD_LOADGEN
            [[ $which == new ]] && bin=$NEW LOADGEN=$NEW_LOADGEN
            rate=$(lifecycle_round "$bin" "$url" "${BENCH_AB_MERCHANTS:-1}")
            echo "$backend round $i $which: $rate/s"
            if [[ $which == old ]]; then old+=("$rate"); else new+=("$rate"); fi
            [[ $backend == postgres ]] && psql -X -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db"
        done
    done
    python3 - "$backend" "${old[*]}" "${new[*]}" <<'EOF'
import statistics, sys
backend, old, new = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
mo, mn = statistics.median(old), statistics.median(new)
print(f"{backend}: median old {mo:.1f}/s, new {mn:.1f}/s, new/old {mn / mo:.2f}")
EOF
done
