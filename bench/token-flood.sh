#!/usr/bin/env bash
# Token flood, side by side: bash bench/token-flood.sh OLD_BINARY NEW_BINARY (each a `malipo` binary).
# For each binary: a fresh SQLite database, one merchant, 64 connections (wrk) posting a wrong secret for
# its real client id for 15 s while one client asks for a token with the right secret 40 times in a
# row; prints the wrong-secret answers/s and the legitimate request p50/p99. Needs wrk, curl, python3.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for bin in "$@"; do bash "$ROOT/bench/token-flood-one.sh" "$bin" "$bin"; done
