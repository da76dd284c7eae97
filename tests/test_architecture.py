"""docs/architecture.md is true of the code: the statements a test can check.

- the layers: ``derivations`` imports neither NumPy/SciPy, ``random`` nor
  ``numerics``/``verify``; ``numerics`` imports neither SymPy nor ``derivations``/``verify``
  (at module level or inside functions); of third-party packages ``derivations`` imports
  only SymPy and mpmath, ``numerics`` only NumPy, SciPy and mpmath at load time
  (python-flint, POT, numba, threadpoolctl inside functions);
- verify's floors: the table under ``<!-- floors -->`` in docs/architecture.md places every
  room of ``verify`` on one floor, and every import (module level or inside a function)
  goes to the same floor or below;
- no private reach-in: a private module or name (leading underscore) is imported only from
  inside the package folder that holds it (or a folder below it);
- no experiment imports ``verify.claims``, and no claim module imports another claim
  module (what claims share lives in the kit, ``verify.studies`` or ``numerics``);
- no import cycle among the modules of derivations, numerics and verify through the
  imports that run when a module is loaded (module level, outside ``if TYPE_CHECKING``);
- ``python -m verify list`` loads neither the report nor Dask nor matplotlib;
- the house tables name every module of derivations, the claims, the formulas, the
  experiments and every public module of numerics, and only modules that exist;
- the documented lists agree with the code: the algorithm formulas, the formulas without
  ``.mpmath``, the kit's names, the claims not yet in the one claim shape;
- a cached function of ``verify`` that reads a derived result directly takes the
  generation;
- claims and studies draw randomness only from ``ctx.rng`` (no ``np.random.*`` call, no
  ``random``).
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
    forbidden = {"derivations": ("numpy", "scipy", "random", "numerics", "verify"),
                 "numerics": ("sympy", "derivations", "verify")}
    bad = [f"{name}:{line} imports {mod}"
           for name, imps in IMPORTS.items() for mod, _, line in imps
           if name.split(".")[0] in forbidden
           and mod.split(".")[0] in forbidden[name.split(".")[0]]]
    assert not bad, "\n".join(bad)


def _load_time_imports(name: str, path: Path) -> list[tuple[str, str | None, int]]:
    """The imports of :func:`_imports` that run when the module is loaded: not inside a
    function, nor under ``if TYPE_CHECKING``."""
    lines: set[int] = set()
    todo = list(ast.parse(path.read_text(), str(path)).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.add(node.lineno)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo += node.orelse
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo += [c for c in ast.iter_child_nodes(node)
                     if isinstance(c, (ast.stmt, ast.excepthandler))]
    return [imp for imp in _imports(name, path) if imp[2] in lines]


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


#: the third-party packages each layer may import (docs/architecture.md, "Three layers"):
#: at load time, and inside functions (the optional ones are only imported there)
LOAD_TIME_PACKAGES = {"derivations": {"sympy", "mpmath"}, "numerics": {"numpy", "scipy", "mpmath"}}
OPTIONAL_PACKAGES = {"derivations": set(), "numerics": {"flint", "ot", "numba", "threadpoolctl"}}


def test_layers_import_only_their_packages() -> None:
    import sys
    bad = []
    for name, path in SOURCES.items():
        layer = name.split(".")[0]
        if layer not in LOAD_TIME_PACKAGES:
            continue
        at_load = {imp[2] for imp in _load_time_imports(name, path)}
        for mod, _, line in _imports(name, path):
            top = mod.split(".")[0]
            if top in sys.stdlib_module_names or top in LAYERS or top in ("", "__future__"):
                continue
            allowed = LOAD_TIME_PACKAGES[layer] | (set() if line in at_load
                                                  else OPTIONAL_PACKAGES[layer])
            if top not in allowed:
                bad.append(f"{name}:{line} imports {mod}" + (" at load time" if line in at_load else ""))
    assert not bad, "\n".join(bad)


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
KNOWN_LONG: dict[str, int] = {}


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


# --------------------------------------------------------------------------- the doc's lists
def _doc_table(header: str) -> list[list[str]]:
    """The cells of the table of docs/architecture.md whose header row starts with ``header``."""
    text = DOC.read_text()
    start = text.index(header)
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _doc_paragraph(marker: str) -> str:
    """The paragraph of docs/architecture.md that contains ``marker``."""
    paras = [" ".join(p.split()) for p in DOC.read_text().split("\n\n")]
    paras = [p for p in paras if marker in p]
    assert len(paras) == 1, f"docs/architecture.md: {len(paras)} paragraphs contain {marker!r}"
    return paras[0]


def _names(text: str) -> set[str]:
    return set(re.findall(r"`([\w.]+)`", text))


def test_house_tables_name_every_module() -> None:
    folders = ("derivations", "verify.claims", "verify.formulas", "verify.experiments")
    listed = {f: set() for f in folders + ("numerics",)}
    for row in _doc_table("| paper section (claims) |"):
        for folder, cell in zip(folders, row[1:]):
            listed[folder] |= _names(cell)
    for row in _doc_table("| module | what it is | used by |"):
        listed["numerics"] |= _names(row[0])
    bad = []
    for folder, names in listed.items():
        actual = {n.rpartition(".")[2] for n in SOURCES if n.rpartition(".")[0] == folder}
        public = {n for n in actual if not n.startswith("_") and n != "base"}
        bad += [f"{folder}.{n} is not in the table" for n in sorted(public - names)]
        bad += [f"{folder}.{n} is in the table but not a module" for n in sorted(names - actual)]
    assert not bad, "\n".join(bad)


def test_verify_list_loads_no_report_dask_or_matplotlib() -> None:
    import json
    import os
    import subprocess
    import sys
    code = ("import contextlib, io, json, runpy, sys\n"
            "sys.argv = ['verify', 'list']\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            "        runpy.run_module('verify', run_name='__main__')\n"
            "    except SystemExit:\n"
            "        pass\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300, check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    heavy = [m for m in loaded if m.split(".")[0] in ("dask", "distributed", "matplotlib")
             or m == "verify.report" or m.startswith("verify.report.")]
    assert "verify.claims" in loaded and not heavy, heavy


def test_algorithm_formulas_are_the_documented_ones() -> None:
    from verify import formulas
    doc = re.search(r"\(`formula\.algorithm` is true:(.*?)\)", DOC.read_text(), re.S)
    assert doc, "docs/architecture.md lost the list of algorithm formulas"
    actual = {n for n in formulas.__all__ if getattr(getattr(formulas, n), "algorithm", False)}
    assert _names(doc.group(1)) == actual


def test_formulas_without_mpmath_are_the_documented_ones() -> None:
    from verify import formulas
    from verify.formulas._base import DerivedFunction, VerifiedFormula
    doc = re.search(r"`\.mpmath\(\*args, dps=30\)` \(all but (.*?)\)", DOC.read_text(), re.S)
    assert doc, "docs/architecture.md lost the list of formulas without .mpmath"
    made = {n: getattr(formulas, n) for n in formulas.__all__
            if isinstance(getattr(formulas, n), (DerivedFunction, VerifiedFormula))}
    assert all(hasattr(type(f), "expr") and hasattr(type(f), "latex") and f.claim
               for f in made.values())
    assert _names(doc.group(1)) == {n for n, f in made.items() if not hasattr(f, "mpmath")}


def test_kit_exports_the_documented_names() -> None:
    from verify import kit
    para = _doc_paragraph("A claim author, ours or a user's, writes against one public module")
    names = {n.split("(")[0] for n in re.findall(r"`(\w+)[`(]", para)} - {"verify"}
    assert names and names <= set(kit.__all__), sorted(names - set(kit.__all__))


def test_claims_not_yet_in_one_shape_are_the_documented_ones() -> None:
    from verify.claims import all_claims
    para = _doc_paragraph("Claims not yet moved to this shape")
    old, unsized = re.search(r"function \(([^)]*)\) or declare no sizes \(([^)]*)\)",
                             para).groups()
    ours = [c for c in all_claims() if "." not in c.id]
    assert set(re.findall(r"[WHM]\d\w", old)) == {c.id for c in ours if not c.declares_variants}
    assert set(re.findall(r"[WHM]\d\w", unsized)) == {c.id for c in ours if not c.sizes}


#: cached functions that read a derived result but are keyed without the generation: to fix
#: (docs/architecture.md names them)
KNOWN_UNKEYED: set[str] = set()
_READS_DERIVED = re.compile(r"\blambdified\(|\bderived_results\(|\.derivation\(\)|"
                            r"\bderived\.results\(|\bformulas\.\w")


def test_caches_of_derived_values_take_the_generation() -> None:
    """A cached function (``lru_cache``/``cache``) of verify whose body reads a derived
    result directly (``lambdified``, ``derived_results``, ``.derivation()``,
    ``verify.formulas``) takes a ``generation`` argument, so that a mutated derivation is a
    new cache entry (a read through a helper is not seen)."""
    bad, seen = [], set()
    for name, path in SOURCES.items():
        if not name.startswith("verify"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not any(
                    re.search(r"\bl?r?u?_?cache\b", ast.unparse(d)) for d in node.decorator_list):
                continue
            body = node.body[1:] if ast.get_docstring(node) else node.body
            if not _READS_DERIVED.search("\n".join(ast.unparse(b) for b in body)):
                continue
            key = f"{name}.{node.name}"
            if "generation" not in [a.arg for a in node.args.args + node.args.kwonlyargs]:
                seen.add(key)
                if key not in KNOWN_UNKEYED:
                    bad.append(f"{key}:{node.lineno} reads a derived result in a cache "
                               "without a generation argument")
    assert not bad, "\n".join(bad)
    assert not KNOWN_UNKEYED - seen, f"fixed at last, remove from KNOWN_UNKEYED: {KNOWN_UNKEYED - seen}"
    assert all(k.rpartition(".")[2] in DOC.read_text() for k in KNOWN_UNKEYED)


def test_claims_and_studies_draw_only_from_ctx_rng() -> None:
    bad = []
    for name, path in SOURCES.items():
        if not name.startswith(("verify.claims", "verify.studies")):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if re.search(r"\b(np|numpy)\.random\.(?!Generator\b)\w+|^\s*(import|from) random\b", code):
                bad.append(f"{name}:{i}: {line.strip()}")
    assert not bad, "randomness outside ctx.rng:\n" + "\n".join(bad)
