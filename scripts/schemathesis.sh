#!/usr/bin/env bash
# Checks that the OpenAPI document says exactly what the server does: builds and starts the
# server on a fresh SQLite database, and runs schemathesis (pinned in
# scripts/requirements-schemathesis.txt, installed from PyPI into target/schemathesis-python)
# with all its checks against every operation of GET /api/v1/openapi.json. Fails on any finding.
#
# Each group of operations is called with a credential that holds its scope (a merchant, a second
# credential of it with bulk:approve as the checker, an operator, an agent, a USSD gateway); see
# scripts/schemathesis/config.toml. The test-mode rate limit is raised for the run.
#
# Environment: MALIPO_ST_EXAMPLES (examples per operation and phase, default 8),
# MALIPO_ST_SEED (default fixed, so a run is reproducible), MALIPO_ST_WORKERS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

venv=target/schemathesis-python
stamp="$venv/requirements.installed"
if ! cmp -s scripts/requirements-schemathesis.txt "$stamp" 2>/dev/null; then
  echo "installing scripts/requirements-schemathesis.txt into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r scripts/requirements-schemathesis.txt
  cp scripts/requirements-schemathesis.txt "$stamp"
fi

cargo build --quiet -p malipo
bin="$root/target/debug/malipo"

work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

export MALIPO_DATABASE_URL="sqlite://$work/malipo.db" MALIPO_DEMO=false MALIPO_LOG=warn
"$bin" migrate >/dev/null
field() { "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
"$bin" org create --name "Schemathesis Merchant" --kind merchant --json >"$work/merchant.json"
merchant_org=$(field organisation_id <"$work/merchant.json")
"$bin" credentials issue --org "$merchant_org" --mode test --scopes "bulk:approve" --json >"$work/checker.json"
"$bin" org create --name "Schemathesis Operator" --kind operator --json >"$work/operator.json"
"$bin" org create --name "Schemathesis Agent" --kind agent --json >"$work/agent.json"
"$bin" org create --name "Schemathesis Gateway" --kind gateway --json >"$work/gateway.json"

port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
MALIPO_BIND="127.0.0.1:$port" MALIPO_RATE_LIMIT_TEST=1000000 "$bin" serve >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
  curl -sf "$base/readyz" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; echo "the server did not start" >&2; exit 1; }
  sleep 0.2
done

token() {
  "$venv/bin/python" - "$base" "$1" <<'PY'
import json, sys, urllib.request
c = json.load(open(sys.argv[2]))
body = json.dumps({"client_id": c["client_id"], "client_secret": c["client_secret"]}).encode()
req = urllib.request.Request(sys.argv[1] + "/api/v1/oauth/token", data=body, headers={"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req))["access_token"])
PY
}
MALIPO_ST_MERCHANT=$(token "$work/merchant.json")
MALIPO_ST_CHECKER=$(token "$work/checker.json")
MALIPO_ST_OPERATOR=$(token "$work/operator.json")
MALIPO_ST_AGENT=$(token "$work/agent.json")
MALIPO_ST_GATEWAY=$(token "$work/gateway.json")
export MALIPO_ST_MERCHANT MALIPO_ST_CHECKER MALIPO_ST_OPERATOR MALIPO_ST_AGENT MALIPO_ST_GATEWAY

# Run from target/, where schemathesis keeps its cache (.schemathesis/).
status=0
cd "$root/target"
PYTHONPATH="$root/scripts/schemathesis" SCHEMATHESIS_HOOKS=hooks "$root/$venv/bin/schemathesis" \
  --config-file "$root/scripts/schemathesis/config.toml" \
  run "$base/api/v1/openapi.json" \
  --checks all \
  --phases examples,coverage,fuzzing,stateful \
  --max-examples "${MALIPO_ST_EXAMPLES:-8}" \
  --seed "${MALIPO_ST_SEED:-20261122}" \
  --workers "${MALIPO_ST_WORKERS:-2}" \
  --request-timeout 10 \
  --report junit --report-dir "$root/target/schemathesis-report" \
  || status=$?
if [ "$status" -ne 0 ]; then
  echo "schemathesis found the document and the server disagreeing (server log: last lines below)" >&2
  tail -n 20 "$work/server.log" >&2
fi
exit "$status"
