#!/usr/bin/env bash
# The README's test command: prepares what the tests need on this machine, then runs every test
# (`cargo test --workspace --no-fail-fast`: every test binary runs whichever fails; extra
# arguments passed on). Fails, never skips, when PostgreSQL cannot be reached.
#
# - PostgreSQL at MALIPO_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres):
#   started with pg_ctlcluster when it does not answer.
# - libpq, which diesel's PostgreSQL backend links: installed with apt-get when missing.
# - The Python packages of scripts/requirements-test.txt (the webhook tests verify deliveries
#   with the standardwebhooks library; the console's browser journeys run Playwright): installed
#   once into target/test-python, a virtualenv; the tests run it through MALIPO_TEST_PYTHON.
# - etcd and Patroni from Debian's packages, for the failover test's three-node cluster.
# - Chromium from Debian's packages (the browser journeys drive it through Playwright, which
#   never downloads a browser of its own): installed with apt-get when missing; the tests find it
#   through MALIPO_TEST_CHROMIUM.
set -euo pipefail
cd "$(dirname "$0")/.."

export MALIPO_TEST_POSTGRES_URL="${MALIPO_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

pg_answers() { psql "$MALIPO_TEST_POSTGRES_URL" -qAtc 'select 1' >/dev/null 2>&1; }
if ! pg_answers; then
  echo "PostgreSQL does not answer at $MALIPO_TEST_POSTGRES_URL; starting it"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  for _ in $(seq 1 30); do pg_answers && break; sleep 1; done
  pg_answers || { echo "PostgreSQL is unreachable at $MALIPO_TEST_POSTGRES_URL: failing, not skipping" >&2; exit 1; }
fi

if ! { ldconfig -p 2>/dev/null | grep -q 'libpq\.so'; } || [ ! -e /usr/include/postgresql/libpq-fe.h ]; then
  echo "installing libpq-dev (diesel's PostgreSQL backend links libpq)"
  (apt-get update -qq && apt-get install -y -qq libpq-dev) || { echo "cannot install libpq-dev" >&2; exit 1; }
fi

chromium="${MALIPO_TEST_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "installing Debian's chromium (the console's browser journeys drive it)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) || { echo "cannot install chromium" >&2; exit 1; }
fi
export MALIPO_TEST_CHROMIUM="$chromium"

# The failover test (apps/malipo/tests/it/failover.rs) runs a three-node Patroni cluster on
# loopback (scripts/cluster/up.sh): etcd and Patroni from Debian's packages.
if ! command -v etcd >/dev/null || ! command -v patroni >/dev/null || ! command -v jq >/dev/null || ! command -v bc >/dev/null; then
  echo "installing Debian's etcd-server and patroni (the failover test's cluster)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server patroni jq bc curl) \
    || { echo "cannot install etcd-server and patroni" >&2; exit 1; }
fi

venv=target/test-python
stamp="$venv/requirements.installed"
if ! cmp -s scripts/requirements-test.txt "$stamp" 2>/dev/null; then
  echo "installing the Python packages of scripts/requirements-test.txt into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
  cp scripts/requirements-test.txt "$stamp"
fi
export MALIPO_TEST_PYTHON="$PWD/$venv/bin/python"

# The HTTP tests mostly wait on the server and the databases: four at a time keep two cores busy.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"

status=0
cargo test --workspace --no-fail-fast "$@" || status=$?

# An integrator's program outside the workspace: depending on the client turns on no serde_json
# feature, and amounts keep their text without one.
bash scripts/check-client-standalone.sh || status=1
exit "$status"
