"""The "Sustained whole payments" section of docs/performance.md, from `sustained.json` of
`bench/sustained.sh`.

bench/report.py includes it in the whole document. Alone, after `bash bench/sustained.sh`:

    python3 bench/report_sustained.py bench-out docs/performance.md

replaces only this section of the existing document (or adds it before "## Targets", as the
headline), so the other sections keep the figures of their own run.
"""

import sys
from pathlib import Path

from report import sustained_section
from report_console import splice

HEADING = "## Sustained whole payments"


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    target = Path(argv[2])
    target.write_text(splice(target.read_text(), sustained_section(Path(argv[1])), heading=HEADING, before="## Targets"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
