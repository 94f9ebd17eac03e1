#!/usr/bin/env bash
# Builds and runs crates/malipo-client/tests/standalone, an integrator's program outside the
# workspace, offline: it fails when depending on malipo-client turns on serde_json's
# `arbitrary_precision` (inside the workspace the server's dependency turns it on for every
# member, so only a program of its own shows what an integrator gets).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=crates/malipo-client/tests/standalone
# The workspace's versions, so that nothing needs the network.
cp Cargo.lock "$dir/Cargo.lock"
CARGO_TARGET_DIR="${STANDALONE_TARGET_DIR:-target/standalone-client}" \
    cargo run --offline --quiet --manifest-path "$dir/Cargo.toml"
