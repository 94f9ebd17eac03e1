# Malipo's tasks. The README's two commands need none of this: `cargo run`, `bash scripts/test.sh`.

# List the recipes.
default:
    @just --list

# Start the service on the embedded SQLite database (prints sandbox credentials).
run:
    cargo run

# Every test: the README's test command (PostgreSQL at 127.0.0.1:5432, started if it does not
# answer; tests fail, never skip, without it).
test:
    bash scripts/test.sh

# What CI runs: PostgreSQL check, fmt, shape, clippy -D warnings, schemathesis, then the README's test command.
ci:
    bash .ci/run

# Needs PostgreSQL at 127.0.0.1:5432 (user postgres), psql, pgbench, curl and python3; raw
# results land in bench-out/; see bench/run.sh for the knobs.
# Benchmark the release server on PostgreSQL and SQLite against pgbench; writes docs/performance.md.
bench:
    BENCH_COMMAND="just bench" bash bench/run.sh
