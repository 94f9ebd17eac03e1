"""The merchant's journey in a real browser (Debian's Chromium, driven by Playwright), by the
accessible names of the console contract (`../shared/spec/console.md`): invite, create the
account, turn on two-factor authentication, sign in, watch a test charge complete on Charges,
refund half of it, check the reconciliation page's checksum against the day's CSV, create an API
key and get a token with it, sign out and see the old cookie refused.

Run by the HTTP test suite (apps/malipo/tests/it/console/browser.rs) on SQLite and PostgreSQL:
    journeys.py BASE INVITE_PATH CLIENT_ID CLIENT_SECRET SCREENSHOT_DIR
Exits non-zero on the first failure, with a screenshot of the page as it was.
"""

import csv
import hashlib
import io
import json
import re
import sys
import time
import urllib.request

from playwright.sync_api import expect

from console import Journey, api, code_at_step, eventually, token_for

PASSWORD = "kilimanjaro sunrise 2026"


def step(n, text):
    print(f"  [{n}] {text}", flush=True)


def merchant_journey(base, invite_path, client_id, client_secret, shots):
    j = Journey(base, shots, "merchant")
    page = j.page
    try:
        step(1, "the invitation: Name, Password, Confirm password, Create account")
        j.goto(invite_path)
        expect(page.get_by_role("heading", level=1)).to_have_text("Create your account")
        page.get_by_label("Name").fill("Amina Njeri")
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_label("Confirm password").fill(PASSWORD)
        j.shot("invitation")
        page.get_by_role("button", name="Create account").click()

        step(2, "enrolment: the setup key, the QR code, Authentication code")
        expect(page.get_by_role("heading", level=1)).to_have_text("Turn on two-factor authentication")
        expect(page.get_by_role("img", name=re.compile("QR code"))).to_be_visible()
        setup_key = page.get_by_label("Setup key").inner_text()
        j.shot("enrolment")
        page.get_by_label("Authentication code").fill(code_at_step(setup_key, 0))
        page.get_by_role("button", name="Turn on two-factor authentication").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Recovery codes")
        recovery = page.get_by_role("list", name="Recovery codes").get_by_role("listitem").all_inner_texts()
        assert len(recovery) == 10, recovery
        j.shot("recovery-codes")
        page.get_by_role("link", name="Continue").click()

        step(3, "Home, in test mode")
        expect(page.get_by_role("heading", level=1)).to_have_text("Home")
        expect(page.get_by_role("switch", name="Test mode")).to_be_checked()
        expect(page.get_by_text("Test mode", exact=True).first).to_be_visible()
        j.shot("home")

        step(4, "sign out, then sign in with the password and the second factor")
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        page.get_by_label("Email").fill(j.email)
        page.get_by_label("Password").fill(PASSWORD)
        j.shot("sign-in")
        page.get_by_role("button", name="Sign in").click()
        page.get_by_label("Authentication code").fill(code_at_step(setup_key, 1))
        j.shot("second-factor")
        page.get_by_role("button", name="Verify").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Home")

        step(5, "a test charge pushed from the API completes on Charges")
        token = token_for(base, client_id, client_secret)
        reference = "ORDER-%d" % int(time.time() * 1000)
        status, text = api(base, "POST", "/api/v1/partner/stk", token,
                           {"payer_msisdn": "254712345678", "amount": "1000.00", "reference": reference, "idem": reference})
        assert status == 200, (status, text)
        charge_ref = json.loads(text)["charge_ref"]
        page.get_by_role("navigation").get_by_role("link", name="Charges").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Charges")

        def completed_row():
            page.reload()
            row = page.get_by_role("row").filter(has_text=charge_ref)
            return row.count() == 1 and "completed" in row.inner_text()
        eventually(completed_row)
        j.shot("charges")
        page.get_by_role("link", name=charge_ref).click()
        expect(page.get_by_role("heading", level=1)).to_contain_text(charge_ref)
        expect(page.get_by_text("authorised").first).to_be_visible()

        step(6, "refund half of it")
        page.get_by_label("Amount").fill("500.00")
        page.get_by_label("Reason").fill("Customer returned half the order")
        j.shot("refund-form")
        page.get_by_role("button", name="Confirm refund").click()
        expect(page.get_by_role("status")).to_contain_text("Refund")
        expect(page.get_by_text("KES 500.00").first).to_be_visible()
        j.shot("refunded")

        step(7, "the reconciliation page's checksum matches the day's CSV")
        page.get_by_role("navigation").get_by_role("link", name="Reconciliation").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Reconciliation")
        page.get_by_role("button", name="Show report").click()
        checksum = page.get_by_label("Checksum").inner_text().strip()
        with page.expect_download() as download:
            page.get_by_role("link", name="Download CSV").click()
        text = open(download.value.path(), encoding="utf-8").read()
        rows = list(csv.DictReader(io.StringIO(text)))
        assert any(r["source_ref"] == charge_ref for r in rows), text
        lines = "".join(f"{r['transaction_id']},{r['net']}\n" for r in rows)
        assert hashlib.sha256(lines.encode()).hexdigest() == checksum, (checksum, text)
        j.shot("reconciliation")

        step(8, "an API key created here gets a token")
        page.get_by_role("navigation").get_by_role("link", name="Developers").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Developers")
        page.get_by_label("Authentication code").first.fill(recovery[0])
        page.get_by_role("button", name="Create key pair").click()
        new_id = page.get_by_label("Client ID").inner_text().strip()
        new_secret = page.get_by_label("Client secret").inner_text().strip()
        j.shot("api-key-created")
        assert token_for(base, new_id, new_secret)

        step(8.5, "an event's payload is the object as the API shows it")
        page.get_by_role("link", name="Events", exact=True).click()
        expect(page.get_by_role("heading", level=1)).to_contain_text("Events")
        page.get_by_role("table").get_by_role("link").first.click()
        page.get_by_text("Payload data").click()
        payload = page.locator("pre.payload").inner_text()
        assert '"charge_ref"' in payload and '"v":1' not in payload, payload
        j.shot("event")

        step(9, "the other sections: a payment request's pay code, a payout, transactions, team, audit log")
        nav = page.get_by_role("navigation")
        nav.get_by_role("link", name="Payment requests").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Payment requests")
        page.get_by_role("link", name="New payment request").click()
        page.get_by_label("Amount").fill("250.00")
        page.get_by_label("Reference").fill("INV-1042")
        page.get_by_label("Description").fill("Two bags of maize flour")
        page.get_by_role("button", name="Create request").click()
        pay_code = page.get_by_label("Pay code").inner_text()
        assert re.fullmatch(r"\d{3} \d{3}", pay_code), pay_code
        j.shot("payment-request")
        nav.get_by_role("link", name="Payouts").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Payouts")
        page.get_by_label("Phone number").fill("254712345678")
        page.get_by_label("Amount").fill("100.00")
        page.get_by_label("Reference").fill("SUPPLIER-7")
        page.get_by_role("button", name="Pay").click()
        expect(page.get_by_role("alert")).to_contain_text("Insufficient funds")
        expect(page.get_by_label("Reference")).to_have_value("SUPPLIER-7")
        j.shot("payout-refused")
        # The integrator moves money to the payout account (POST /accounts/transfers), then it pays.
        status, text = api(base, "POST", "/api/v1/accounts/transfers", token,
                           {"from": "collection", "to": "payout", "amount": "200.00"}, {"Idempotency-Key": reference + "-t"})
        assert status == 200, (status, text)
        page.get_by_label("Amount").fill("100.00")
        page.get_by_label("Reference").fill("SUPPLIER-7")
        page.get_by_role("button", name="Pay").click()
        expect(page.get_by_role("heading", level=1)).to_contain_text("po_")
        j.shot("payout")
        nav.get_by_role("link", name="Transactions").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Transactions")
        expect(page.get_by_role("row").filter(has_text=charge_ref).first).to_be_visible()
        j.shot("transactions")
        nav.get_by_role("link", name="Team").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Team")
        j.shot("team")
        nav.get_by_role("link", name="Audit log").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Audit log")
        for action in ("reversal.created", "api_key.created", "payment_request.created", "sign_in"):
            expect(page.get_by_role("cell", name=action, exact=True).first).to_be_visible()
        j.shot("audit-log")
        nav.get_by_role("link", name="Home").click()
        expect(page.get_by_role("img", name=re.compile("Completed amount per day"))).to_be_visible()
        j.shot("home-with-figures")

        step(10, "sign out: the old cookie is refused")
        old = j.cookie()
        assert old
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in")
        req = urllib.request.Request(base + "/console/", headers={"Cookie": "malipo_session=" + old})

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None
        opener = urllib.request.build_opener(NoRedirect)
        try:
            r = opener.open(req)
            status = r.status
        except urllib.error.HTTPError as e:
            status = e.code
        assert status == 303, f"the old cookie answered {status}"
        assert not j.errors, j.errors
        j.close()
    except BaseException:
        j.close(failed=True)
        raise


def main():
    base, invite_path, client_id, client_secret, shots, email = sys.argv[1:7]
    Journey.email = email
    print("merchant journey", flush=True)
    merchant_journey(base, invite_path, client_id, client_secret, shots)
    print("ok", flush=True)


if __name__ == "__main__":
    main()
