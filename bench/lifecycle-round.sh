# Sourced by bench/ab-lifecycle.sh and bench/merchants.sh: one round of the sandbox lifecycle.
#
#   lifecycle_round BINARY DATABASE_URL MERCHANTS  -> prints the lifecycle rate (charges/s)
#
# Starts BINARY on DATABASE_URL with the sandbox approving at once, creates MERCHANTS merchants,
# runs $WARMUP charges (then ANALYZE on PostgreSQL) and measures $COUNT charges spread over them with
# $LOADGEN, and stops the server. Needs $WORK (a scratch directory), $KEY (a webhook key), $LOADGEN
# and $COUNT; $WARMUP defaults to 1,000; leaves the server's pid in $WORK/server.pid for the
# caller's exit trap (the round runs in a subshell, so a variable would not reach it).
lifecycle_round() {
    local bin=$1 url=$2 merchants=$3 port
    local WARMUP=${WARMUP:-1000}
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    local env=(MALIPO_DATABASE_URL="$url" MALIPO_BIND="127.0.0.1:$port" MALIPO_RATE_LIMIT_TEST=1000000
        MALIPO_SANDBOX_APPROVAL_DELAY_MS=0 MALIPO_CHARGE_TTL_SECONDS=600 MALIPO_LOG=warn MALIPO_WEBHOOK_KEY="$KEY")
    env "${env[@]}" "$bin" serve >"$WORK/server.log" 2>&1 &
    PID=$!
    echo "$PID" >"$WORK/server.pid"
    for _ in $(seq 300); do
        curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    : >"$WORK/creds.jsonl"
    for i in $(seq "$merchants"); do
        env "${env[@]}" timeout 60 "$bin" org create --name "bench-$i" --kind merchant --json 2>/dev/null |
            python3 -c 'import json, sys; t = sys.stdin.read(); print(json.dumps(json.loads(t[t.index("{"):])))' >>"$WORK/creds.jsonl"
    done
    # As bench/run.sh does: a first run of charges, then (on PostgreSQL) ANALYZE, so that the
    # measured run is planned on populated tables, as a running system's autovacuum would have it
    # (plans made on empty tables would scan them sequentially as they grow).
    timeout 150 "$LOADGEN" lifecycle --base-url "http://127.0.0.1:$port/api/v1" --credentials "$WORK/creds.jsonl" \
        --count "$WARMUP" --concurrency 32 --timeout-secs 120 >/dev/null
    if [[ $url == postgres* ]]; then
        psql -X -q "$url" -c 'ANALYZE'
    fi
    timeout 150 "$LOADGEN" lifecycle --base-url "http://127.0.0.1:$port/api/v1" --credentials "$WORK/creds.jsonl" \
        --count "$COUNT" --concurrency 32 --timeout-secs 120 |
        python3 -c 'import json, sys; print("%.1f" % json.load(sys.stdin)["lifecycle_per_sec"])'
    kill "$PID"
    wait "$PID" 2>/dev/null || true
}
