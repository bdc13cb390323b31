"""The map of the house holds (docs/architecture.md): read from the code's own imports, every
one of them (function-level imports too), so a new import that breaks a floor fails here."""

from __future__ import annotations

import ast
import pathlib
from collections import defaultdict

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOT_PRODUCT = {".venv", "node_modules", "migrations", "tests", "bench", "scripts", "var", ".git", "deploy", "docs", "templates", "build"}
AREAS = {"tenancy", "custody", "accounts", "instruments", "positions", "loans", "marketdata", "transactions", "webhooks", "lookup_tables", "vaults", "backoffice"}


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    tops = [top for top in ROOT.iterdir() if top.is_dir() and top.name not in NOT_PRODUCT and not top.name.startswith(".")]
    for path in [*ROOT.glob("*.py"), *(path for top in tops for path in top.rglob("*.py"))]:
        relative = path.relative_to(ROOT)
        if set(relative.parts) & NOT_PRODUCT or relative.name.startswith("test_") or relative.name == "conftest.py" or relative.parts[0].endswith(".egg-info"):
            continue
        name = ".".join(relative.with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


MODULES = _modules()


def _imports(name: str, path: pathlib.Path) -> set[str]:
    """The product modules ``name`` imports (the deepest one each import names)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module
            targets = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


EDGES = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative enough for
    a few hundred modules)."""
    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _app(module: str) -> str:
    return module.split(".")[0]


def test_no_two_apps_import_each_other():
    apps: dict[str, set[str]] = defaultdict(set)
    for name, targets in EDGES.items():
        apps[_app(name)] |= {_app(t) for t in targets if _app(t) != _app(name)}
    assert not _cycles(apps)


@pytest.mark.parametrize(("lower", "higher"), [
    ("transactions", "accounts"), ("transactions", "webhooks"), ("transactions", "lookup_tables"), ("custody", "transactions"), ("chain", "transactions"),
    ("chain", "tenancy"), ("threshold", "accounts"), ("localnet", "transactions"), ("localnet", "chain"),
])
def test_a_lower_floor_imports_nothing_of_a_higher_one(lower, higher):
    reached = sorted(f"{name} -> {t}" for name, targets in EDGES.items() if _app(name) == lower for t in targets if _app(t) == higher)
    assert not reached


def test_ledger_project_imports_no_area_app():
    reached = sorted(f"{name} -> {t}" for name, targets in EDGES.items() if _app(name) == "ledger_project" for t in targets if _app(t) in AREAS)
    assert not reached


def test_the_threshold_package_stands_alone():
    """pip install ./threshold ships it alone: it imports nothing else of the project."""
    reached = sorted(f"{name} -> {t}" for name, targets in EDGES.items() if _app(name) == "threshold" for t in targets if _app(t) != "threshold")
    assert not reached


def test_the_fault_front_stands_alone():
    """faultfront/ is a server of its own in front of any node (docs/chain.md "The fault front"):
    the standard library only, nothing of the project, not even the local node it often fronts."""
    reached = sorted(f"{name} -> {t}" for name, targets in EDGES.items() if _app(name) == "faultfront" for t in targets if _app(t) != "faultfront")
    assert not reached


@pytest.mark.parametrize("app", ["transactions", "webhooks"])
def test_the_engines_only_loop_is_a_task_and_its_kick(app):
    """Without the imports of ``tasks.py`` (a kick, at call time) the app's files import one way."""
    edges = {name: {t for t in targets if _app(t) == app and t != f"{app}.tasks"} for name, targets in EDGES.items() if _app(name) == app}
    assert not _cycles(edges)


def test_no_product_file_is_over_500_lines():
    long = sorted(f"{path.relative_to(ROOT)}: {n}" for path in MODULES.values() if (n := len(path.read_text().splitlines())) > 500)
    assert not long
