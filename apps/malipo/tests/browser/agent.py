"""The agent's journey in a real browser at a phone's width (360 px), by the accessible names of
the console contract (`../shared/spec/console.md`, section 4, Agent): create the account from
the invitation, turn "Test mode" off, cash in (the confirmation shows the customer's registered
name), read and print the receipt (one page), cash out while the customer approves with the PIN
over USSD (`POST /ussd`, sent here as a gateway sends it), follow the page from "Waiting for the
customer" to the receipt, and see the commission on Float.

Run by the HTTP test suite (apps/malipo/tests/it/console/browser.rs) on SQLite and PostgreSQL:
    agent.py BASE INVITE_PATH GATEWAY_TOKEN CUSTOMER_PHONE CUSTOMER_PIN SCREENSHOT_DIR
Exits non-zero on the first failure, with a screenshot of the page as it was.
"""

import re
import sys
import urllib.parse
import uuid

from playwright.sync_api import expect

from console import PHONE, Journey, api

PASSWORD = "mombasa kiosk evening 2026"


def step(n, text):
    print(f"  [{n}] {text}", flush=True)


def shot(j, what):
    """A screenshot at 360 px, the page checked to fit that width."""
    j.count += 1
    j.page.screenshot(path=f"{j.shots}/{j.count:02d}-{what}-360.png", full_page=True)
    width = j.page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 1, f"{what}: the page is {width} px wide at 360 px"


def fact(page, term):
    """The value beside `term` in the page's facts."""
    return page.locator("dl.facts dt", has_text=re.compile("^" + re.escape(term) + "$")).locator("xpath=following-sibling::dd[1]").inner_text()


def ussd(base, gateway_token, session, phone, text):
    """One USSD hop, as the gateway posts it."""
    form = urllib.parse.urlencode({"sessionId": session, "serviceCode": "*384*1#", "phoneNumber": phone, "text": text, "networkCode": "63902"})
    status, screen = api(base, "POST", "/api/v1/ussd", token=gateway_token, form=form)
    assert status == 200, (status, screen)
    return screen


def agent_journey(base, invite_path, gateway_token, phone, pin, shots):
    j = Journey(base, shots, "agent")
    page = j.page
    page.set_viewport_size(PHONE)
    try:
        step(1, "the invitation: Name, Password, Confirm password, Create account (no second factor needed)")
        j.goto(invite_path)
        page.get_by_label("Name").fill("Baraka Mwangi")
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_label("Confirm password").fill(PASSWORD)
        page.get_by_role("button", name="Create account").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Float")

        step(2, "Float, live: Test mode off")
        nav = page.get_by_role("navigation", name="Main")
        for name in ["Float", "Cash in", "Cash out"]:
            expect(nav.get_by_role("link", name=name)).to_be_visible()
        page.get_by_role("switch", name="Test mode").uncheck()
        expect(page.get_by_text("Test mode", exact=True).and_(page.locator(".test-banner"))).to_have_count(0)
        expect(page.get_by_role("heading", level=1)).to_have_text("Float")
        expect(page.locator(".card", has_text="Available balance")).to_contain_text("KES 95,000.00")
        shot(j, "float")

        step(3, "Cash in: Phone number, Amount, Continue; the confirmation shows the registered name")
        nav.get_by_role("link", name="Cash in").click()
        page.get_by_label("Phone number").fill(phone)
        page.get_by_label("Amount").fill("250")
        shot(j, "cash-in")
        page.get_by_role("button", name="Continue").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Confirm the cash-in")
        expect(page.get_by_text("Amina Otieno")).to_be_visible()
        assert fact(page, "Amount") == "KES 250.00", fact(page, "Amount")
        shot(j, "cash-in-confirmation")
        page.get_by_role("button", name="Confirm").click()

        step(4, "the receipt: transaction, time, amounts; it prints on one page")
        expect(page.get_by_role("heading", level=1)).to_have_text("Cash-in receipt")
        receipt = page.get_by_role("region", name="Receipt")
        expect(receipt).to_contain_text("KES 250.00")
        assert fact(page, "Transaction").startswith("tx_"), fact(page, "Transaction")
        assert fact(page, "Time").endswith("Africa/Nairobi"), fact(page, "Time")
        shot(j, "cash-in-receipt")
        page.emulate_media(media="print")
        pdf = page.pdf(width="80mm", height="200mm")
        pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf))
        assert pages == 1, f"the receipt prints on {pages} pages"
        a4 = len(re.findall(rb"/Type\s*/Page[^s]", page.pdf(format="A4")))
        assert a4 == 1, f"the receipt prints on {a4} A4 pages"
        with open(f"{j.shots}/cash-in-receipt.pdf", "wb") as f:
            f.write(pdf)
        page.emulate_media(media="screen")

        step(5, "Cash out: Request approval, then Waiting for the customer")
        nav.get_by_role("link", name="Cash out").click()
        page.get_by_label("Phone number").fill(phone)
        page.get_by_label("Amount").fill("1000")
        page.get_by_role("button", name="Request approval").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Waiting for the customer")
        expect(page.get_by_role("status")).to_contain_text("Waiting for the customer")
        shot(j, "cash-out-waiting")

        step(6, "the customer approves with the PIN over USSD; the page follows to the receipt")
        session = "ATUid_" + uuid.uuid4().hex
        inputs = ["", "3", "3*1", "3*1*1", "3*1*1*" + pin]
        screens = [ussd(base, gateway_token, session, phone, text) for text in inputs]
        assert "Withdraw KES 1,000.00" in screens[1], screens
        assert screens[-1].startswith("END ") and "approved" in screens[-1], screens
        expect(page.get_by_role("heading", level=1)).to_have_text("Cash-out receipt", timeout=20_000)
        assert fact(page, "Amount") == "KES 1,000.00", fact(page, "Amount")
        assert fact(page, "Commission") == "KES 19.00", fact(page, "Commission")
        assert fact(page, "Transaction").startswith("tx_"), fact(page, "Transaction")
        expect(page.get_by_role("status")).to_contain_text("hand over KES 1,000.00")
        shot(j, "cash-out-receipt")

        step(7, "Float: the commission earned today")
        nav.get_by_role("link", name="Float").click()
        expect(page.locator(".card", has_text="Commission today")).to_contain_text("KES 19.00")
        expect(page.locator(".card", has_text="Available balance")).to_contain_text("KES 95,769.00")
        shot(j, "float-after")
        assert not j.errors, j.errors
        j.close()
    except BaseException:
        j.close(failed=True)
        raise


def main():
    base, invite_path, gateway_token, phone, pin, shots = sys.argv[1:7]
    print("agent journey", flush=True)
    agent_journey(base, invite_path, gateway_token, phone, pin, shots)
    print("ok", flush=True)


if __name__ == "__main__":
    main()
