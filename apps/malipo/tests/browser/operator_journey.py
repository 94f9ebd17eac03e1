"""The operator's journey in a real browser (Debian's Chromium, driven by Playwright), by the
accessible names of the console contract (`../shared/spec/console.md`, section 4, Operator):
accept the invitation, turn on two-factor authentication, switch to live, find the customer's
wallet by "Phone number", "Lock" it with a "Reason"; the customer's next charge is refused
(`wallet_locked`, nothing to approve); "Unlock" it; the next charge is approved over USSD with
the PIN and completes.

Run by the HTTP test suite (apps/malipo/tests/it/console/browser.rs) on SQLite and PostgreSQL:
    operator_journey.py BASE INVITE_PATH MSISDN PIN MERCHANT_TOKEN GATEWAY_TOKEN SCREENSHOT_DIR
Exits non-zero on the first failure, with a screenshot of the page as it was.
"""

import json
import re
import sys
import time
import uuid

from playwright.sync_api import expect

from console import Journey, api, code_at_step, eventually

PASSWORD = "serengeti moonrise 2026"


def step(n, text):
    print(f"  [{n}] {text}", flush=True)


def charge(base, token, msisdn, amount):
    """A live STK charge by the merchant; returns its ref."""
    idem = str(uuid.uuid4())
    status, text = api(base, "POST", "/api/v1/partner/stk", token,
                       {"payer_msisdn": msisdn, "amount": amount, "reference": "ORD-" + idem[:8], "idem": idem})
    assert status == 200, (status, text)
    return json.loads(text)["charge_ref"]


def charge_state(base, token, ref):
    status, text = api(base, "GET", "/api/v1/partner/charges/" + ref, token)
    assert status == 200, (status, text)
    return json.loads(text)


def final(base, token, ref):
    c = charge_state(base, token, ref)
    return c if c["state"] in ("completed", "failed", "declined", "expired") else None


def dial(base, token, phone, inputs):
    """A USSD session as the gateway sends it; returns the screens."""
    session = "ATUid_" + uuid.uuid4().hex
    screens = []
    for i in range(len(inputs) + 1):
        form = "sessionId=%s&serviceCode=%%2A384%%2A1%%23&phoneNumber=%s&text=%s" % (session, phone, "%2A".join(inputs[:i]))
        status, text = api(base, "POST", "/api/v1/ussd", token, form=form)
        assert status == 200, (status, text)
        screens.append(text)
        if text.startswith("END "):
            break
    return screens


def operator_journey(base, invite_path, msisdn, pin, merchant_token, gateway_token, shots):
    j = Journey(base, shots, "operator")
    page = j.page
    try:
        step(1, "the invitation and two-factor enrolment")
        j.goto(invite_path)
        page.get_by_label("Name").fill("Baraka Mwangi")
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_label("Confirm password").fill(PASSWORD)
        page.get_by_role("button", name="Create account").click()
        setup_key = page.get_by_label("Setup key").inner_text()
        page.get_by_label("Authentication code").fill(code_at_step(setup_key, 0))
        page.get_by_role("button", name="Turn on two-factor authentication").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Recovery codes")
        page.get_by_role("link", name="Continue").click()

        step(2, "Wallets, in live mode")
        page.get_by_role("navigation").get_by_role("link", name="Wallets").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Wallets")
        page.get_by_role("switch", name="Test mode").uncheck()
        expect(page.get_by_role("switch", name="Test mode")).not_to_be_checked()
        expect(page.get_by_role("heading", level=1)).to_have_text("Wallets")

        step(3, "find the customer's wallet by Phone number")
        page.get_by_label("Phone number").fill(msisdn)
        page.get_by_role("button", name="Find").click()
        expect(page.get_by_role("heading", name="Wallet " + msisdn)).to_be_visible()
        facts = page.locator("dl.facts").inner_text()
        assert "Amina Otieno" in facts and "active" in facts, facts
        j.shot("wallet")

        step(4, "Lock, with a Reason")
        page.get_by_label("Reason").fill("Customer reported the phone stolen")
        page.get_by_role("button", name="Lock", exact=True).click()
        expect(page.get_by_role("status")).to_contain_text("Wallet locked")
        expect(page.locator("dl.facts")).to_contain_text("Customer reported the phone stolen")
        j.shot("locked")

        step(5, "the customer's next charge is refused: the wallet is locked")
        refused = charge(base, merchant_token, msisdn, "100.00")
        c = eventually(lambda: final(base, merchant_token, refused), timeout=20)
        assert c["state"] == "failed" and c["failure_reason"] == "wallet_locked", c
        screens = dial(base, gateway_token, msisdn, ["3", "1"])
        assert not any("100.00" in s for s in screens), screens

        step(6, "Unlock, with a Reason")
        page.get_by_label("Reason").fill("Phone recovered; customer identified in person")
        page.get_by_role("button", name="Unlock").click()
        expect(page.get_by_role("status")).to_contain_text("Wallet unlocked")
        expect(page.locator("dl.facts")).to_contain_text("active")
        j.shot("unlocked")

        step(7, "the next charge is approved with the PIN and completes")
        paid = charge(base, merchant_token, msisdn, "100.00")
        screens = dial(base, gateway_token, msisdn, ["3", "1", "1", pin])
        assert re.search("approved", screens[-1], re.I), screens
        c = eventually(lambda: final(base, merchant_token, paid), timeout=20)
        assert c["state"] == "completed", c

        step(8, "the audit log names the lock and the unlock")
        j.goto("/console/audit?action=wallet.")
        table = page.get_by_role("table").inner_text()
        assert "wallet.locked" in table and "wallet.unlocked" in table, table
        j.shot("audit-log")

        step(9, "Organisations, and Ledger health's Verify now followed to its result")
        page.get_by_role("navigation").get_by_role("link", name="Organisations").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Organisations")
        j.shot("organisations")
        page.get_by_role("navigation").get_by_role("link", name="Wallets").click()
        page.get_by_role("link", name="Ledger health").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Ledger health")
        page.get_by_role("button", name="Verify now").click()
        # Followed by the page's live region; reloaded too (as a person would), with a deadline,
        # since a verification on a loaded machine may outlast the region's polling.
        deadline = time.monotonic() + 120
        while "journals checked" not in page.locator("#last-verification").inner_text():
            assert time.monotonic() < deadline, "Verify now showed no result within 120 s"
            page.wait_for_timeout(1000)
            if "journals checked" not in page.locator("#last-verification").inner_text():
                page.reload()
        expect(page.locator("#last-verification")).to_contain_text("ok")
        j.shot("ledger-health")
        assert not j.errors, j.errors
        j.close()
    except BaseException:
        j.close(failed=True)
        raise


def main():
    base, invite_path, msisdn, pin, merchant_token, gateway_token, shots = sys.argv[1:8]
    print("operator journey", flush=True)
    operator_journey(base, invite_path, msisdn, pin, merchant_token, gateway_token, shots)
    print("ok", flush=True)


if __name__ == "__main__":
    main()
