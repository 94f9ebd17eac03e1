"""The "Database failover" section of docs/performance.md, from `failover.json` of
`bench/failover.sh` (each run of the failover test: the primary killed, then the new primary
frozen, on a three-node Patroni cluster under load) and `replication.json` of
`bench/replication.sh` (the synchronous pair's lifecycle rate, charge p99 beside an export).

bench/report.py includes it in the whole document. Alone, after `bash bench/failover.sh`:

    bash bench/replication.sh
    python3 bench/report_failover.py bench-out docs/performance.md

replaces only this section of the existing document (or adds it before "## Method").
"""

import json
import sys
from pathlib import Path

from report_console import splice

HEADING = "## Database failover (three-node Patroni cluster)"
# From a death to the first acknowledged request: the service comes back by itself within
# Patroni's election and a few seconds more (local timings: ttl 10 s, loop_wait 1 s).
FIRST_ACK_S = 20
# No request waits longer than the deadline allows (3 s, and 0.5 s of grace, and the retry).
SLOWEST_S = 8


def _load(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _median(values):
    v = sorted(values)
    return v[len(v) // 2] if v else None


def _verdict(ok):
    return "met" if ok else "**missed**"


def failover_section(out):
    lines = [HEADING, ""]
    run = _load(Path(out) / "failover.json")
    if not run or not run.get("runs"):
        return lines + ["Not measured in this run (no `failover.json`).", ""]
    runs = run["runs"]
    killed = [r["killed_first_ack_s"] for r in runs]
    frozen = [r["frozen_first_ack_s"] for r in runs]
    slowest = [r["slowest_s"] for r in runs]
    acked = sum(r.get("acknowledged") or 0 for r in runs)
    lines += [
        f"Measured {run['measured_at']} at commit `{run['git_commit']}`. `bash bench/failover.sh` (part of `just bench`) "
        f"runs the failover test {len(runs)} times ({2 * len(runs)} failovers): three Patroni-managed PostgreSQL 15 "
        "nodes in synchronous, strict mode (`scripts/cluster/up.sh`, Patroni `ttl` 10 s, `loop_wait` 1 s), two "
        "instances (debug build) on the multi-host URL under four loops of charges, payouts and reversals; the "
        "primary's Patroni and postmaster SIGKILLed, the killed node started again, then the new primary SIGSTOPped. "
        "First acknowledged: from the death to the first request begun after it that was answered 200 (so it went to "
        "the new primary). Every run also checks that each acknowledged charge, payout and reversal exists exactly "
        "once, every unanswered request settles on retry, every webhook is delivered and `ledger verify` is clean: "
        "a run that lost or doubled anything fails, so every row below lost nothing.",
        "",
        "| run | first acknowledged after the kill | after the freeze | longest request | answered 200 | answered 503 with `Retry-After` |",
        "|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        lines.append(
            f"| {i} | {r['killed_first_ack_s']:.1f} s | {r['frozen_first_ack_s']:.1f} s | {r['slowest_s']:.2f} s | "
            f"{r.get('acknowledged') or 0:,} | {r.get('unavailable') or 0:,} |"
        )
    lines += [
        "",
        "| target | measured | |",
        "|---|---|---|",
        f"| primary killed: first acknowledged charge within {FIRST_ACK_S} s (median, worst) | "
        f"{_median(killed):.1f} s, {max(killed):.1f} s | {_verdict(max(killed) < FIRST_ACK_S)} |",
        f"| primary frozen: first acknowledged charge within {FIRST_ACK_S} s (median, worst) | "
        f"{_median(frozen):.1f} s, {max(frozen):.1f} s | {_verdict(max(frozen) < FIRST_ACK_S)} |",
        f"| longest any request waited < {SLOWEST_S} s | {max(slowest):.2f} s | {_verdict(max(slowest) < SLOWEST_S)} |",
        f"| acknowledged and lost over {2 * len(runs)} failovers = 0 | 0 of {acked:,} | met |",
        "",
        "Most of the time to the first acknowledgement is Patroni's: the leader key expires `ttl` after its last "
        "renewal, then the new primary waits for a synchronous standby (`docs/operations.md`).",
        "",
    ]
    return lines + replication_section(out)


def replication_section(out):
    """The synchronous pair's price and the read replica's worth, from `replication.json`."""
    run = _load(Path(out) / "replication.json")
    lines = ["### Synchronous replication and reports on the standbys", ""]
    if not run:
        return lines + ["Not measured in this run (no `replication.json`).", ""]
    life = run["lifecycle"]
    ch = run["charges"]
    ex = run["exports"]
    rows = run["export_rows"]

    def export_cell(mode):
        secs = ex[mode]["seconds"]
        if not secs:
            return f"{ex[mode]['begun']} begun, none finished"
        return f"{len(secs)} finished, {rows / _median(secs):,.0f} rows/s median"

    lines += [
        f"Measured {run['measured_at']} at commit `{run['git_commit']}` by `bash bench/replication.sh` (part of `just "
        "bench`), release build, on a three-node cluster of its own beside the machine's own PostgreSQL. Everything "
        "runs on this one 2-core machine: the standbys replay, and the export is read, on the cores the primary uses, "
        "which separate machines would not share, so these ratios are the worst case of the layout.",
        "",
        f"Sandbox lifecycle ({life['count']:,} charges, one merchant, rounds alternating): one server "
        + ", ".join(f"{v:,.0f}" for v in life["single"]) + "/s; synchronous pair "
        + ", ".join(f"{v:,.0f}" for v in life["pair"]) + "/s.",
        "",
        f"Charge creation at {run['rate']:.0f}/s offered for {run['secs']} s while another merchant's export of "
        f"{rows:,} transactions streams again and again (none in the baseline):",
        "",
        "| export read on | charges answered 200 | p50 | p99 | exports |",
        "|---|---|---|---|---|",
        f"| (no export) | {ch['baseline']['ok']:,} | {ch['baseline']['p50_ms']:.2f} ms | {ch['baseline']['p99_ms']:.2f} ms | |",
        f"| the primary | {ch['primary']['ok']:,} | {ch['primary']['p50_ms']:.2f} ms | {ch['primary']['p99_ms']:.2f} ms | {export_cell('primary')} |",
        f"| a standby (`MALIPO_DATABASE_READ_URL`) | {ch['replica']['ok']:,} | {ch['replica']['p50_ms']:.2f} ms | "
        f"{ch['replica']['p99_ms']:.2f} ms | {export_cell('replica')}; {run.get('replica_fallbacks') or 0} reads fell back to the primary |",
        "",
        "| measure | figure |",
        "|---|---|",
        f"| lifecycle rate, synchronous pair ÷ one server (median of rounds) | {_median(life['ratios']):.2f} |",
        f"| charge p99 with the export on a standby ÷ on the primary | {ch['replica']['p99_ms'] / ch['primary']['p99_ms']:.2f} |",
        "",
        "Either way the instance renders the export's CSV on the same cores as the charges, and here the standby "
        "and the primary share them too: what a standby takes away on this machine is only the primary's own work.",
        "",
    ]
    return lines


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    target = Path(argv[2])
    target.write_text(splice(target.read_text(), failover_section(argv[1]), "## Database failover"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
