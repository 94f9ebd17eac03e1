#!/usr/bin/env bash
# token-flood-one.sh BINARY LABEL (called by bench/token-flood.sh): 64 connections posting a wrong secret for a real client id for 15 s,
# while one client requests a token with the right secret 40 times; prints wrong-secret
# answers/s and the legitimate request's p50/p99.
set -euo pipefail
BIN=$1; LABEL=$2
DIR=$(mktemp -d); PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export MALIPO_DATABASE_URL=sqlite://$DIR/m.db MALIPO_BIND=127.0.0.1:$PORT MALIPO_LOG=error MALIPO_RATE_LIMIT_TEST=1000000 MALIPO_DEMO=false
ORG=$($BIN org create --name Flood --kind merchant --json)
CID=$(python3 -c 'import json,sys;print(json.loads(sys.argv[1])["client_id"])' "$ORG")
CS=$(python3 -c 'import json,sys;print(json.loads(sys.argv[1])["client_secret"])' "$ORG")
$BIN serve >/dev/null 2>&1 & PID=$!
for _ in $(seq 1 100); do curl -sf localhost:$PORT/readyz >/dev/null && break; sleep 0.1; done
cat > $DIR/wrong.lua <<LUA
wrk.method = "POST"
wrk.body   = '{"client_id":"$CID","client_secret":"cs_test_wrongwrongwrongwrongwrongwrongwrong00"}'
wrk.headers["Content-Type"] = "application/json"
LUA
wrk -t2 -c64 -d15s -s $DIR/wrong.lua http://127.0.0.1:$PORT/api/v1/oauth/token > $DIR/wrk.txt &
WRK=$!
sleep 2
for i in $(seq 1 40); do
  curl -s -o /dev/null -w '%{time_total}\n' localhost:$PORT/api/v1/oauth/token -H 'Content-Type: application/json' -d "{\"client_id\":\"$CID\",\"client_secret\":\"$CS\"}"
done > $DIR/legit.txt
wait $WRK
kill $PID; wait $PID 2>/dev/null || true
RPS=$(awk '/Requests\/sec/ {print $2}' $DIR/wrk.txt)
python3 - "$LABEL" "$RPS" $DIR/legit.txt <<'PY'
import sys
label, rps, path = sys.argv[1], sys.argv[2], sys.argv[3]
v = sorted(float(x) * 1000 for x in open(path) if x.strip())
print(f"{label}: wrong-secret answers {float(rps):.0f}/s; legitimate token p50 {v[len(v)//2]:.1f} ms, p99 {v[min(len(v)-1,int(len(v)*0.99))]:.1f} ms (n={len(v)})")
PY
rm -rf $DIR
