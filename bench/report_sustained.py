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
    doc = target.read_text()
    section = sustained_section(Path(argv[1]))
    if HEADING not in doc:
        doc = doc.replace("## Targets\n", "\n".join(section) + "\n## Targets\n", 1)
    else:
        doc = splice(doc, section, heading=HEADING)
    target.write_text(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
