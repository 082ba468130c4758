"""The house plan holds: layers import downwards only, no import cycles, no private names across packages, every
op in the module of its family in every layer, converters and mapping rows linked both ways, no typed op counts.
(docs/architecture.md describes the layers; tools/import_layers.py prints them.)"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from nnrt_onnx.ir.rows import onnx_rows
from nnrt_onnx.kernels import kernels
from nnrt_onnx.onnx_export.handlers import exporters
from nnrt_onnx.onnx_import.handlers import registered
from nnrt_onnx.optable import FAMILIES, op_table

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nnrt_onnx"


def _import_layers():
    spec = importlib.util.spec_from_file_location("import_layers", ROOT / "tools" / "import_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def import_graph():
    if not (PACKAGE / "__init__.py").is_file():
        pytest.skip("the source tree is not next to the tests")
    return _import_layers().graph()


# -- layers --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lower,upper", [("nnrt_onnx.onnx_export", "nnrt_onnx.onnx_import"),
                                         ("nnrt_onnx.onnx_import", "nnrt_onnx.onnx_export"),
                                         ("nnrt_onnx.runtime", "nnrt_onnx.onnx_import"),
                                         ("nnrt_onnx.ir", "nnrt_onnx.onnx_import"),
                                         ("nnrt_onnx.ir", "nnrt_onnx.onnx_export"),
                                         ("nnrt_onnx.kernels", "nnrt_onnx.ir"),
                                         ("nnrt_onnx.kernels", "nnrt_onnx.runtime"),
                                         ("nnrt_onnx.kernels", "nnrt_onnx.accel"),
                                         ("nnrt_onnx.accel", "nnrt_onnx.runtime"),
                                         ("nnrt_onnx.accel", "nnrt_onnx.ir"),
                                         ("nnrt_onnx.accel", "nnrt_onnx.workflows"),
                                         ("nnrt_onnx.plan", "nnrt_onnx.kernels"),
                                         ("nnrt_onnx.plan", "nnrt_onnx.accel"),
                                         ("nnrt_onnx.plan", "nnrt_onnx.runtime"),
                                         ("nnrt_onnx.passes", "nnrt_onnx.ir"),
                                         ("nnrt_onnx.passes", "nnrt_onnx.runtime")])
def test_a_layer_does_not_import_one_above_or_beside_it(import_graph, lower, upper):
    def inside(module, package):
        return module == package or module.startswith(package + ".")

    offending = sorted(f"{m} -> {t}" for m, targets in import_graph.items() if inside(m, lower)
                       for t in targets if inside(t, upper))
    assert not offending


def test_only_the_fast_path_package_compiles_anything():
    """numba and llvmlite (compiled code) are imported by ``nnrt_onnx/accel`` only: the reference kernels and the
    rest of the library run without them (``NNRT_ONNX_NUMBA=0`` never imports the package)."""
    offending = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if (PACKAGE / "accel") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            offending += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in ("numba", "llvmlite")]
    assert not offending


def test_the_library_never_imports_the_test_harnesses(import_graph):
    offending = sorted(f"{m} -> {t}" for m, targets in import_graph.items() if not m.startswith("nnrt_onnx.testing")
                       for t in targets if t.startswith("nnrt_onnx.testing"))
    assert not offending


def test_no_import_cycles(import_graph):
    assert _import_layers().cycles(import_graph) == []


def test_no_import_cycles_between_packages(import_graph):
    """Each subpackage as one node (lazy imports count): the layers of docs/architecture.md are real."""
    layers = _import_layers()
    assert layers.cycles(layers.collapse(import_graph)) == []


def test_the_layer_table_of_docs_architecture_is_generated_from_the_imports():
    layers = _import_layers()
    text = (ROOT / "docs" / "architecture.md").read_text()
    begin, end = text.find(layers.MARKDOWN_BEGIN), text.find(layers.MARKDOWN_END)
    assert begin >= 0 and end > begin, "docs/architecture.md lost its generated layer table"
    assert text[begin:end + len(layers.MARKDOWN_END)] + "\n" == layers.markdown(), \
        "docs/architecture.md is stale: python tools/import_layers.py --markdown, and paste it over the table"


def _package_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1]) if path.name != "__init__.py" else ".".join(parts[:-1])


def test_no_private_name_imported_across_packages():
    offending = []
    for path in sorted(PACKAGE.rglob("*.py")):
        package = _package_of(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("nnrt_onnx"):
                continue
            source_package = source if (ROOT / Path(*source.split("."))).is_dir() else source.rpartition(".")[0]
            for alias in node.names:
                if alias.name.startswith("_") and source_package != package:
                    offending.append(f"{path.relative_to(ROOT)}: {alias.name} from {source}")
    assert not offending


def test_op_counts_are_derived_not_typed():
    count = len(op_table())
    typed = []
    for path in [p for p in sorted(PACKAGE.rglob("*.py")) if p.name != "enums.py"] + [ROOT / "cli.py"]:  # (enum values)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value == count and not isinstance(node.value, bool):
                typed.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and f" {count} " in node.value:
                typed.append(f"{path.relative_to(ROOT)}:{node.lineno} (in text)")
    assert not typed


# -- one family map ------------------------------------------------------------------------------------------------

def _family_module(fn) -> str:
    return fn.__module__.rpartition(".")[2]


def test_every_kernel_lives_in_its_family_module():
    misplaced = [f"{op.name}: {_family_module(fn)}.py, family {op_table()[op].family}"
                 for op, fn in kernels().items() if _family_module(fn) != op_table()[op].family]
    assert not misplaced


def test_every_export_function_lives_in_its_family_module():
    misplaced = [f"{op.name}: {_family_module(fn)}.py, family {op_table()[op].family}"
                 for op, fn in exporters().items() if _family_module(fn) != op_table()[op].family]
    assert not misplaced


def test_every_import_converter_lives_in_the_family_module_of_its_rows():
    rows = onnx_rows()
    misplaced = []
    for (op_type, since), fn in registered().items():
        for row in rows.get(op_type, []):
            if since in (None, row.since) and _family_module(fn) != row.family:
                misplaced.append(f"{op_type} (since {row.since}, {row.source}): {fn.__name__} in "
                                 f"{_family_module(fn)}.py, family {row.family}")
    assert not misplaced


def test_every_converter_has_its_row_and_every_decomposition_its_converter():
    rows = onnx_rows()
    table = registered()
    orphans = sorted(f"{op_type} since {since}: {fn.__name__}" for (op_type, since), fn in table.items()
                     if op_type not in rows or (since is not None and all(r.since != since for r in rows[op_type])))
    assert not orphans, "registered converters without a mapping row"
    missing = sorted(f"{row.op_type} since {row.since} ({row.source})" for found in rows.values() for row in found
                     if row.nnrt_op is None and (row.op_type, row.since) not in table
                     and (row.op_type, None) not in table)
    assert not missing, "decomposition rows without a converter"


@pytest.mark.parametrize("layer", ["kernels", "onnx_import/handlers", "onnx_export/handlers"])
def test_layer_modules_are_families(layer):
    modules = {p.stem for p in (PACKAGE / layer).glob("*.py") if p.stem != "__init__"}
    strangers = sorted(m for m in modules - set(FAMILIES) if not m.startswith("_"))
    assert not strangers, f"modules of nnrt_onnx/{layer} must be named after a family (or be _private helpers)"


@pytest.mark.parametrize("folder", ["kernels", "onnx_import"])
def test_test_modules_are_families(folder):
    directory = ROOT / "tests" / folder
    if not directory.is_dir():
        pytest.fail(f"tests/{folder} is missing")
    modules = {p.stem[len("test_"):] for p in directory.glob("test_*.py")}
    assert modules <= set(FAMILIES), sorted(modules - set(FAMILIES))
    families = {e.family for e in op_table().values()} if folder == "kernels" else \
        {r.family for found in onnx_rows().values() for r in found}
    assert families <= modules, f"families without tests in tests/{folder}: {sorted(families - modules)}"


def test_a_one_to_one_op_lives_in_its_entry_and_its_kernel_module_only():
    """docs/architecture.md's worked example holds: an op imported by the generic converter and exported by its
    row read in reverse is registered or listed (by name, in a string) nowhere in the library but its kernel module
    and, where it has fast paths, the fast-path module of its family (``accel/<family>.py``, its specialiser); other
    code may still *use* it (``OP.OH_NN_OPS_SIGMOID`` in a decomposition)."""
    from nnrt_onnx.onnx_import.handlers import handler_for

    strings: dict[Path, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "enums.py":
            strings[path] = {n.value for n in ast.walk(ast.parse(path.read_text()))
                             if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    checked = 0
    for op, entry in op_table().items():
        rows = [r for found in onnx_rows().values() for r in found if r.nnrt_op == op]
        if not rows or op in exporters() or any(handler_for(r).__name__ != "convert_generic" for r in rows) \
                or any(r.export != "generic" for r in rows):
            continue
        checked += 1
        names = {op.name, op.name[len("OH_NN_OPS_"):]}
        own = {PACKAGE / "kernels" / f"{entry.family}.py", PACKAGE / "accel" / f"{entry.family}.py"}
        listing = sorted(str(p.relative_to(ROOT)) for p, found in strings.items() if names & found and p not in own)
        assert not listing, f"{op.name} is also listed in {listing}"
    assert checked >= 10  # FLOOR, CEIL, ROUND, SIN, COS, ...: the 1:1 ops
