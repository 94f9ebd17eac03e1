"""The legitimate client of bench/token-flood.sh (stdlib only).

    python3 bench/token_flood.py BASE_URL CLIENT_ID CLIENT_SECRET SOURCE_ADDRESS N

From SOURCE_ADDRESS (bench/token-flood.sh gives the flood's own address: integrators share
egress addresses), over one keep-alive connection, N rounds of: a token request with the right
secret, `GET /partner/balance` and `POST /partner/stk` with the token. Prints one JSON object:
per call, the round trips' p50, p99 and max in milliseconds, and the statuses seen (every token
request should be answered 200; a round whose token request was not answered 200 uses the last
token issued).
"""

import http.client
import json
import sys
import time
import urllib.parse
import uuid


def percentile(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(len(v) * q))] if v else None


def main(argv):
    base, client_id, secret, source, n = argv[1], argv[2], argv[3], argv[4], int(argv[5])
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30, source_address=(source, 0))
    times = {"token": [], "balance": [], "charge": []}
    statuses = {"token": {}, "balance": {}, "charge": {}}

    def call(name, method, path, body=None, headers=None):
        start = time.perf_counter()
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        times[name].append((time.perf_counter() - start) * 1000)
        statuses[name][str(r.status)] = statuses[name].get(str(r.status), 0) + 1
        return r.status, data

    token = None
    for _ in range(n):
        body = json.dumps({"client_id": client_id, "client_secret": secret})
        status, data = call("token", "POST", "/api/v1/oauth/token", body, {"Content-Type": "application/json"})
        if status == 200:
            token = json.loads(data)["access_token"]
        auth = {"Authorization": f"Bearer {token}"}
        call("balance", "GET", "/api/v1/partner/balance", headers=auth)
        idem = str(uuid.uuid4())
        stk = json.dumps({"payer_msisdn": "254712345678", "amount": "10", "reference": idem[:12], "idem": idem})
        call("charge", "POST", "/api/v1/partner/stk", stk, {**auth, "Content-Type": "application/json"})
    out = {
        name: {
            "n": len(v),
            "p50_ms": percentile(v, 0.5),
            "p99_ms": percentile(v, 0.99),
            "max_ms": max(v) if v else None,
            "statuses": statuses[name],
        }
        for name, v in times.items()
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
