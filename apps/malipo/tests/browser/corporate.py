"""The corporate journey in a real browser (Debian's Chromium, driven by Playwright), by the
accessible names of the console contract (`../shared/spec/console.md`, section 4, Corporate):
a maker uploads a CSV file with two bad rows and sees both reasons, fixes them and submits the
batch for approval; the maker's own "Approve" is refused (the page says why, and a hand-made
post of the form is answered 403); a checker signs in with two factors and approves with a fresh
authentication code; the batch's counts follow it live to completed; the failed item's
"Download failed items" file uploads again cleanly.

Run by the HTTP test suite (apps/malipo/tests/it/console/browser.rs) on SQLite and PostgreSQL:
    corporate.py BASE MAKER_INVITE CHECKER_INVITE CHECKER_EMAIL SCREENSHOT_DIR
Exits non-zero on the first failure, with a screenshot of the page as it was.
"""

import os
import random
import re
import sys
import tempfile
import time

from playwright.sync_api import expect

from console import Journey, code_at_step, totp

PASSWORD = "kilimanjaro payroll 2026"
HEADER = "payee_msisdn,amount,reference,narration\n"
FORMULA = "=cmd|' /C calc'!A0"


def step(n, text):
    print(f"  [{n}] {text}", flush=True)


def number(last4):
    """A sandbox number: its last four digits choose the sandbox's answer (0000 is paid, 1007
    has no wallet)."""
    return "2547%04d%s" % (random.randrange(10_000), last4)


class Codes:
    """The codes of one person's authenticator app, each of a later step than the one before
    (the server accepts one step either side of its own, and never a step again)."""

    def __init__(self, setup_key):
        self.totp = totp(setup_key)
        self.last = None

    def next(self):
        while True:
            t = time.time()
            now = int(t) // 30
            # The step before is accepted until the next step begins: near a step's end (a few
            # seconds before the form reaches the server), start at this step instead.
            oldest = now - 1 if t % 30 < 25 else now
            use = oldest if self.last is None else max(self.last + 1, oldest)
            if use <= now + 1:
                self.last = use
                return self.totp.at(use * 30)
            # Every code the server would accept now is spent (a journey that began near a
            # step's end uses three within one step): the next one is accepted once the next
            # step begins, as a person would wait for their app's next code.
            time.sleep((now + 1) * 30 - t + 0.1)


def join(j, invite_path, name):
    """Accepts the invitation and turns on two-factor authentication; returns the person's codes."""
    page = j.page
    j.goto(invite_path)
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Confirm password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    codes = Codes(page.get_by_label("Setup key").inner_text())
    page.get_by_label("Authentication code").fill(codes.next())
    page.get_by_role("button", name="Turn on two-factor authentication").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Recovery codes")
    page.get_by_role("link", name="Continue").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Home")
    return codes


def upload(j, reference, path):
    """"Upload" on Bulk payouts: the preview."""
    page = j.page
    page.get_by_role("navigation").get_by_role("link", name="Bulk payouts").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Bulk payouts")
    page.get_by_label("Batch reference").fill(reference)
    page.get_by_label("CSV file").set_input_files(path)
    page.get_by_role("button", name="Preview").click()


def corporate_journey(base, maker_invite, checker_invite, checker_email, shots):
    work = tempfile.mkdtemp(prefix="malipo-corporate-")
    maker = Journey(base, shots, "corporate-maker")
    checker = None
    try:
        page = maker.page
        step(1, "the maker accepts the invitation and turns on two-factor authentication")
        join(maker, maker_invite, "Amina Njeri")

        step(2, "a CSV file with two bad rows: both reasons, nothing to submit")
        good, missing = number("0000"), number("1007")
        wrong = os.path.join(work, "payroll-december.csv")
        with open(wrong, "w") as f:
            f.write(f"{HEADER}{good},100.00,EMP-1,\n25471234,200.00,EMP-2,\n{missing},200.00,EMP-3,{FORMULA}\n{good},ten,EMP-4,\n")
        upload(maker, "PAYROLL-DEC", wrong)
        invalid = page.get_by_role("table", name=re.compile("Invalid rows"))
        expect(invalid.get_by_role("row")).to_have_count(3)
        rows = invalid.inner_text()
        assert "payee_msisdn" in rows and "amount" in rows, rows
        expect(page.get_by_role("button", name="Submit for approval")).to_have_count(0)
        maker.shot("bulk-preview-invalid")

        step(3, "fixed: the count, total and fees; Submit for approval")
        fixed = os.path.join(work, "payroll-december-fixed.csv")
        with open(fixed, "w") as f:
            f.write(f"{HEADER}{good},100.00,EMP-1,\n{missing},200.00,EMP-3,{FORMULA}\n{good},300.00,EMP-4,\n")
        upload(maker, "PAYROLL-DEC", fixed)
        expect(page.locator("#preview-count")).to_have_text("3")
        expect(page.locator("#preview-total")).to_have_text("KES 600.00")
        maker.shot("bulk-preview")
        page.get_by_role("button", name="Submit for approval").click()
        expect(page.get_by_role("status")).to_contain_text("Submitted for approval")
        batch_url = page.url.split("?")[0]
        batch_id = batch_url.rsplit("/", 1)[1]

        step(4, "the maker's own Approve is refused: no such button, the page says why, a hand-made post is 403")
        expect(page.get_by_role("button", name="Approve")).to_have_count(0)
        expect(page.locator("#why-not")).to_contain_text("You made this batch")
        csrf = page.locator("input[name=csrf_token]").first.get_attribute("value")
        answer = page.request.post(batch_url + "/approve", headers={"Origin": base},
                                   form={"csrf_token": csrf, "idempotency_key": "own-" + batch_id, "code": "123456"})
        assert answer.status == 403, (answer.status, answer.text()[:300])
        maker.shot("batch-awaiting-approval")

        step(5, "the checker signs in with two factors")
        checker = maker.another("corporate-checker")
        cpage = checker.page
        codes = join(checker, checker_invite, "Juma Otieno")
        cpage.get_by_role("button", name="Sign out").click()
        expect(cpage.get_by_role("heading", level=1)).to_have_text("Sign in")
        cpage.get_by_label("Email").fill(checker_email)
        cpage.get_by_label("Password").fill(PASSWORD)
        cpage.get_by_role("button", name="Sign in").click()
        cpage.get_by_label("Authentication code").fill(codes.next())
        cpage.get_by_role("button", name="Verify").click()
        expect(cpage.get_by_role("heading", level=1)).to_have_text("Home")

        step(6, "Approvals: the batch with its maker; Approve with a fresh Authentication code")
        cpage.get_by_role("navigation").get_by_role("link", name="Approvals").click()
        row = cpage.get_by_role("row").filter(has_text=batch_id)
        expect(row).to_contain_text("Amina Njeri")
        expect(row).to_contain_text("KES 600.00")
        checker.shot("approvals")
        row.get_by_role("link", name=batch_id).click()
        cpage.get_by_label("Authentication code").fill(codes.next())
        cpage.get_by_role("button", name="Approve").click()

        step(7, "the counts follow the batch live to completed")
        expect(cpage.locator("#count-completed")).to_have_text("2", timeout=60_000)
        expect(cpage.locator("#count-failed")).to_have_text("1")
        expect(cpage.locator("#count-pending")).to_have_text("0")
        expect(cpage.locator(".facts[data-final]")).to_contain_text("completed")
        checker.shot("batch-completed")

        step(8, "Download failed items, and upload it again: clean")
        page.goto(batch_url)
        with page.expect_download() as download:
            page.get_by_role("link", name="Download failed items").click()
        failed = os.path.join(work, "failed.csv")
        download.value.save_as(failed)
        with open(failed) as f:
            text = f.read()
        assert text == f"{HEADER}{missing},200.00,EMP-3,'{FORMULA}\n", text
        upload(maker, "PAYROLL-DEC-RETRY", failed)
        expect(page.locator("#preview-count")).to_have_text("1")
        expect(page.get_by_role("table", name=re.compile("Invalid rows"))).to_have_count(0)
        expect(page.get_by_role("button", name="Submit for approval")).to_be_visible()
        maker.shot("failed-items-again")
        assert not maker.errors, maker.errors
        assert not checker.errors, checker.errors
        checker.close()
        maker.close()
    except BaseException:
        if checker is not None:
            checker.close(failed=True)
        maker.close(failed=True)
        raise


def main():
    base, maker_invite, checker_invite, checker_email, shots = sys.argv[1:6]
    print("corporate journey", flush=True)
    corporate_journey(base, maker_invite, checker_invite, checker_email, shots)
    print("ok", flush=True)


if __name__ == "__main__":
    main()
