#!/usr/bin/env python3
"""Checks the shape rules of docs/architecture.md, so that the code keeps the shape it was cut to:

1. no circle of imports between the modules of a crate (a module is a file; `crate::a::b`,
   `super::x` and a parent's `mod child;` are edges);
2. no trait in `crates/malipo-service/src` with more than 20 methods;
3. no source file over 600 lines, not counting its inline `#[cfg(test)]` module (test files and
   `tests/` directories are not counted at all);
4. the service's shared rules (NARROW below) name the ports they use: none of them takes the whole
   `dyn Tx`; a file joins the list when its functions are narrowed, and never leaves it;
5. use-case transactions on the whole `Tx` (bare `write(store, …)` and the like) number at most
   MAX_WHOLE_TX_CLOSURES, which only ever goes down.

Exits non-zero, naming each violation. Standard library only.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_TRAIT_METHODS = 20
MAX_FILE_LINES = 600
# Use-case transactions still given the whole `Tx` rather than a view (`src/views.rs`): the
# count may fall (lower it here), never rise. The one left is `Core::idempotent`'s own transaction,
# which stores the key and hands its effect the view it names.
MAX_WHOLE_TX_CLOSURES = 1
WHOLE_TX_CLOSURE = re.compile(r"(?:^|[^\w.:])(?:write|read|report|query|autocommit)\((?:self|core|store)")
NARROW = [
    "core.rs", "events.rs", "limits.rs", "customers.rs", "lifecycle.rs", "processing.rs", "payouts/worker.rs",
    "reversals.rs", "people/failures.rs", "webhooks/delivery.rs", "webhooks/model.rs", "accounts.rs", "agents.rs",
    "webhooks/api.rs", "payouts/bulk.rs", "people/person.rs", "sandbox.rs", "p2p.rs", "payment_requests/pay.rs",
    "payment_requests/mod.rs", "people/sign_in.rs", "people/enrol.rs", "people/team.rs", "transactions.rs", "charges.rs",
    "access.rs", "wallets/mod.rs", "wallets/pin.rs", "ussd/mod.rs", "ussd/hops.rs", "ussd/approvals.rs",
]


def crates():
    for group in ("crates", "apps"):
        for c in sorted((ROOT / group).iterdir()):
            if (c / "src").is_dir():
                yield c


def module_path(src: Path, f: Path) -> tuple:
    rel = f.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def strip_comments(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def non_test_part(text: str) -> str:
    m = re.search(r"^#\[cfg\(test\)\]\s*\n(?:\s*#\[[^\n]*\]\s*\n)*\s*mod \w+\s*\{", text, flags=re.M)
    return text[: m.start()] if m else text


def is_test_file(f: Path) -> bool:
    return "tests" in f.parts or f.name in ("tests.rs", "testing.rs")


def expand(prefix: str, tree: str):
    """The paths of a `use` tree: `a::{b, c::{d, e}}` gives a::b, a::c::d, a::c::e."""
    tree = tree.strip()
    if not tree:
        return [prefix]
    depth, start, parts = 0, 0, []
    if "{" not in tree:
        return [prefix + "::" + tree.split(" as ")[0].strip() if prefix else tree]
    head, _, rest = tree.partition("{")
    head = head.strip().rstrip(":")
    base = "::".join(p for p in (prefix, head) if p)
    body = rest.rsplit("}", 1)[0]
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    out = []
    for part in parts:
        part = part.strip()
        if part in ("", "self"):
            out.append(base)
        elif part != "*":
            out.extend(expand(base, part))
        else:
            out.append(base)
    return out


def use_paths(text: str, root: str):
    """Paths named by `use ROOT::…;` statements (grouped ones expanded) and inline `ROOT::a::b`."""
    paths = []
    for m in re.finditer(r"\buse\s+" + root + r"::([^;]*);", text, flags=re.S):
        paths.extend(expand("", m.group(1)))
    without_uses = re.sub(r"\buse\s+[^;]*;", "", text, flags=re.S)
    paths.extend(p.strip(":") for p in re.findall(r"\b" + root + r"((?:::\w+)+)", without_uses))
    return [tuple(p.split("::")) for p in paths if p]


def resolve(mods: set, path: tuple):
    """The longest prefix of `path` that is a module."""
    for n in range(len(path), -1, -1):
        if path[:n] in mods:
            return path[:n]
    return ()


def cycles_of(crate: Path):
    src = crate / "src"
    files = {module_path(src, f): f for f in src.rglob("*.rs") if not is_test_file(f.relative_to(src))}
    mods = set(files)
    edges = {m: set() for m in mods}
    for m, f in files.items():
        text = strip_comments(non_test_part(f.read_text()))
        for child in re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod (\w+);", text, flags=re.M):
            if m + (child,) in mods:
                edges[m].add(m + (child,))
        for path in use_paths(text, "crate"):
            target = resolve(mods, path)
            if target != m and target != ():
                edges[m].add(target)
        for path in use_paths(text, "super"):
            target = resolve(mods, m[:-1] + path)
            if target != m:
                edges[m].add(target)
        for path in use_paths(text, "self"):
            target = resolve(mods, m + path)
            if target != m:
                edges[m].add(target)
    # Tarjan's strongly connected components.
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(mods):
        if v not in index:
            visit(v)
    return out


def trait_sizes(root: Path):
    for f in sorted(root.rglob("*.rs")):
        text = strip_comments(non_test_part(f.read_text()))
        for m in re.finditer(r"\btrait (\w+)[^{;]*\{", text):
            depth, i = 1, m.end()
            while depth and i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            body = text[m.end() : i - 1]
            # methods at the trait's own level
            level, methods = 0, 0
            for tok in re.finditer(r"[{}]|\bfn\s+\w+", body):
                t = tok.group(0)
                if t == "{":
                    level += 1
                elif t == "}":
                    level -= 1
                elif level == 0:
                    methods += 1
            yield f, m.group(1), methods


def main() -> int:
    problems = []
    for crate in crates():
        for comp in cycles_of(crate):
            names = " -> ".join("::".join(m) or "crate root" for m in sorted(comp))
            problems.append(f"{crate.relative_to(ROOT)}: modules import each other in a circle: {names}")
        for f in sorted((crate / "src").rglob("*.rs")):
            if is_test_file(f.relative_to(crate / "src")):
                continue
            lines = non_test_part(f.read_text()).count("\n")
            if lines > MAX_FILE_LINES:
                problems.append(f"{f.relative_to(ROOT)}: {lines} lines (tests excluded); at most {MAX_FILE_LINES}")
    for f, name, n in trait_sizes(ROOT / "crates/malipo-service/src"):
        if n > MAX_TRAIT_METHODS:
            problems.append(f"{f.relative_to(ROOT)}: trait {name} has {n} methods; at most {MAX_TRAIT_METHODS}")
    for name in NARROW:
        f = ROOT / "crates/malipo-service/src" / name
        if re.search(r"\bdyn\s+Tx\b", strip_comments(non_test_part(f.read_text()))):
            problems.append(f"{f.relative_to(ROOT)}: takes the whole `dyn Tx`; bound it to the ports it uses")
    whole = 0
    for f in sorted((ROOT / "crates/malipo-service/src").rglob("*.rs")):
        rel = f.relative_to(ROOT / "crates/malipo-service/src")
        if rel.parts[0] in ("ports", "views.rs") or is_test_file(rel):
            continue
        whole += len(WHOLE_TX_CLOSURE.findall(strip_comments(non_test_part(f.read_text()))))
    if whole > MAX_WHOLE_TX_CLOSURES:
        problems.append(f"crates/malipo-service/src: {whole} transactions on the whole `Tx` (at most {MAX_WHOLE_TX_CLOSURES}); run new ones through a view")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} shape rule(s) broken (see scripts/check-shape.py)")
        return 1
    print(f"shape: no import circles, no trait over 20 methods, no file over 600 lines, shared rules on narrow ports, {whole} whole-Tx transactions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
