"""The map of the house holds (docs/architecture.md): the rules are data (docs/house.toml),
read here against the code's own imports, every one of them (function-level imports too), its
models and its test layout, so a new import that breaks a floor, a new circle, a foreign key
up a floor or a package's test left out of the run fails here."""

from __future__ import annotations

import ast
import configparser
import pathlib
import re
import sys
import tomllib
from collections import defaultdict

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOT_PRODUCT = {".venv", "node_modules", "migrations", "tests", "bench", "scripts", "var", ".git", "deploy", "docs", "templates", "build"}
HOUSE = tomllib.loads((ROOT / "docs" / "house.toml").read_text())
MAP = ROOT / "docs" / "architecture.md"
TABLE_START = "<!-- floors: rendered from docs/house.toml (python tests/test_house.py); tests/test_house.py fails when they differ -->"
TABLE_END = "<!-- end of floors -->"
FLOOR = {room: row["floor"] for row in HOUSE["floor"] for room in row["rooms"]}
ONLY = {room: row["only"] for row in HOUSE["floor"] if "only" in row for room in row["rooms"]}
NEVER = {room: row["never"] for row in HOUSE["floor"] if "never" in row for room in row["rooms"]}


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


def _room(module: str) -> str:
    return module.split(".")[0]


def _entry_point(module: str) -> bool:
    return MODULES[module].parent == ROOT


def _within(target: str, names: list[str]) -> bool:
    return any(target == name or target.startswith(f"{name}.") for name in names)


# --- floors -------------------------------------------------------------------------------------


def floor_table() -> str:
    """docs/architecture.md's floor table, from the [[floor]] rows of docs/house.toml."""
    lines = ["| Floor | Room | Holds |", "|---|---|---|"]
    for row in HOUSE["floor"]:
        lines.append(f"| {row['floor']} | {', '.join(f'`{room}/`' for room in row['rooms'])} | {row['holds']} |")
    return "\n".join(lines)


def _page_table(text: str) -> str:
    assert TABLE_START in text and TABLE_END in text, f"docs/architecture.md lost its table markers ({TABLE_START} ... {TABLE_END})"
    return text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()


def test_the_maps_floor_table_is_the_data():
    assert [row["floor"] for row in HOUSE["floor"]] == sorted(row["floor"] for row in HOUSE["floor"]), "floors are listed bottom up"
    assert _page_table(MAP.read_text()) == floor_table(), "docs/architecture.md's floor table differs from docs/house.toml: run python tests/test_house.py"


def test_every_room_has_a_floor():
    """A new top-level package gets a row in docs/house.toml before anything can hold it."""
    rooms = {_room(name) for name in MODULES if not _entry_point(name)}
    assert sorted(rooms - set(FLOOR)) == []
    assert sorted(set(FLOOR) - rooms) == []
    assert sorted(name for name in MODULES if _entry_point(name)) == sorted(HOUSE["entry_points"])


def test_no_room_imports_a_higher_floor():
    """A room imports only from its floor or below; a room with ``only`` imports nothing else
    outside itself. Where a lower floor needs an answer only a higher one has, the higher one
    registers it (docs/architecture.md)."""
    reached = []
    for name, targets in EDGES.items():
        if _entry_point(name):
            continue
        room = _room(name)
        for target in sorted(targets):
            other = _room(target)
            if other == room:
                continue
            if room in NEVER and _within(target, NEVER[room]):
                reached.append(f"{name} -> {target} (never {NEVER[room]})")
            if room in ONLY:
                if not _within(target, ONLY[room]):
                    reached.append(f"{name} -> {target} (only {ONLY[room]})")
            elif _entry_point(target) or FLOOR[other] > FLOOR[room]:
                reached.append(f"{name} -> {target} (floor {FLOOR[room]} -> {FLOOR.get(other)})")
    assert not reached


def test_no_two_rooms_import_each_other():
    rooms: dict[str, set[str]] = defaultdict(set)
    for name, targets in EDGES.items():
        rooms[_room(name)] |= {_room(t) for t in targets if _room(t) != _room(name)}
    assert not _cycles(rooms)


# --- circles inside a room ----------------------------------------------------------------------


def _room_edges(room: str, without: str | None = None) -> dict[str, set[str]]:
    return {name: {t for t in targets if _room(t) == room and t != without} for name, targets in EDGES.items() if _room(name) == room and name != without}


def test_circles_inside_a_room_are_the_argued_ones():
    """Every import circle between a room's modules is listed in docs/house.toml with its
    reason, and every listed one still exists (a broken circle leaves the list)."""
    found = {tuple(c) for room in FLOOR for c in _cycles(_room_edges(room))}
    listed = {tuple(sorted(c["modules"])): c for c in HOUSE["circle"]}
    assert all(c["reason"].strip() for c in listed.values())
    for circle in listed.values():
        if "kick" in circle:  # what is left once the kick's imports are gone is listed too (or nothing)
            room = _room(circle["kick"])
            found |= {tuple(c) for c in _cycles({n: t & set(circle["modules"]) for n, t in _room_edges(room, circle["kick"]).items() if n in circle["modules"]})}
    assert sorted(found - set(listed)) == [], "a new circle: break it (move the shared piece to a module both need) or argue it in docs/house.toml"
    assert sorted(set(listed) - found) == [], "a listed circle is gone: take it out of docs/house.toml"


@pytest.mark.parametrize("circle", [c for c in HOUSE["circle"] if "kick" in c], ids=lambda c: c["kick"])
def test_a_kick_circle_goes_through_the_kick_alone(circle):
    """``kick``: the circle's imports of tasks.py are made at call time, in the function that
    starts the task, never at module level."""
    top_level = []
    for name in circle["modules"]:
        if name == circle["kick"] or name not in MODULES:
            continue
        for node in ast.parse(MODULES[name].read_text()).body:
            if isinstance(node, ast.ImportFrom) and _imports_kick(name, node, circle["kick"]):
                top_level.append(name)
    assert not top_level


def _imports_kick(name: str, node: ast.ImportFrom, kick: str) -> bool:
    package = name.split(".") if MODULES[name].name == "__init__.py" else name.split(".")[:-1]
    base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) if node.level else node.module
    return base == kick or any(f"{base}.{alias.name}" == kick for alias in node.names)


# --- foreign keys -------------------------------------------------------------------------------


def test_no_foreign_key_points_up_a_floor():
    from django.apps import apps

    def room(model) -> str | None:
        name = apps.get_app_config(model._meta.app_label).name.split(".")[0]
        return name if name in FLOOR else None  # Django's and third-party apps stand outside the house

    up = set()
    for model in apps.get_models():
        for field in model._meta.get_fields():
            if not (field.concrete and (field.many_to_one or field.one_to_one or field.many_to_many)) or field.related_model is None:
                continue
            low, high = room(model), room(field.related_model)
            if low and high and FLOOR[high] > FLOOR[low]:
                up.add(f"{model._meta.label}.{field.name}")
    listed = {entry["field"] for entry in HOUSE["foreign_key_up"]}
    assert sorted(up - listed) == [], "a foreign key up a floor: point it down, or argue it in docs/house.toml"
    assert sorted(listed - up) == [], "a listed foreign key no longer points up: take it out of docs/house.toml"


# --- where tests live, and that they run --------------------------------------------------------


def _test_files() -> list[pathlib.Path]:
    skip = {".venv", "node_modules", ".git", "var", "build"}
    return sorted(p for p in ROOT.rglob("test_*.py") if not set(p.relative_to(ROOT).parts) & skip and not p.relative_to(ROOT).parts[0].endswith(".egg-info"))


def _testpaths() -> list[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / "pytest.ini")
    return config["pytest"]["testpaths"].split()


def test_every_test_file_is_collected():
    """`make test` runs pytest on pytest.ini's testpaths, narrowed by no path of its own, so a
    test file outside them is a test no run collects."""
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe and "-m pytest" in recipe.group(1)
    pytest_args = recipe.group(1).split("-m pytest", 1)[1].split()
    assert not [arg for arg in pytest_args if (ROOT / arg).exists()], "make test names paths: testpaths would not be what runs"
    paths = _testpaths()
    assert not [p for p in paths if not (ROOT / p).is_dir()]
    missed = [str(p.relative_to(ROOT)) for p in _test_files() if p.relative_to(ROOT).parts[0] not in paths]
    assert not missed


@pytest.mark.parametrize("package", HOUSE["package"], ids=lambda p: p["room"])
def test_a_packages_tests_live_with_it_and_run(package):
    room = package["room"]
    home = ROOT / room / "tests"
    assert (home / "__init__.py").exists() and list(home.glob("test_*.py")), f"{room}/tests holds no tests"
    assert room in _testpaths(), f"{room}/ is not in pytest.ini's testpaths: its tests never run"
    own_modules = {name.split(".")[-1] for name in MODULES if _room(name) == room}
    elsewhere_modules = {name.split(".")[-1] for name in MODULES if _room(name) != room}
    only_here = own_modules - elsewhere_modules - {room}
    elsewhere = {entry["file"] for entry in HOUSE["test_elsewhere"]}
    strays = []
    for path in _test_files():
        relative = path.relative_to(ROOT)
        if relative.parts[0] == room or str(relative) in elsewhere:
            continue
        if any(path.name.startswith(prefix) for prefix in package["names"]) or path.stem.removeprefix("test_") in only_here:
            strays.append(str(relative))
    assert not strays, f"tests of {room}/ outside {room}/tests: move them there (git mv), or argue them in docs/house.toml"


def test_tests_argued_elsewhere_exist():
    assert not [e["file"] for e in HOUSE["test_elsewhere"] if not (ROOT / e["file"]).exists() or not e["reason"].strip()]


# --- the house style ----------------------------------------------------------------------------


def test_the_house_style_is_a_page_of_the_repository():
    """Comments cite docs/style.md; nothing cites a style file a clone does not have."""
    assert (ROOT / "docs" / "style.md").exists()
    outside = "STYLE" + ".md"
    cited = sorted(str(p.relative_to(ROOT)) for p in [*MODULES.values(), *_test_files(), *(ROOT / "docs").glob("*.md")] if outside in p.read_text())
    assert not cited


def test_no_product_file_is_over_500_lines():
    long = sorted(f"{path.relative_to(ROOT)}: {n}" for path in MODULES.values() if (n := len(path.read_text().splitlines())) > 500)
    assert not long


# --- the spec at the door -----------------------------------------------------------------------

_CAMEL = re.compile(r"^[a-z]+[A-Z][A-Za-z0-9]*$")


def _spec_spellings(path: pathlib.Path) -> list[str]:
    """Where ``path``'s code reads a camelCase key (``data["jobDefinition"]``, ``.get(...)``,
    ``.pop(...)``) or spells ``itemData`` outside a docstring."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") and node.args \
                and isinstance(node.args[0], ast.Constant):
            key = node.args[0].value
        if isinstance(key, str) and _CAMEL.match(key):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: reads {key!r}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "itemData" in node.value and id(node) not in docstrings:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: spells itemData")
    return found


def test_the_spec_stops_at_the_door():
    listed = HOUSE["spec_at_the_door"]["modules"]
    assert not [name for name in listed if not any(m == name or m.startswith(f"{name}.") for m in MODULES)], "a listed module is gone"
    spelled = [hit for name, path in sorted(MODULES.items()) if any(name == m or name.startswith(f"{m}.") for m in listed) for hit in _spec_spellings(path)]
    assert not spelled


def test_the_spec_check_sees_a_spelling(tmp_path):
    sample = ROOT / "tests" / "support" / "_spec_spelling_sample.py"
    sample.write_text('"""itemData in a docstring is prose."""\nx = {}\nx["jobDefinition"]\nx.get("feePayer")\nfield = "itemData.a"\nx["status"]\n')
    try:
        assert [hit.split(": ", 1)[1] for hit in _spec_spellings(sample)] == ["reads 'jobDefinition'", "reads 'feePayer'", "spells itemData"]
    finally:
        sample.unlink()


if __name__ == "__main__":
    # Rewrites docs/architecture.md's floor table from docs/house.toml.
    text = MAP.read_text()
    before, rest = text.split(TABLE_START, 1)
    MAP.write_text(f"{before}{TABLE_START}\n{floor_table()}\n{TABLE_END}{rest.split(TABLE_END, 1)[1]}")
