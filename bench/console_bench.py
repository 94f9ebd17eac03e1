"""The console's client in bench/console.sh (stdlib only). Every request goes over one keep-alive
connection from a chosen source address (loopback has all of 127.0.0.0/8), with the console's own
Origin, as a browser sends it. Prints one JSON object.

    python3 bench/console_bench.py accept BASE INVITE_URL PASSWORD
        Accepts an invitation (name "Bench Person"); prints {"ok": true}.
    python3 bench/console_bench.py pages BASE EMAIL PASSWORD N PATH...
        Signs in, then GETs each PATH N times: per path p50/p99/max in ms and the bytes of one
        answer; also prints the session cookie for wrk.
    python3 bench/console_bench.py same-answer BASE EMAIL... -- N
        N rounds of a wrong password for a known email (the emails in turn, nine each at most so
        that no account locks) and of an unknown email, interleaved, each from its own source
        address: p50/p99 of each and the answers' statuses and messages.
    python3 bench/console_bench.py victim BASE EMAIL PASSWORD CLIENT_ID CLIENT_SECRET SOURCE N
        From SOURCE, N rounds of: a sign-in with the right password, and an API call
        (GET /api/v1/partner/balance with a token got once): p50/p99 of each and their statuses.
"""

import http.client
import json
import sys
import time
import urllib.parse

WRONG = "The email or password is incorrect."


def percentile(values, q):
    v = sorted(values)
    return round(v[min(len(v) - 1, int(len(v) * q))], 2) if v else None


def stats(values):
    return {"n": len(values), "p50": percentile(values, 0.5), "p99": percentile(values, 0.99), "max": percentile(values, 1.0)}


class Client:
    def __init__(self, base, source="127.0.0.1"):
        self.url = urllib.parse.urlsplit(base)
        self.origin = f"{self.url.scheme}://{self.url.netloc}"
        self.source = source
        self.conn = None
        self.cookie = None

    def request(self, method, path, body=None, headers=None):
        """One request; returns (status, headers, body, milliseconds)."""
        h = {"Origin": self.origin}
        if self.cookie:
            h["Cookie"] = f"malipo_session={self.cookie}"
        if body is not None:
            body = urllib.parse.urlencode(body)
            h["Content-Type"] = "application/x-www-form-urlencoded"
        h.update(headers or {})
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=60, source_address=(self.source, 0))
            try:
                t0 = time.perf_counter()
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                data = r.read()
                ms = (time.perf_counter() - t0) * 1000
                for k, v in r.getheaders():
                    if k.lower() == "set-cookie" and v.startswith("malipo_session="):
                        self.cookie = v.split(";", 1)[0].split("=", 1)[1]
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status, r, data, ms
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise RuntimeError("unreachable")

    def sign_in(self, email, password):
        self.cookie = None
        status, _, data, ms = self.request("POST", "/console/login", {"email": email, "password": password})
        return status, data, ms


def accept(base, invite_url, password):
    c = Client(base)
    path = urllib.parse.urlsplit(invite_url).path
    status, _, data, _ = c.request("POST", path, {"name": "Bench Person", "new_password": password, "confirm_password": password})
    if status != 303:
        sys.exit(f"accepting the invitation answered {status}: {data[:400]!r}")
    return {"ok": True}


def pages(base, email, password, n, paths):
    c = Client(base)
    status, data, _ = c.sign_in(email, password)
    if status != 303:
        sys.exit(f"sign-in answered {status}: {data[:400]!r}")
    out = {"cookie": c.cookie, "pages": {}}
    for path in paths:
        times, size = [], None
        for _ in range(n):
            status, _, body, ms = c.request("GET", path)
            if status != 200:
                sys.exit(f"GET {path} answered {status}: {body[:400]!r}")
            times.append(ms)
            size = len(body)
        out["pages"][path] = {**stats(times), "bytes": size}
    return out


def same_answer(base, emails, n):
    known, unknown, answers = [], [], set()
    for i in range(n):
        email = emails[(i // 9) % len(emails)] if i // 9 < len(emails) else None
        if email is None:
            break
        for kind, who, times in (("known", email, known), ("unknown", f"nobody{i}@bench.example", unknown)):
            c = Client(base, source=f"127.0.{10 + i // 50}.{(i % 50) * 2 + (kind == 'unknown') + 10}")
            status, data, ms = c.sign_in(who, "wrong password, surely")
            answers.add((status, WRONG in data.decode()))
            times.append(ms)
    return {"wrong_password_ms": stats(known), "unknown_email_ms": stats(unknown), "answers": sorted(f"{s} {'same message' if m else 'OTHER MESSAGE'}" for s, m in answers)}


def victim(base, email, password, client_id, secret, source, n):
    signin, api, statuses = [], [], {"sign_in": {}, "api": {}}
    c = Client(base, source=source)
    body = json.dumps({"client_id": client_id, "client_secret": secret})
    c.conn = http.client.HTTPConnection(c.url.hostname, c.url.port, timeout=60, source_address=(source, 0))
    c.conn.request("POST", "/api/v1/oauth/token", body=body, headers={"Content-Type": "application/json"})
    r = c.conn.getresponse()
    token = json.loads(r.read())["access_token"]
    for _ in range(n):
        status, _, ms = c.sign_in(email, password)
        signin.append(ms)
        statuses["sign_in"][str(status)] = statuses["sign_in"].get(str(status), 0) + 1
        c.cookie = None
        status, _, _, ms = c.request("GET", "/api/v1/partner/balance", None, {"Authorization": f"Bearer {token}"})
        api.append(ms)
        statuses["api"][str(status)] = statuses["api"].get(str(status), 0) + 1
    return {"sign_in_ms": stats(signin), "api_ms": stats(api), "statuses": statuses}


def main(argv):
    mode = argv[1]
    if mode == "accept":
        result = accept(argv[2], argv[3], argv[4])
    elif mode == "pages":
        result = pages(argv[2], argv[3], argv[4], int(argv[5]), argv[6:])
    elif mode == "same-answer":
        split = argv.index("--")
        result = same_answer(argv[2], argv[3:split], int(argv[split + 1]))
    elif mode == "victim":
        result = victim(argv[2], argv[3], argv[4], argv[5], argv[6], argv[7], int(argv[8]))
    else:
        sys.exit(f"unknown mode {mode}")
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)
