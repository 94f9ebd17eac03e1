#!/usr/bin/env python3
"""Verifies recorded Malipo webhook deliveries with the Standard Webhooks reference library.

Usage: verify_standardwebhooks.py FILE SECRET

FILE is a JSON array of deliveries as a receiver got them:
    [{"headers": {"webhook-id": "...", "webhook-timestamp": "...", "webhook-signature": "..."},
      "body": "<the raw body, base64>"}, ...]
SECRET is the endpoint's `whsec_...` secret (or `-` to read it from the WEBHOOK_SECRET variable,
which keeps it out of the process list).

Each delivery is checked with `standardwebhooks.Webhook(SECRET).verify(body, headers)` (PyPI
package `standardwebhooks`), which also rejects timestamps more than five minutes from now.

Exit status: 0 when every delivery verifies, 1 when any does not, 2 for a usage error, an
unreadable file, or a missing `standardwebhooks` package (`pip install standardwebhooks`).
"""

import base64
import json
import os
import sys


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        from standardwebhooks.webhooks import Webhook, WebhookVerificationError
    except ImportError:
        print("verify_standardwebhooks: the `standardwebhooks` package is missing: pip install standardwebhooks", file=sys.stderr)
        return 2
    path, secret = argv[1], argv[2]
    if secret == "-":
        secret = os.environ.get("WEBHOOK_SECRET", "")
    try:
        with open(path, encoding="utf-8") as f:
            deliveries = json.load(f)
        assert isinstance(deliveries, list) and deliveries, "expected a non-empty JSON array"
        recorded = [(d["headers"], base64.b64decode(d["body"], validate=True)) for d in deliveries]
    except (OSError, ValueError, KeyError, TypeError, AssertionError) as e:
        print(f"verify_standardwebhooks: cannot read {path}: {e}", file=sys.stderr)
        return 2
    try:
        webhook = Webhook(secret)
    except Exception as e:  # an empty or malformed secret
        print(f"verify_standardwebhooks: invalid secret: {e}", file=sys.stderr)
        return 2

    failed = 0
    for i, (headers, body) in enumerate(recorded):
        msg_id = headers.get("webhook-id", "?")
        try:
            webhook.verify(body, headers)
            print(f"ok      {msg_id}")
        except WebhookVerificationError as e:
            failed += 1
            print(f"FAILED  {msg_id} (delivery {i}): {e}")
        except (ValueError, UnicodeDecodeError) as e:  # a malformed signature header or body
            failed += 1
            print(f"FAILED  {msg_id} (delivery {i}): malformed: {e}")
    print(f"{len(recorded) - failed} of {len(recorded)} deliveries verified")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
