#!/usr/bin/env bash
# What a rate-limit bucket shared through PostgreSQL would cost (docs/api-decisions.md, "Rate limits
# across instances"): pgbench, 16 clients for 10 s each, on a scratch table in database `test`:
#   read  - reading one credential's bucket row (what every request does at least);
#   one   - updating one credential's bucket (every request of one busy credential);
#   many  - updating the buckets of 1,000 credentials at random.
# Prints one line per script: tps and average latency. Needs psql and pgbench (PGHOST etc. honoured).
set -euo pipefail
export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres}
# Loopback connections without TLS (PGSSLMODE, read by libpq in pgbench, psql and the server
# alike): TLS to a database on the same machine protects nothing and cost a quarter of the CPU.
export PGSSLMODE=${PGSSLMODE:-disable}
DB=${BENCH_RATELIMIT_DB:-test}
DIR=$(mktemp -d); trap 'rm -rf "$DIR"; psql -q -d "$DB" -c "DROP TABLE IF EXISTS rl_bench" >/dev/null 2>&1 || true' EXIT
psql -q -d "$DB" -c "DROP TABLE IF EXISTS rl_bench" -c "CREATE TABLE rl_bench (k int PRIMARY KEY, tokens double precision, at timestamptz)" \
  -c "INSERT INTO rl_bench SELECT g, 100, now() FROM generate_series(1, 1000) g" >/dev/null
bucket="UPDATE rl_bench SET tokens = LEAST(100, tokens + 100 * EXTRACT(EPOCH FROM now() - at)) - 1, at = now()"
echo "SELECT tokens FROM rl_bench WHERE k = 1;" > "$DIR/read.sql"
echo "$bucket WHERE k = 1 RETURNING tokens;" > "$DIR/one.sql"
printf '\\set k random(1, 1000)\n%s WHERE k = :k RETURNING tokens;\n' "$bucket" > "$DIR/many.sql"
for f in read one many; do
  out=$(pgbench -n -c 16 -j 2 -T 10 -f "$DIR/$f.sql" "$DB" 2>&1)
  tps=$(awk '/^tps/ {print $3}' <<<"$out"); lat=$(awk '/latency average/ {print $4}' <<<"$out")
  printf '%-5s tps %8.0f  latency average %6.2f ms\n' "$f" "$tps" "$lat"
done
