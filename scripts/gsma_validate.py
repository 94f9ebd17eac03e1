#!/usr/bin/env python3
"""Validates answers of Malipo's GSMA door against the GSMA Mobile Money API v1.2 documents' own
schemas (crates/malipo-gsma/spec/: the master document and the four use-case documents, whose
schemas are in places stricter, e.g. an amount's pattern): in every document that has the
answer's operation, its status must be one listed for it, and its body must match the schema
given that status (OpenAPI 3.0 rules, by openapi-schema-validator), with the X-Date header
every response of the documents carries.

Usage: gsma_validate.py ANSWERS.json, where the file holds a list of
{"method": "get", "path": "/transactions/{transactionReference}", "status": 200,
 "headers": {"x-date": "..."}, "body": {...}} (the path as the document writes it, without the
base), or, for a callback Malipo sent, {"callback": "updateTransaction", "headers": …, "body": …}
(the request body the documents' callbacks name). Prints one line per answer and exits 1 when
any breaks the document.
"""
import json
import sys
from pathlib import Path

import yaml
from openapi_schema_validator import OAS30Validator

SPEC = Path(__file__).resolve().parent.parent / "crates/malipo-gsma/spec"


def load():
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = {}
    for path in sorted(SPEC.glob("mobile-money-api-specification-1.2.0-*.yaml")):
        with open(path, encoding="utf-8") as f:
            docs[path.stem.removeprefix("mobile-money-api-specification-1.2.0-")] = yaml.load(f, Loader=loader)
    if "master_0" not in docs:
        raise SystemExit(f"the GSMA documents are missing from {SPEC}")
    return docs


def resolve(doc, node):
    while isinstance(node, dict) and "$ref" in node:
        parts = node["$ref"].lstrip("#/").split("/")
        node = doc
        for p in parts:
            node = node[p]
    return node


def check_callback(doc, answer):
    """The problems of a callback Malipo sent (`"callback": "updateTransaction"` or
    `"updateError"`, the request bodies the documents' callbacks name), as text."""
    body_of = doc.get("components", {}).get("requestBodies", {}).get(answer["callback"])
    if body_of is None:
        return None
    problems = []
    if "x-date" not in {k.lower() for k in answer.get("headers", {})}:
        problems.append("no X-Date header")
    schema = {**resolve(doc, body_of)["content"]["application/json"]["schema"], "components": doc["components"]}
    for error in sorted(OAS30Validator(schema).iter_errors(answer.get("body")), key=lambda e: list(e.path)):
        where = "/".join(str(p) for p in error.path) or "(body)"
        problems.append(f"{where}: {error.message}")
    return problems


def check(doc, answer):
    """The problems of one answer, as text (none when it keeps to the document)."""
    if "callback" in answer:
        return check_callback(doc, answer)
    method, path, status = answer["method"].lower(), answer["path"], int(answer["status"])
    op = doc["paths"].get(path, {}).get(method)
    if op is None:
        return None
    responses = {int(k) if str(k).isdigit() else k: v for k, v in op["responses"].items()}
    if status not in responses:
        return [f"status {status} is not one the document lists ({sorted(k for k in responses if isinstance(k, int))})"]
    response = resolve(doc, responses[status])
    problems = []
    if "x-date" not in {k.lower() for k in answer.get("headers", {})}:
        problems.append("no X-Date header")
    content = response.get("content", {}).get("application/json")
    body = answer.get("body")
    if content is None:
        if body not in (None, ""):
            problems.append("the document gives this status no body")
        return problems
    schema = {**content["schema"], "components": doc["components"]}
    validator = OAS30Validator(schema)
    for error in sorted(validator.iter_errors(body), key=lambda e: list(e.path)):
        where = "/".join(str(p) for p in error.path) or "(body)"
        problems.append(f"{where}: {error.message}")
    return problems


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    answers = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    docs = load()
    failed = 0
    for answer in answers:
        label = f"{answer['method'].upper()} {answer['path']} {answer['status']}"
        found = {name: check(doc, answer) for name, doc in docs.items()}
        found = {name: p for name, p in found.items() if p is not None}
        if not found:
            problems = ["no GSMA document has this operation"]
        else:
            problems = [f"[{name}] {p}" for name, ps in found.items() for p in ps]
        if problems:
            failed += 1
            print(f"BROKEN {label}: " + "; ".join(problems))
        else:
            print(f"ok {label}")
    print(f"{len(answers) - failed} of {len(answers)} answers keep to the GSMA document")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
