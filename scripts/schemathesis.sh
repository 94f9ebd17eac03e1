#!/usr/bin/env bash
# Checks that the OpenAPI document says exactly what the server does: builds and starts the
# server on a fresh SQLite database, validates the served document (scripts/validate-openapi.sh:
# openapi-spec-validator and openapi-generator-cli), and runs schemathesis (pinned in
# scripts/requirements-schemathesis.txt, installed from PyPI into target/schemathesis-python)
# with all its checks against every operation of GET /api/v1/openapi.json, then over the GSMA
# door's operations against the GSMA's own document (crates/malipo-gsma/spec/). Fails on any
# finding. MALIPO_ST_RUNS picks runs (default: public merchant checker operator agent gateway gsma).
#
# Each group of operations is tested with a credential that holds its scope (a merchant, a second
# credential of it with bulk:approve as the checker, an operator, an agent, a USSD gateway), one
# schemathesis run each; scripts/schemathesis/config.toml has the rules the document cannot state
# and scripts/schemathesis/hooks.py keeps idempotency keys fresh. The test-mode rate limit is
# raised for the run.
#
# Environment: MALIPO_ST_EXAMPLES (examples per operation and phase, default 6),
# MALIPO_ST_SEED (default fixed, so a run is reproducible), MALIPO_ST_WORKERS (default 1: with
# more, hypothesis' parallel lambda parsing trips CPython 3.11's "AST constructor recursion depth
# mismatch" now and then, an error of the tool rather than a finding).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

venv="$root/target/schemathesis-python"
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

# The database lives in memory-backed storage when there is some: the run makes thousands of
# writes, each a file sync on disk.
work=$(mktemp -d -p "$( [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")")
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

# The document as generators read it: OpenAPI 3.1 valid, unique operation ids.
curl -sf "$base/api/v1/openapi.json" -o "$work/openapi.json"
bash scripts/validate-openapi.sh "$work/openapi.json"

token() {
  "$venv/bin/python" - "$base" "$1" <<'PY'
import json, sys, urllib.request
c = json.load(open(sys.argv[2]))
body = json.dumps({"client_id": c["client_id"], "client_secret": c["client_secret"]}).encode()
req = urllib.request.Request(sys.argv[1] + "/api/v1/oauth/token", data=body, headers={"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req))["access_token"])
PY
}
# One run without a credential over the operations that need none (the token and revoke
# endpoints, health, readiness, this document), then one per credential over the operations of
# its scopes, with the token as the `bearer` scheme's credential (added to a copy of the
# configuration): schemathesis then sends it where the document asks for a bearer token, and
# also leaves it out to check that the server refuses. (Given a credential, schemathesis also
# sends it to operations that need none, which the token endpoint rightly refuses: 400, only
# HTTP Basic may authenticate a client in the Authorization header; hence the separate run.)
declare -A tokens
for who in merchant checker operator agent gateway; do
  tokens[$who]=$(token "$work/$who.json")
done
cp scripts/schemathesis/config.toml "$work/public.toml"
{ cat scripts/schemathesis/config.toml; printf '\n[auth.openapi.bearer]\nbearer = "${MALIPO_ST_TOKEN}"\n'; } >"$work/bearer.toml"
cd "$root/target"
failed=()
for who in ${MALIPO_ST_RUNS:-public merchant checker operator agent gateway gsma}; do
  [ "$who" = gsma ] && continue
  config="$work/bearer.toml"
  case "$who" in
    public) config="$work/public.toml" args=(--include-tag-regex '^(Auth|Operations)$') ;;
    merchant) args=(--exclude-name-regex '(/approve|/reject|/ussd)$|^[A-Z]+ /api/v1/(wallets|agents|oauth)(/|$)|^GET /(healthz|readyz|api/v1/openapi\.json)$') ;;
    checker) args=(--include-name-regex '^POST /api/v1/bulk-payouts/\{batch_id\}/(approve|reject)$') ;;
    operator) args=(--include-tag Wallets) ;;
    agent) args=(--include-tag Agents) ;;
    gateway) args=(--include-name 'POST /api/v1/ussd') ;;
  esac
  printf '\n--- schemathesis, %s run (%s)\n' "$who" "${args[*]}"
  status=0
  MALIPO_ST_TOKEN=${tokens[$who]:-} PYTHONPATH="$root/scripts/schemathesis" SCHEMATHESIS_HOOKS=hooks \
    "$venv/bin/schemathesis" --config-file "$config" \
    run "$base/api/v1/openapi.json" "${args[@]}" \
    --checks all \
    --phases examples,coverage,fuzzing,stateful \
    --max-examples "${MALIPO_ST_EXAMPLES:-6}" \
    --seed "${MALIPO_ST_SEED:-20261122}" \
    --workers "${MALIPO_ST_WORKERS:-1}" \
    --request-timeout 10 \
    --report junit --report-dir "$root/target/schemathesis-report/$who" \
    || status=$?
  [ "$status" -eq 0 ] || failed+=("$who")
done

# The GSMA door (docs/gsma.md) against the GSMA's own master document, limited to the operations
# it builds, with the merchant's token: no 5xx, statuses, media types, headers and bodies as the
# document gives them. (The document declares no security scheme, so the token goes as a header;
# the checks that expect the document's every valid request to succeed do not apply to a door
# whose payments have rules of state the document cannot state.)
gsma_built='^(GET /heartbeat|POST /transactions/type/\{transactionType\}|(GET|PATCH) /transactions/\{transactionReference\}|POST /transactions/\{transactionReference\}/reversals|GET /requeststates/\{serverCorrelationId\}|GET /responses/\{clientCorrelationId\}|GET /accounts/balance|GET /accounts/\{identifierType\}/\{identifier\}/(balance|accountname|transactions|statemententries)|POST /batchtransactions|(GET|PATCH) /batchtransactions/\{batchId\}|GET /batchtransactions/\{batchId\}/(rejections|completions))$'
if [[ " ${MALIPO_ST_RUNS:-gsma} " == *" gsma "* ]]; then
  printf '\n--- schemathesis, the GSMA door (%s)\n' "$gsma_built"
  # A completed merchant payment and a batch awaiting approval, made through the door, whose ids
  # scripts/schemathesis/gsma.toml gives the operations that read one.
  eval "$("$venv/bin/python" - "$base" "${tokens[merchant]}" <<'PY'
import json, random, sys, time, urllib.request, uuid
base, token = sys.argv[1], sys.argv[2]
def call(method, path, body=None, headers=None):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json", **(headers or {})})
    return json.load(urllib.request.urlopen(req))
client = str(uuid.uuid4())
# A payer of its own: the merchant run before this one spends the sandbox wallets it drew.
payer = f"2547{random.randint(0, 9999):04d}0000"
state = call("POST", "/gsma/mm/v1.2/transactions/type/merchantpay",
             {"amount": "500", "currency": "KES", "debitParty": [{"key": "msisdn", "value": payer}]}, {"X-CorrelationID": client})
deadline = time.time() + 30
while state["status"] == "pending" and time.time() < deadline:
    time.sleep(0.2)
    state = call("GET", "/gsma/mm/v1.2/requeststates/" + state["serverCorrelationId"])
assert state["status"] == "completed", state
account = next(a["account_id"] for a in call("GET", "/api/v1/accounts")["data"] if a["type"] == "collection")
item = {"type": "disbursement", "amount": "10", "currency": "KES", "creditParty": [{"key": "msisdn", "value": payer}]}
batch = call("POST", "/gsma/mm/v1.2/batchtransactions", {"transactions": [item], "batchTitle": "ST-BATCH"})["objectReference"]
print(f"export GSMA_TRANSACTION={state['objectReference']} GSMA_SERVER_CORRELATION_ID={state['serverCorrelationId']} "
      f"GSMA_CLIENT_CORRELATION_ID={client} GSMA_ACCOUNT={account} GSMA_BATCH={batch}")
PY
)"
  status=0
  "$venv/bin/schemathesis" --config-file "$root/scripts/schemathesis/gsma.toml" run "$root/crates/malipo-gsma/spec/mobile-money-api-specification-1.2.0-master_0.yaml" \
    --url "$base/gsma/mm/v1.2" \
    --include-name-regex "$gsma_built" \
    -H "Authorization: Bearer ${tokens[merchant]}" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance \
    --phases examples,coverage,fuzzing \
    --max-examples "${MALIPO_ST_EXAMPLES:-6}" \
    --seed "${MALIPO_ST_SEED:-20261122}" \
    --workers "${MALIPO_ST_WORKERS:-1}" \
    --request-timeout 10 \
    --report junit --report-dir "$root/target/schemathesis-report/gsma" \
    || status=$?
  [ "$status" -eq 0 ] || failed+=(gsma)
fi

if [ "${#failed[@]}" -ne 0 ]; then
  echo "schemathesis found the document and the server disagreeing (runs: ${failed[*]}); server log, last lines:" >&2
  tail -n 20 "$work/server.log" >&2
  exit 1
fi
echo "schemathesis: the server answered as its OpenAPI document says, on every operation"
