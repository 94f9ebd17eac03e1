"""Schemathesis hooks for Malipo's run (scripts/schemathesis.sh).

Idempotency keys: the contract answers 422 idempotency_key_reused when a key comes back with a
different request, and schemathesis, which knows nothing of keys, draws the same few values
("0", "00", ...) for many requests. Before each call a key that the document calls valid (the
`Idempotency-Key` header, the body field `idem` of POST /partner/stk) is replaced with a fresh
valid one, the same in both places when both are sent; an invalid key is left as generated, so
negative cases keep testing the server's refusal, and so is a coverage case about the key itself
(a missing or boundary key).

"""
import re
import uuid

import schemathesis

HEADER = re.compile(r'^([!#-~][!-~]{0,254}|"([!#-\[\]-~]|\\["\\]){1,255}")$')
BODY = re.compile(r"^[!-~]{1,255}$")


def _about_the_key(case):
    data = getattr(getattr(getattr(case, "meta", None), "phase", None), "data", None)
    parameter = getattr(data, "parameter", None)
    return isinstance(parameter, str) and parameter.lower() in ("idempotency-key", "idem")


@schemathesis.hook
def before_call(context, case, kwargs):
    if _about_the_key(case):
        return
    fresh = "st-" + uuid.uuid4().hex
    headers = case.headers
    body = case.body if isinstance(case.body, dict) else None
    header_key = next((k for k in (headers or {}) if k.lower() == "idempotency-key"), None)
    header_ok = header_key is not None and isinstance(headers[header_key], str) and bool(HEADER.match(headers[header_key]))
    body_ok = body is not None and isinstance(body.get("idem"), str) and bool(BODY.match(body["idem"]))
    if header_key is not None and header_ok and (body is None or "idem" not in body or body_ok):
        headers[header_key] = fresh
    if body_ok and (header_key is None or header_ok):
        body["idem"] = fresh
