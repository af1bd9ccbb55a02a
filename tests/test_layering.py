"""The package's layering, read from the source with `ast` (nothing is imported):

- no import cycle between the modules of `generator`, counting every import: at module level,
  inside functions and under `if TYPE_CHECKING:` (a cycle hidden in a function is still one);
- only the surfaces (cli.py, __main__.py and the commands package) print or exit; every other
  module takes data and returns data;
- no library module imports a surface;
- the packages' imports point one way: surfaces → site → the engines (diagnosis, search) → core,
  the two engines not into each other; every package says in its docstring what it holds and
  what it may import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "generator"
SURFACES = ("generator.surfaces.cli", "generator.__main__", "generator.surfaces.commands")


def _name(path: Path) -> str:
    parts = ("generator", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in MODULES.items()}


def _is_surface(module: str) -> bool:
    return any(module == s or module.startswith(s + ".") for s in SURFACES)


def _imports(module: str, tree: ast.Module) -> dict[str, int]:
    """The package's modules that `module` imports anywhere in it → the first line that does."""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        while target and target not in MODULES:  # `from .x import name`: name is in x
            target = target.rpartition(".")[0]
        if target and target != module:
            found.setdefault(target, line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "generator":
                    add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "generator":
                source = node.module
            else:
                continue
            for alias in node.names:  # `from . import markdown`: a module; `from .x import y`: x
                add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source, node.lineno)
    return found


GRAPH = {module: _imports(module, tree) for module, tree in TREES.items()}


def _cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
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
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def _path(component: list[str]) -> str:
    """One cycle through a component, with the line of each import, for the failure message."""
    members = set(component)
    start = component[0]
    trail = [start]
    seen = {start}
    while True:
        here = trail[-1]
        nxt = next((w for w in sorted(GRAPH[here]) if w in members and (w == start or w not in seen)), None)
        if nxt is None or nxt == start:
            trail.append(start)
            break
        trail.append(nxt)
        seen.add(nxt)
    return " → ".join(f"{a} (line {GRAPH[a][b]})" for a, b in zip(trail, trail[1:])) + f" → {start}"


def test_the_parser_sees_the_package() -> None:
    assert {"generator", "generator.surfaces.cli", "generator.site.build", "generator.surfaces.commands", "generator.surfaces.commands.diagnose"} <= set(MODULES)
    assert "generator.core.catalog" in GRAPH["generator.site.build"]  # an import inside a function counts
    assert "generator.core.read" in GRAPH["generator.site.cache"]  # and one under TYPE_CHECKING
    assert "generator.site.markdown" in GRAPH["generator.site.pages"]  # `from . import markdown as md`


# Each room → the rooms its modules may import (its own included). `generator` itself is the map.
ROOMS = {
    "core": {"core"},
    "diagnosis": {"core", "diagnosis"},
    "search": {"core", "search"},
    "site": {"core", "diagnosis", "search", "site"},
    "surfaces": {"core", "diagnosis", "search", "site", "surfaces"},
}


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else None


def _against_the_grain(graph: dict[str, dict[str, int]]) -> list[str]:
    """Each import from one room into a room it may not import, with its line."""
    found = []
    for module, targets in sorted(graph.items()):
        room = _room(module)
        allowed = ROOMS[room] if room else {"surfaces"} if module == "generator.__main__" else set()
        for target, line in sorted(targets.items()):
            if _room(target) not in allowed:
                found.append(f"{module} (line {line}) imports {target}: {room or module} may import only {', '.join(sorted(allowed)) or 'nothing'}")
    return found


def test_every_module_lives_in_a_room_and_each_room_says_what_it_holds() -> None:
    homeless = sorted(m for m in MODULES if _room(m) is None and m not in ("generator", "generator.__main__"))
    assert not homeless, f"modules outside the rooms {sorted(ROOMS)}: {homeless}"
    for room in ROOMS:
        doc = ast.get_docstring(TREES[f"generator.{room}"])
        assert doc and "import" in doc.lower(), f"generator/{room}/__init__.py must say what it holds and what it may import"


def test_imports_point_one_way_surfaces_site_engines_core() -> None:
    wrong = _against_the_grain(GRAPH)
    assert not wrong, "\n".join(wrong)


def test_the_direction_check_catches_an_upward_or_sideways_import() -> None:
    graph = {
        "generator.core.schema": {"generator.diagnosis.matcher": 3},  # core → an engine
        "generator.search.query": {"generator.diagnosis.matcher": 4},  # one engine → the other
        "generator.site.pages": {"generator.search.files": 5, "generator.surfaces.cli": 6},  # fine, then upward
        "generator.surfaces.lsp": {"generator.site.build": 7},  # fine
    }
    assert [w.split(" (")[0] for w in _against_the_grain(graph)] == ["generator.core.schema", "generator.search.query", "generator.site.pages"]
    assert "generator.surfaces.cli" in _against_the_grain(graph)[2]


def test_no_import_cycles_counting_imports_inside_functions() -> None:
    cycles = _cycles()
    assert not cycles, "import cycles:\n" + "\n".join(_path(c) for c in cycles)


def test_library_modules_import_no_surface() -> None:
    upward = [f"{m} imports {t} (line {line})" for m, targets in GRAPH.items() if not _is_surface(m)
              for t, line in targets.items() if _is_surface(t)]
    assert not upward, "\n".join(upward)


def _exits_or_prints(tree: ast.Module) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ("print", "exit", "quit"):
                found.append((node.lineno, f"{f.id}()"))
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in (("sys", "exit"), ("os", "_exit")):
                found.append((node.lineno, f"{f.value.id}.{f.attr}()"))
        elif isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(exc, ast.Name) and exc.id == "SystemExit":
                found.append((node.lineno, "raise SystemExit"))
    return sorted(found)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not _is_surface(m)))
def test_library_modules_neither_print_nor_exit(module: str) -> None:
    found = _exits_or_prints(TREES[module])
    assert not found, f"{module} prints or exits (only the surfaces {', '.join(SURFACES)} may): " + ", ".join(
        f"line {line}: {what}" for line, what in found
    )


def test_the_checks_catch_what_they_look_for() -> None:
    tree = ast.parse("import sys\ndef f():\n    print('x')\n    sys.exit(1)\n    raise SystemExit(2)\n")
    assert [what for _, what in _exits_or_prints(tree)] == ["print()", "sys.exit()", "raise SystemExit"]
    assert _is_surface("generator.surfaces.commands.search") and not _is_surface("generator.surfaces.commandsx") and not _is_surface("generator.search.query")
