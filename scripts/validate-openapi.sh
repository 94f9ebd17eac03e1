#!/usr/bin/env bash
# Validates an OpenAPI document (the served GET /api/v1/openapi.json) as the tools integrators
# feed it to do: openapi-spec-validator (OpenAPI 3.1 and its JSON Schema) and
# `openapi-generator-cli validate` (the generator's own checks, unique operation ids among them).
# Called by scripts/schemathesis.sh (CI) with the document it fetched; alone:
#
#   bash scripts/validate-openapi.sh openapi.json
#
# Installs scripts/requirements-openapi.txt into target/openapi-python, and Debian's
# default-jre-headless when there is no `java`.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DOCUMENT" >&2; exit 2; }
doc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/.."
venv="$PWD/target/openapi-python"
stamp="$venv/requirements.installed"
if ! cmp -s scripts/requirements-openapi.txt "$stamp" 2>/dev/null; then
  echo "installing scripts/requirements-openapi.txt into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r scripts/requirements-openapi.txt
  cp scripts/requirements-openapi.txt "$stamp"
fi
if ! command -v java >/dev/null; then
  echo "installing Debian's default-jre-headless (openapi-generator-cli runs on Java)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless) || { echo "cannot install Java" >&2; exit 1; }
fi
"$venv/bin/openapi-spec-validator" "$doc"
"$venv/bin/openapi-generator-cli" validate --input-spec "$doc"
