#!/usr/bin/env bash
# The agent's pages and the corporate maker's 10,000-row preview (issue 31), on PostgreSQL and
# SQLite. Called by bench/run.sh (`just bench`), or alone:
#
#   bash bench/console_apps.sh
#
# Runs two of the HTTP tests in a release build (`cargo test --release`), each against a server
# of its own on each backend, and keeps the lines they print for it:
#   - every_agent_page_weighs_under_30_kb_compressed: each agent page (float with 20 of the day's
#     transactions, statement, cash-in, its confirmation and receipt, cash-out, "Waiting for the
#     customer") in bytes, and gzipped (default level) with the stylesheet and script it loads;
#   - ten_thousand_rows_are_previewed_within_two_seconds: five previews of a 10,000-row file
#     (one keep-alive connection, the upload included): the wall time of each, and the
#     server's own "Checked in".
# Writes BENCH_OUT/console-apps.json (default bench-out/); bench/report_console.py puts it in the
# "Console" section of docs/performance.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=${BENCH_OUT:-$ROOT/bench-out}
mkdir -p "$OUT"
export MALIPO_TEST_POSTGRES_URL="${MALIPO_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
echo "[console-apps $(date +%H:%M:%S)] cargo test --release (two tests, both backends)" >&2
cargo test --release -q -p malipo --test it -- --nocapture --test-threads 1 \
  every_agent_page_weighs_under_30_kb_compressed ten_thousand_rows_are_previewed_within_two_seconds >"$LOG" 2>&1 \
  || { tail -50 "$LOG" >&2; exit 1; }
python3 - "$LOG" "$OUT/console-apps.json" <<'PY'
import datetime, json, subprocess, sys
# A test's first line follows the harness's "test NAME ... " on the same line.
lines = [json.loads(l.split("BENCH ", 1)[1]) for l in open(sys.argv[1]) if "BENCH {" in l]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
out = {"measured_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "git_commit": commit,
       "agent_pages": [l for l in lines if "agent_page" in l], "previews": [l for l in lines if "preview_rows" in l]}
assert out["agent_pages"] and out["previews"], "the tests printed no BENCH lines"
json.dump(out, open(sys.argv[2], "w"), indent=2)
print(f"[console-apps] {len(out['agent_pages'])} page weights, {len(out['previews'])} previews -> {sys.argv[2]}", file=sys.stderr)
PY
