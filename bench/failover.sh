#!/usr/bin/env bash
# Failovers of the database server (issue 32), measured. Called by bench/run.sh (`just bench`),
# or alone:
#
#   bash bench/failover.sh
#
# Runs the failover test (apps/malipo/tests/it/failover.rs) BENCH_FAILOVER_RUNS times (default 3;
# each run is two failovers: the primary killed, then the new primary frozen) on a three-node
# Patroni cluster of its own (scripts/cluster/up.sh; etcd and Patroni from Debian's packages),
# with two Malipo instances (the debug build the test builds) under four loops of charges,
# payouts and reversals. Keeps, per run: the seconds from each death to the first acknowledged
# request begun after it, the longest any request waited, the answers; a run fails if anything
# acknowledged is lost or doubled. Writes BENCH_OUT/failover.json (default bench-out/);
# bench/report_failover.py puts it in docs/performance.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=${BENCH_OUT:-$ROOT/bench-out}
RUNS=${BENCH_FAILOVER_RUNS:-3}
mkdir -p "$OUT"
export MALIPO_TEST_POSTGRES_URL="${MALIPO_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
for run in $(seq 1 "$RUNS"); do
  echo "[failover $(date +%H:%M:%S)] run $run of $RUNS" >&2
  cargo test -q -p malipo --test it failover -- --nocapture >>"$LOG" 2>&1 || { tail -40 "$LOG" >&2; exit 1; }
done
python3 - "$LOG" "$OUT/failover.json" <<'PY'
import datetime, json, subprocess, sys
runs = [json.loads(l.split("BENCH ", 1)[1]) for l in open(sys.argv[1]) if "BENCH {" in l]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
assert runs, "the test printed no BENCH lines"
out = {"measured_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "git_commit": commit, "runs": runs}
json.dump(out, open(sys.argv[2], "w"), indent=2)
print(f"[failover] {len(runs)} runs -> {sys.argv[2]}", file=sys.stderr)
PY
