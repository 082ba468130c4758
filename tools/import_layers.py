"""The module import graph of nnrt_onnx: layers (longest import chain below each module), cycles, and imports
across packages that the architecture forbids.

    python tools/import_layers.py            # layers, one line per module, then cycles
    python tools/import_layers.py --summary  # module count, layer count, cycles
    python tools/import_layers.py --packages # the same with each subpackage as one node (the architecture view)
    python tools/import_layers.py --markdown # that view as docs/architecture.md's generated layer table

Every import counts, at module level or inside a function (a lazy import is still a dependency), except those under
``if TYPE_CHECKING:`` (annotations only).
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nnrt_onnx"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    found["nnrt_onnx.cli"] = ROOT / "cli.py"
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and getattr(block.test, "id", getattr(block.test, "attr", "")) == "TYPE_CHECKING"
                   for statement in block.body for n in ast.walk(statement)}
    for node in ast.walk(tree):
        if id(node) in typing_only:  # annotations only: not a dependency at run time
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            targets = [f"{prefix}.{a.name}" for a in node.names]
            if any(t not in known for t in targets):  # names of the module itself, not only submodules of a package
                targets.append(prefix)
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    edges = {name: imports_of(name, path, known) for name, path in mods.items()}
    # a package's __init__ is imported with any of its submodules: count the edge only when named explicitly
    return edges


def collapse(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph with every subpackage of nnrt_onnx as one node (its modules merged)."""
    def node(module: str) -> str:
        parts = module.split(".")
        if len(parts) > 2 and (PACKAGE / parts[1]).is_dir():
            return ".".join(parts[:2])
        return module if len(parts) > 1 else module

    merged: dict[str, set[str]] = {}
    for module, targets in edges.items():
        merged.setdefault(node(module), set()).update(node(t) for t in targets)
    for name, targets in merged.items():
        targets.discard(name)
    return merged


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return result


def layers(edges: dict[str, set[str]]) -> dict[str, int]:
    """Layer of each module: 0 when it imports nothing of the package, else 1 + the highest layer it imports
    (modules of one cycle share a layer)."""
    component_of: dict[str, str] = {}
    for component in cycles(edges):
        for m in component:
            component_of[m] = component[0]
    layer: dict[str, int] = {}

    def depth(v: str, seen: frozenset) -> int:
        if v in layer:
            return layer[v]
        below = [w for w in edges[v] if component_of.get(w, w) != component_of.get(v, v) and w not in seen]
        value = 1 + max((depth(w, seen | {v}) for w in below), default=-1)
        layer[v] = value
        return value

    for v in edges:
        depth(v, frozenset())
    return layer


MARKDOWN_BEGIN = "<!-- layers: generated by `python tools/import_layers.py --markdown`; a test keeps it fresh -->"
MARKDOWN_END = "<!-- end of the generated layers -->"


def _summary(name: str) -> str:
    """The first sentence of a package's or module's docstring (its first 110 characters)."""
    path = PACKAGE / Path(*name.split(".")[1:]) if name != "nnrt_onnx.cli" else ROOT / "cli.py"
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py") if name != "nnrt_onnx.cli" else path
    doc = " ".join((ast.get_docstring(ast.parse(path.read_text())) or "").split())
    end = next((i for i in range(len(doc)) if doc[i] == "." and (i + 1 == len(doc) or doc[i + 1] == " ")), len(doc))
    sentence = doc[:end].replace("|", "/").replace("``", "`").replace(":class:", "")
    if len(sentence) > 110:  # (a table cell: the gist, cut at a word)
        sentence = sentence[:110].rsplit(" ", 1)[0].rstrip(",;:(") + " ..."
    return sentence


def markdown() -> str:
    """The package view (:func:`collapse`) as a table, highest layer first: what each package imports directly."""
    edges = collapse(graph())
    level = layers(edges)
    short = lambda n: n[len("nnrt_onnx."):] if n.startswith("nnrt_onnx.") else "__init__"  # noqa: E731
    lines = [MARKDOWN_BEGIN, "", "| layer | package or module | what it is | imports (nnrt_onnx's) |", "|---|---|---|---|"]
    for name in sorted(edges, key=lambda n: (-level[n], n)):
        imports = ", ".join(short(t) for t in sorted(edges[name], key=lambda t: (-level[t], t))) or "-"
        lines.append(f"| {level[name]} | `{short(name)}` | {_summary(name)} | {imports} |")
    found = cycles(edges)
    lines += ["", f"{len(edges)} packages and top-level modules on {max(level.values()) + 1} layers, "
                  f"{len(found)} import cycle(s) between them.", "", MARKDOWN_END]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", action="store_true")
    parser.add_argument("--packages", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if args.markdown:
        sys.stdout.write(markdown())
        return 0
    edges = graph()
    if args.packages:
        edges = collapse(edges)
    found = cycles(edges)
    level = layers(edges)
    if not args.summary:
        for name in sorted(edges, key=lambda n: (level[n], n)):
            print(f"{level[name]:>3}  {name}")
    print(f"{len(edges)} {'nodes' if args.packages else 'modules'} on {max(level.values()) + 1} import layers, {len(found)} import cycle(s)")
    for component in found:
        print("  cycle: " + " <-> ".join(component))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
