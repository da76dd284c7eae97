"""docs/architecture.md is true of the code: the statements a test can check.

- the layers: ``derivations`` imports neither NumPy/SciPy nor ``numerics``/``verify``;
  ``numerics`` imports neither SymPy nor ``derivations``/``verify`` (at module level or
  inside functions);
- verify's floors: the table under ``<!-- floors -->`` in docs/architecture.md places every
  room of ``verify`` on one floor, and every import (module level or inside a function)
  goes to the same floor or below;
- no private reach-in: a private module or name (leading underscore) is imported only from
  inside the package folder that holds it (or a folder below it);
- no experiment imports ``verify.claims``, and no claim module imports another claim
  module (what claims share lives in the kit, ``verify.studies`` or ``numerics``);
- no import cycle among the modules of derivations, numerics and verify through the
  imports that run when a module is loaded (module level, outside ``if TYPE_CHECKING``).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("derivations", "numerics", "verify")
DOC = ROOT / "docs" / "architecture.md"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for layer in LAYERS for p in sorted((ROOT / layer).rglob("*.py"))}


def _imports(name: str, path: Path) -> list[tuple[str, str | None, int]]:
    """(module, imported name or None, line) for every import in the file, anywhere."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out += [(mod, a.name, node.lineno) for a in node.names]
    return out


SOURCES = _sources()
IMPORTS = {name: _imports(name, path) for name, path in SOURCES.items()}


def _targets(mod: str, alias: str | None) -> list[str]:
    """The project modules an import reaches: ``from verify import derived`` reaches
    ``verify.derived`` when that is a module, else ``verify``."""
    if alias and f"{mod}.{alias}" in SOURCES:
        return [f"{mod}.{alias}"]
    return [mod] if mod.split(".")[0] in LAYERS else []


def test_layers_point_one_way() -> None:
    forbidden = {"derivations": ("numpy", "scipy", "numerics", "verify"),
                 "numerics": ("sympy", "derivations", "verify")}
    bad = [f"{name}:{line} imports {mod}"
           for name, imps in IMPORTS.items() for mod, _, line in imps
           if name.split(".")[0] in forbidden
           and mod.split(".")[0] in forbidden[name.split(".")[0]]]
    assert not bad, "\n".join(bad)


def _load_time_imports(name: str, path: Path) -> list[tuple[str, str | None, int]]:
    """The imports of :func:`_imports` that run when the module is loaded: not inside a
    function, nor under ``if TYPE_CHECKING``."""
    skip: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        typing_only = (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or typing_only:
            body = node.body if typing_only else [node]
            skip |= {n.lineno for b in body for n in ast.walk(b)
                     if isinstance(n, (ast.Import, ast.ImportFrom))}
    return [imp for imp in _imports(name, path) if imp[2] not in skip]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while not comp or comp[-1] != v:
                    comp.append(stack.pop())
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_cycles_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_at_load_time() -> None:
    graph = {name: {t for mod, alias, _ in _load_time_imports(name, path)
                    for t in _targets(mod, alias) if t in SOURCES and t != name}
             for name, path in SOURCES.items()}
    cycles = _cycles(graph)
    assert not cycles, ("modules importing each other in a cycle (move what they share "
                        "into a module below them):\n" + "\n".join(map(", ".join, cycles)))


def _floors() -> dict[str, int]:
    text = DOC.read_text()
    m = re.search(r"<!-- floors -->\n(.*?)\n\n", text, re.S)
    assert m, "docs/architecture.md lost its <!-- floors --> table"
    floors: dict[str, int] = {}
    for row in m.group(1).splitlines()[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        level = int(cells[0])
        for room in re.findall(r"`([\w.]+)`", cells[1]):
            assert room not in floors, f"{room} is on two floors"
            floors[room] = level
    return floors


def _room(name: str) -> str | None:
    """The room of a verify module: ``verify.claims.hajjar`` -> ``claims``."""
    parts = name.split(".")
    if parts[0] != "verify":
        return None
    return "verify" if len(parts) == 1 else parts[1]


def test_every_room_is_on_a_floor() -> None:
    floors = _floors()
    rooms = {_room(n) for n in SOURCES if _room(n)}
    assert rooms == set(floors), (f"rooms missing from the floors table: "
                                  f"{sorted(rooms - set(floors))}; listed but absent: "
                                  f"{sorted(set(floors) - rooms)}")


def test_imports_go_to_the_same_floor_or_below() -> None:
    floors = _floors()
    bad = []
    for name, imps in IMPORTS.items():
        src = _room(name)
        if src is None:
            continue
        for mod, alias, line in imps:
            for target in _targets(mod, alias):
                dst = _room(target)
                if dst is not None and dst != src and floors[dst] > floors[src]:
                    bad.append(f"{name}:{line} ({src}, floor {floors[src]}) imports {target} "
                               f"({dst}, floor {floors[dst]})")
    assert not bad, "\n".join(bad)


def _private_home(target: str, alias: str | None) -> str | None:
    """The package folder that holds a private module or name, or None if public."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    if alias and alias.startswith("_") and not alias.startswith("__"):
        path = SOURCES.get(target)
        if path is not None and path.name == "__init__.py":
            return target
        return target.rpartition(".")[0]
    return None


def test_no_private_reach_in() -> None:
    bad = []
    for name, imps in IMPORTS.items():
        folder = name if SOURCES[name].name == "__init__.py" else name.rpartition(".")[0]
        for mod, alias, line in imps:
            if mod.split(".")[0] not in LAYERS:
                continue
            home = _private_home(mod, alias)
            if home is None and alias and f"{mod}.{alias}" in SOURCES:
                home = _private_home(f"{mod}.{alias}", None)
            if home is not None and not (folder == home or folder.startswith(home + ".")):
                bad.append(f"{name}:{line} imports the private "
                           f"{mod + ('.' + alias if alias else '')} from outside {home or 'the root'}")
    assert not bad, "\n".join(bad)


def test_experiments_and_claims_keep_to_their_rooms() -> None:
    bad = []
    for name, imps in IMPORTS.items():
        for mod, alias, line in imps:
            targets = _targets(mod, alias) or [mod]
            for target in targets:
                if name.startswith("verify.experiments") and target.startswith("verify.claims"):
                    bad.append(f"{name}:{line} (an experiment) imports {target}")
                if (name.startswith("verify.claims.") and target.startswith("verify.claims.")
                        and target != name and not target.rpartition(".")[2].startswith("_")):
                    bad.append(f"{name}:{line} (a claim module) imports the claim module {target}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", sorted(n for n in SOURCES if not n.startswith("tests")))
def test_module_size(name: str) -> None:
    lines = SOURCES[name].read_text().count("\n")
    assert lines <= 800, f"{name} has {lines} lines (> 800): split it by topic"


#: functions over 80 lines that are still to be split by mathematical step, with their
#: length when listed: the test fails when one grows, when one is split (remove it here),
#: and for any other function over 80 lines
KNOWN_LONG = {
    "numerics.filippov._integrate": 183,
    "verify.claims.williams_kernels._check_w3d": 102,
    "verify.claims.williams_kernels_finite_width._check_w3f": 112,
}


def test_function_size() -> None:
    """No function over 80 lines, unless a one-line reason stands right above it
    (a comment starting with ``# long:``) or it is listed in KNOWN_LONG at no more than
    its listed length."""
    bad, seen = [], set()
    for name, path in SOURCES.items():
        src = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(src))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                n = node.end_lineno - node.lineno + 1
                key = f"{name}.{node.name}"
                if n <= 80 or src[first - 2].strip().startswith("# long:"):
                    continue
                seen.add(key)
                if n > KNOWN_LONG.get(key, 80):
                    bad.append(f"{key}: {n} lines")
    stale = sorted(set(KNOWN_LONG) - seen)
    assert not bad, "\n".join(bad)
    assert not stale, f"split at last, remove from KNOWN_LONG: {stale}"
