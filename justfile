# Benchmark the release server on PostgreSQL and SQLite against pgbench; writes docs/performance.md
# (raw results in bench-out/). Needs PostgreSQL at 127.0.0.1:5432 (user postgres), psql, pgbench,
# curl and python3. See bench/run.sh for the knobs.
bench:
    BENCH_COMMAND="just bench" bash bench/run.sh
