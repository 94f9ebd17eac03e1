"""What the browser journeys share: Debian's Chromium driven by Playwright (never a browser
build of Playwright's own), screenshots of what a person sees, and TOTP codes computed from
the setup key a person would type into their app."""

import json
import os
import re
import time
import urllib.request

import pyotp
from playwright.sync_api import sync_playwright

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

REFUSED_PAGE = re.compile(r"Failed to load resource: the server responded with a status of 4(01|22|29)")

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 360, "height": 740}


class Journey:
    """One browser, one page, and the screenshots taken along the way."""

    def __init__(self, base, shots, name, parent=None):
        self.base = base
        self.shots = os.path.join(shots, name)
        os.makedirs(self.shots, exist_ok=True)
        self.count = 0
        self.parent = parent
        if parent is None:
            self._pw = sync_playwright().start()
            executable = os.environ.get("MALIPO_TEST_CHROMIUM", "/usr/bin/chromium")
            self.browser = self._pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        else:
            self._pw, self.browser = parent._pw, parent.browser
        self.context = self.browser.new_context(viewport=DESKTOP)
        self.context.set_default_timeout(15_000)
        self.page = self.context.new_page()
        self.errors = []
        # Script errors and refused resources (a CSP violation, a missing asset) are failures; a
        # page answered with 4xx on purpose (a refused form) is logged by the browser too, and is not.
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" and not REFUSED_PAGE.match(m.text) else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def goto(self, path):
        self.page.goto(self.base + path)

    def shot(self, what, phone=True):
        """A screenshot of the page as it is, at desktop width and at 360 px."""
        self.count += 1
        stem = os.path.join(self.shots, f"{self.count:02d}-{what}")
        self.page.screenshot(path=stem + ".png", full_page=True)
        if phone:
            self.page.set_viewport_size(PHONE)
            self.page.screenshot(path=stem + "-360.png", full_page=True)
            width = self.page.evaluate("document.documentElement.scrollWidth")
            if width > PHONE["width"] + 1:
                raise AssertionError(f"{what}: the page is {width} px wide at 360 px (something does not fit)")
            self.page.set_viewport_size(DESKTOP)

    def another(self, name):
        """A second person at another computer: the same browser program, a context (cookies,
        page) of their own. Close it before this one."""
        return Journey(self.base, os.path.dirname(self.shots), name, parent=self)

    def cookie(self, name="malipo_session"):
        for c in self.context.cookies():
            if c["name"] == name:
                return c["value"]
        return None

    def close(self, failed=False):
        if failed:
            try:
                self.page.screenshot(path=os.path.join(self.shots, "failure.png"), full_page=True)
            except Exception:  # noqa: BLE001 - the failure itself is what matters
                pass
        self.context.close()
        if self.parent is None:
            self.browser.close()
            self._pw.stop()


def totp(setup_key):
    """The app a person would use, from the setup key they read off the page."""
    return pyotp.TOTP(setup_key.replace(" ", ""), digits=6, interval=30)


def code_at_step(setup_key, steps_ahead=0):
    """The code of the step `steps_ahead` from now (the server accepts one step either side)."""
    return totp(setup_key).at(time.time() + 30 * steps_ahead)


def api(base, method, path, token=None, body=None, headers=None, form=None):
    """A call to the REST API as an integrator makes it; returns (status, text)."""
    data = None
    h = dict(headers or {})
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    if form is not None:
        data = form.encode()
        h["Content-Type"] = "application/x-www-form-urlencoded"
    if token:
        h["Authorization"] = "Bearer " + token
    req = urllib.request.Request(base + path, data=data, headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=15) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def token_for(base, client_id, client_secret):
    status, text = api(base, "POST", "/api/v1/oauth/token", body={"client_id": client_id, "client_secret": client_secret})
    assert status == 200, (status, text)
    return json.loads(text)["access_token"]


def eventually(check, timeout=15.0, every=0.2):
    """Polls `check` until it returns a true value, failing after `timeout` seconds."""
    deadline = time.time() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError("not within %.0f s" % timeout)
        time.sleep(every)
