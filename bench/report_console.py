"""The "Console" section of docs/performance.md, from `console-<backend>.json` of `bench/console.sh`
and `console-apps.json` of `bench/console_apps.sh` (the agent's pages, the 10,000-row preview).

bench/report.py includes it in the whole document. Alone, after `bash bench/console.sh`:

    python3 bench/report_console.py bench-out docs/performance.md

replaces only this section of the existing document (or adds it before "## Method"), so the other
sections keep the figures of their own run (and so does its agent's pages part, without
`console-apps.json`).
"""

import json
import sys
from pathlib import Path

BACKENDS = [("postgres", "PostgreSQL"), ("sqlite", "SQLite")]
HEADING = "## Console (people's pages, sign-in, a flood of wrong passwords)"
PAGE_P99_MS = 50
SLOWDOWN = 2.0
AGENT_PAGE_KB = 30
PREVIEW_MS = 2000


def _load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _verdict(ok):
    return "met" if ok else "**missed**"


def console_section(out):
    lines = [HEADING, ""]
    runs = {b: _load(Path(out) / f"console-{b}.json") for b, _ in BACKENDS}
    shown = [(b, name) for b, name in BACKENDS if runs.get(b)]
    if not shown:
        return lines + ["Not measured in this run (no `console-*.json`).", ""] + apps_section(out)
    any_run = runs[shown[0][0]]
    argon = any_run.get("argon2id") or {}
    lines += [
        f"Measured {any_run.get('measured_at', 'n/a')} at commit `{any_run.get('git_commit', 'n/a')}`. "
        f"`bash bench/console.sh` (part of `just bench`): a merchant with {any_run['charges']:,} charges over ten days (98% "
        "completed, 1% failed, 1% expired, 10,000 payers; seeded with SQL), people invited with `malipo user invite`, the "
        "release server. Pages over one keep-alive connection as a browser (200 requests each, Home 50); under load: wrk "
        "with 8 connections on the session's cookie for 10 s. Sign-in: interleaved wrong passwords for known emails and "
        "unknown emails, each from its own address; the right password at full speed with 4 wrk connections. Flood: 64 "
        "wrk connections from 127.0.0.1 post wrong passwords (one person's email and unknown emails in turn: the "
        "account locks after 10, the address after 100, and a locked address is refused by a plain read before any "
        f"lock), while another person at 127.0.0.2 makes {any_run['flood']['alone']['sign_in_ms']['n']} rounds of a "
        "sign-in and an API call (`GET /partner/balance`); the same rounds without the flood, just before, are the "
        f"baseline. Passwords are Argon2id with m = {argon.get('m_cost_mib', 'n/a')} MiB, t = {argon.get('t_cost', 'n/a')}, "
        f"p = {argon.get('p_cost', 'n/a')} (OWASP's minimum), checked on a bounded pool (8 per core; beyond it 503 with "
        "`Retry-After`).",
        "",
        "| | " + " | ".join(name for _, name in shown) + " |",
        "|---|" + "---|" * len(shown),
    ]

    def row(title, fn):
        lines.append(f"| {title} | " + " | ".join(fn(runs[b]) for b, _ in shown) + " |")

    def page(path):
        def cell(r):
            p = r["pages"][path]
            return f"{p['p50']:.1f} / {p['p99']:.1f} ms {_verdict(p['p99'] < PAGE_P99_MS)}"
        return cell

    row(f"Charges, first page: p50 / p99 (target p99 < {PAGE_P99_MS} ms)", page("/console/charges"))
    row("Charges filtered by state (failed, 1 in 100): p50 / p99", page("/console/charges?state=failed"))
    row("Charges filtered by phone number (a payer's 100): p50 / p99", page("/console/charges?phone=0700001234"))
    row("Charges of one day five days back: p50 / p99", lambda r: (
        lambda p: f"{p['p50']:.1f} / {p['p99']:.1f} ms {_verdict(p['p99'] < PAGE_P99_MS)}")(
        next(v for k, v in r["pages"].items() if "from=" in k)))
    row("Charges first page under load (8 connections): p50 / p99, pages/s", lambda r: (
        f"{r['charges_under_load']['p50']:.1f} / {r['charges_under_load']['p99']:.1f} ms, {r['charges_under_load']['per_sec']:,.0f}/s"))
    row("Charges first page: bytes", lambda r: f"{r['pages']['/console/charges']['bytes']:,}")
    row("Home (today's figures, 14-day chart): p50 / p99", lambda r: (
        f"{r['home']['p50']:.1f} / {r['home']['p99']:.1f} ms {_verdict(r['home']['p99'] < PAGE_P99_MS)}"))
    row("sign-in, wrong password / unknown email: p50", lambda r: (
        f"{r['same_answer']['wrong_password_ms']['p50']:.1f} / {r['same_answer']['unknown_email_ms']['p50']:.1f} ms "
        f"({', '.join(r['same_answer']['answers'])})"))
    row("sign-in at full speed (4 connections): sign-ins/s, p50 / p99", lambda r: (
        f"{r['sign_in_load']['per_sec']:,.0f}/s, {r['sign_in_load']['p50']:.1f} / {r['sign_in_load']['p99']:.1f} ms"))
    row("flood: wrong passwords answered/s", lambda r: f"{r['flood']['wrong_per_sec']:,.0f}")

    def victim(key):
        def cell(r):
            a, f = r["flood"]["alone"][key], r["flood"]["flooded"][key]
            ratio = f["p50"] / a["p50"]
            return f"{a['p50']:.1f} → {f['p50']:.1f} ms ({ratio:.2f}x) {_verdict(ratio <= SLOWDOWN)}"
        return cell

    row(f"flood: another person's sign-in p50, alone → flooded (target ≤ {SLOWDOWN:.0f}x)", victim("sign_in_ms"))
    row(f"flood: another client's API call p50, alone → flooded (target ≤ {SLOWDOWN:.0f}x)", victim("api_ms"))
    row("flood: the other person's statuses (sign-in; API)", lambda r: (
        f"{r['flood']['flooded']['statuses']['sign_in']}; {r['flood']['flooded']['statuses']['api']}".replace("'", "")))
    row("server peak RSS", lambda r: f"{r['rss_peak_mib']:.1f} MiB")
    lines += [
        "",
        "Home sums hourly totals the database keeps by trigger as charges are inserted and completed, and a date "
        "window is also a range of the time-ordered ids, so neither reads the organisation's other charges. SQLite's "
        "peak RSS is its page cache over the seeded million.",
    ]
    lines.append("")
    return lines + apps_section(out)


def _median(values):
    v = sorted(values)
    return v[len(v) // 2] if v else None


def apps_section(out):
    """The agent's page weights and the corporate maker's 10,000-row preview."""
    run = _load(Path(out) / "console-apps.json")
    lines = ["### The agent's pages and the 10,000-row bulk preview", ""]
    if not run:
        return lines + ["Not measured in this run (no `console-apps.json`).", ""]
    names = [b for b, _ in BACKENDS]
    lines += [
        f"Measured {run['measured_at']} at commit `{run['git_commit']}`. `bash bench/console_apps.sh` (part of `just "
        "bench`) runs two HTTP tests in a release build, each against its own server. Page weights: each agent page as "
        "the test leaves it (Float with 20 of the day's transactions), in bytes as sent (pages are not compressed: they "
        "carry the CSRF token beside what people type) and gzipped at the default level with the stylesheet and script "
        f"it loads, as a compressing proxy would send them (target < {AGENT_PAGE_KB} KB); the bytes are the same on both "
        "backends and in every build. Preview: five uploads of a 10,000-row file (one keep-alive connection, the upload "
        f"included), the median and the slowest (target < {PREVIEW_MS / 1000:.0f} s).",
        "",
        "| agent page | bytes | gzipped with CSS and script |",
        "|---|---|---|",
    ]
    pages = [p for p in run["agent_pages"] if p["backend"] == "sqlite"] or run["agent_pages"]
    for p in pages:
        ok = p["gzipped_with_assets"] < AGENT_PAGE_KB * 1024
        lines.append(f"| {p['agent_page']} | {p['html_bytes']:,} | {p['gzipped_with_assets']:,} {_verdict(ok)} |")
    lines += ["", "| 10,000-row preview | " + " | ".join(n for b, n in BACKENDS) + " |", "|---|" + "---|" * len(names)]
    cells = []
    for b in names:
        ms = [p["ms"] for p in run["previews"] if p["backend"] == b]
        if not ms:
            cells.append("n/a")
            continue
        checking = _median([int(p["checking"].split()[0]) for p in run["previews"] if p["backend"] == b])
        cells.append(f"{_median(ms):.0f} ms median, {max(ms):.0f} ms slowest ({checking} ms checking) {_verdict(max(ms) < PREVIEW_MS)}")
    lines += ["| wall time, upload included | " + " | ".join(cells) + " |", ""]
    return lines


def splice(doc, section, heading="## Console", before="## Method"):
    """`doc` with its section whose heading starts with `heading` replaced by `section` (added
    before the section headed `before` if absent)."""
    text = doc.split("\n")
    start = next((i for i, l in enumerate(text) if l.startswith(heading)), None)
    if start is None:
        at = next((i for i, l in enumerate(text) if l == before), len(text))
        return "\n".join(text[:at] + section + text[at:])
    end = next((i for i in range(start + 1, len(text)) if text[i].startswith("## ")), len(text))
    return "\n".join(text[:start] + section + text[end:])


def kept_apps(doc):
    """The agent's pages subsection of `doc` as it stands (from the run that measured it)."""
    text = doc.split("\n")
    start = next((i for i, l in enumerate(text) if l.startswith("### The agent's pages")), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(text)) if text[i].startswith("## ")), len(text))
    return text[start:end]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    target = Path(argv[2])
    doc = target.read_text()
    section = console_section(argv[1])
    # Without `console-apps.json` (bench/console.sh run alone), the agent's pages keep the figures
    # of the run that measured them.
    kept = None if (Path(argv[1]) / "console-apps.json").exists() else kept_apps(doc)
    if kept:
        section = section[: section.index("### The agent's pages and the 10,000-row bulk preview")] + kept
    target.write_text(splice(doc, section))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
