# Malipo's tasks. The README's two commands need none of this: `cargo run`, `cargo test --workspace`.

# List the recipes.
default:
    @just --list

# Start the service on the embedded SQLite database (prints sandbox credentials).
run:
    cargo run

# Every test (PostgreSQL at 127.0.0.1:5432 required; tests fail, never skip, without it).
test:
    cargo test --workspace

# What CI runs: PostgreSQL check, fmt, clippy -D warnings, every test.
ci:
    bash .ci/run

# Needs PostgreSQL at 127.0.0.1:5432 (user postgres), psql, pgbench, curl and python3; raw
# results land in bench-out/; see bench/run.sh for the knobs.
# Benchmark the release server on PostgreSQL and SQLite against pgbench; writes docs/performance.md.
bench:
    BENCH_COMMAND="just bench" bash bench/run.sh
