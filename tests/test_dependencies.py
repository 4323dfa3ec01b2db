"""Dependencies point one way: CLIs -> capabilities -> core.

Every ``import`` of the toolkit's own modules (function-level ones included; ``TYPE_CHECKING``
blocks excluded) is read from the source with ``ast``. No two modules import each other, however
indirectly; no two units (a subpackage, or a core module) do; and every import goes to a unit of
the same or a lower layer of ``LAYERS``. The package root is exempt: it holds ``__version__`` and
loads the API lazily.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO, pyproject

#: where each installed package's source lives (builders/, evaluators/ and cards/ install under idc_toolkit)
SOURCES = {"idc_toolkit": REPO / "idc_toolkit", "idc_toolkit.builders": REPO / "builders",
           "idc_toolkit.evaluators": REPO / "evaluators", "idc_toolkit.cards": REPO / "cards"}

#: the layers, lowest first: a unit may import its own layer's units and lower ones, never higher
LAYERS = [
    ["errors", "cache", "files", "escape", "text", "urls", "schema", "facts", "checks", "devices", "openclip", "stores",
     "card_data", "prompts", "presentation", "multiple_choice", "registry", "options", "malloc"],
    ["cards", "metrics"],
    ["runs"],
    ["building", "builders", "masks", "viewer", "judge"],
    ["entities", "augment", "evaluators"],
    ["models"],
    ["training"],
    ["demo", "api", "caption"],
    ["cli"],
]


def _module_name(path: Path) -> str:
    for package, base in sorted(SOURCES.items(), key=lambda kv: -len(str(kv[1]))):
        if path.is_relative_to(base):
            parts = list(path.relative_to(base).with_suffix("").parts)
            return ".".join([package, *(parts[:-1] if parts[-1] == "__init__" else parts)])
    raise AssertionError(path)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for base in SOURCES.values() for p in base.rglob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for n in ast.walk(node)}
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only or not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            base = node.module or "" if not node.level else ".".join(
                here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and target != "idc_toolkit":
                found.add(target)
    return found


def _unit(module: str) -> str:
    return module.split(".")[1]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _graphs():
    modules = _modules()
    edges = {name: _imports(name, path, modules) for name, path in modules.items() if name != "idc_toolkit"}
    units: dict[str, set[str]] = {}
    for a, targets in edges.items():
        units.setdefault(_unit(a), set()).update(_unit(b) for b in targets if _unit(b) != _unit(a))
    return edges, units


def test_no_import_cycles_between_modules_or_units():
    edges, units = _graphs()
    assert _cycles(edges) == []
    assert _cycles(units) == []


def test_every_import_goes_to_the_same_or_a_lower_layer():
    _edges, units = _graphs()
    layer = {unit: i for i, names in enumerate(LAYERS) for unit in names}
    assert set(units) <= set(layer), f"units without a layer: {sorted(set(units) - set(layer))}"
    upward = sorted(f"{a} -> {b}" for a, targets in units.items() for b in targets if layer[b] > layer[a])
    assert upward == []


def test_the_check_sees_a_cycle_and_an_upward_import():
    """The checks can fail: a made-up pair that imports each other, and core importing the CLI."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    layer = {unit: i for i, names in enumerate(LAYERS) for unit in names}
    assert layer["cli"] > layer["facts"]
    modules = _modules()
    assert "idc_toolkit.card_data" in _imports("idc_toolkit.runs.rules", modules["idc_toolkit.runs.rules"], modules)


def test_every_file_the_demo_loads_is_installed_package_data():
    """A wheel holds a package's data files only where pyproject's package-data patterns name them
    (``bases/*/*`` alone left out InstructBLIP's ``qformer_tokenizer/``)."""
    import fnmatch

    patterns = pyproject()["tool"]["setuptools"]["package-data"]["idc_toolkit.demo"]
    demo = REPO / "idc_toolkit" / "demo"
    files = [p.relative_to(demo).as_posix() for p in (demo / "bases").rglob("*") if p.is_file() and p.name != "README.md"]
    assert files and not [f for f in files if not any(fnmatch.fnmatchcase(f, pat) and f.count("/") == pat.count("/")
                                                      for pat in patterns)]
