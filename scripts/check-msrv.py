"""The workspace's declared `rust-version` is true: no locked dependency declares a newer one.

`cargo metadata` lists every package of Cargo.lock with the `rust-version` it declares; the
workspace's own (Cargo.toml, `[workspace.package]`) must be at least the highest of them, or a
build with the declared toolchain fails. Run by CI (.ci/run).
"""

import json
import subprocess
import sys


def version(text):
    return tuple(int(part) for part in text.split("."))


def main():
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1"], check=True, capture_output=True, text=True).stdout)
    ours = set(meta["workspace_members"])
    declared = {p["name"]: p.get("rust_version") for p in meta["packages"] if p["id"] in ours}
    needed = max(((version(p["rust_version"]), f'{p["name"]} {p["version"]}') for p in meta["packages"]
                  if p["id"] not in ours and p.get("rust_version")), default=((0,), "nothing"))
    wrong = [f"{name} declares {v or 'none'}" for name, v in sorted(declared.items()) if not v or version(v) < needed[0]]
    if wrong:
        print(f"msrv: {needed[1]} needs Rust {'.'.join(map(str, needed[0]))}, but " + "; ".join(wrong), file=sys.stderr)
        return 1
    print(f"msrv: every crate declares a rust-version at least {'.'.join(map(str, needed[0]))} (needed by {needed[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
