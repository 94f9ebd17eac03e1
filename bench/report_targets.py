"""The "Throughput and hardening targets" section of docs/performance.md (used by bench/report.py).

Every figure comes from the files of one `bench/run.sh` run; a missing file shows as "n/a".
"""

LIFECYCLE = {"postgres": 1000, "sqlite": 1500}
LIFECYCLE_PGBENCH_FRACTION = 0.35
ONE_OVER_TWENTY = 0.9
CREATION_PGBENCH_FRACTION = 1.0
DELIVERIES = 2000
USSD_APPROVALS = 400
PIN_HOP_P99_MS = 30
TOKEN_P50_MS = 20
CALL_SLOWDOWN = 2.0
RSS_MIB = 100


def _num(value, digits=0):
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _verdict(value, ok):
    if value is None:
        return "n/a"
    return "met" if ok(value) else "**missed**"


def _rate(run):
    return (run or {}).get("lifecycle_per_sec")


def _ratio(a, b):
    return a / b if a is not None and b else None


def _token(runs):
    """The legitimate client's token p50 under the flood (default limits), the largest
    slowdown of any of its calls' p50 against its baseline, and how many of its token requests
    under the flood were not answered 200, over both backends."""
    p50s, slowdowns, refused = [], [], None
    for r in runs:
        if not r:
            continue
        client = r["limited"]["client"]
        p50s.append(client["token"]["p50_ms"])
        statuses = client["token"]["statuses"]
        refused = (refused or 0) + sum(n for status, n in statuses.items() if status != "200")
        for name in ("token", "balance", "charge"):
            slowdowns.append(client[name]["p50_ms"] / r["baseline"][name]["p50_ms"])
    return (max(p50s) if p50s else None), (max(slowdowns) if slowdowns else None), refused


def targets_section(summary, labels, pgbench_median, creation_fraction, token_runs, intake_run, other_rss_kib=()):
    """Rows of the targets of throughput and hardening: `summary` is bench/report.py's per-backend
    summary, `labels` its (backend, name) pairs, `other_rss_kib` the peak RSS of the servers of the
    other phases (money out, transactions)."""
    lines = [
        "## Throughput and hardening targets",
        "",
        "The targets of the throughput work, each checked on this run's files. Ratios compare figures of this run "
        "(the machine is shared: absolute rates move from run to run, ratios much less).",
        "",
        "| target | measured | |",
        "|---|---|---|",
    ]

    def add(title, shown, value, ok):
        lines.append(f"| {title} | {shown} | {_verdict(value, ok)} |")

    for backend, label in labels:
        s = summary[backend]
        for merchants, key in ((1, "life1"), (20, "life20")):
            value = _rate(s[key])
            add(f"{label}: sandbox lifecycle, {merchants} merchant{'s' if merchants > 1 else ''}, ≥ {_num(LIFECYCLE[backend])}/s",
                f"{_num(value)}/s", value, lambda v, b=backend: v >= LIFECYCLE[b])
    worst_pg = min((v for v in (_rate(summary["postgres"]["life1"]), _rate(summary["postgres"]["life20"])) if v is not None), default=None)
    fraction = _ratio(worst_pg, pgbench_median)
    add(f"PostgreSQL: lifecycle ≥ {LIFECYCLE_PGBENCH_FRACTION} of pgbench's charge-creation transactions/s (slower of 1 and 20 merchants)",
        f"{_num(fraction, 2)} ({_num(worst_pg)} ÷ {_num(pgbench_median)})", fraction, lambda v: v >= LIFECYCLE_PGBENCH_FRACTION)
    for backend, label in labels:
        s = summary[backend]
        value = _ratio(_rate(s["life1"]), _rate(s["life20"]))
        add(f"{label}: one merchant ÷ twenty ≥ {ONE_OVER_TWENTY}", _num(value, 2), value, lambda v: v >= ONE_OVER_TWENTY)
    add(f"PostgreSQL: charge creation ≥ {CREATION_PGBENCH_FRACTION} of pgbench doing its SQL", _num(creation_fraction, 2),
        creation_fraction, lambda v: v >= CREATION_PGBENCH_FRACTION)
    for backend, label in labels:
        value = (summary[backend]["wh_backlog"] or {}).get("deliveries_per_sec")
        add(f"{label}: webhook deliveries from a backlog ≥ {_num(DELIVERIES)}/s", f"{_num(value)}/s", value, lambda v: v >= DELIVERIES)
    for backend, label in labels:
        u = summary[backend]["ussd"] or {}
        value = u.get("approvals_per_sec")
        add(f"{label}: USSD approvals (live, 8 sessions at a time) ≥ {USSD_APPROVALS}/s", f"{_num(value, 1)}/s", value,
            lambda v: v >= USSD_APPROVALS)
        p99 = u.get("pin_hop_p99_ms")
        add(f"{label}: USSD PIN hop p99 ≤ {PIN_HOP_P99_MS} ms", f"{_num(p99, 2)} ms", p99, lambda v: v <= PIN_HOP_P99_MS)
    token_p50, slowdown, not_issued = _token(token_runs)
    add(f"token request while 64 connections from its address post wrong and unknown credentials: p50 < {TOKEN_P50_MS} ms "
        "(slower backend)", f"{_num(token_p50, 1)} ms", token_p50, lambda v: v < TOKEN_P50_MS)
    add("…every one of them answered 200 (not answered 200)", _num(not_issued), not_issued, lambda v: v == 0)
    add(f"…and no call's p50 slowed more than {CALL_SLOWDOWN:g}× (largest)", f"{_num(slowdown, 2)}×", slowdown,
        lambda v: v <= CALL_SLOWDOWN)
    rss = []
    for backend in summary:
        s = summary[backend]
        rss += [v for v in list(s["rss_phases"].values()) + [s.get("rss_ussd")] if v is not None]
    for r in token_runs:
        if r:
            rss += list(r["rss_kib"].values())
    if intake_run:
        rss.append(intake_run["rss_kib"])
    rss += list(other_rss_kib)
    peak = max(rss) / 1024 if rss else None
    add(f"server peak RSS, every phase measured, ≤ {RSS_MIB} MiB", f"{_num(peak, 1)} MiB", peak, lambda v: v <= RSS_MIB)
    expired = (intake_run or {}).get("expired")
    if intake_run:
        shown = f"{_num(expired)} of {_num(intake_run['created'])} ({_num(intake_run['refused_503'])} refused with 503)"
    else:
        shown = "n/a"
    add("60 s of full-speed charge intake on PostgreSQL: charges created that then expire = 0", shown, expired, lambda v: v == 0)
    lines.append("")
    lines.append(
        "Each change of the throughput work measured side by side with the build before it, the profiles behind the "
        "targets missed, and what was tried and dropped: `docs/throughput.md`."
    )
    lines.append("")
    return lines
