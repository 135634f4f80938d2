"""The project's import graph, read from the source (AST), not by importing anything.

Every `import` and `from ... import` counts, wherever it is: at module level, inside a
function (a lazy import still runs, so it still couples the two modules) or under
`if TYPE_CHECKING:` (a layer that needs a higher layer's names to type itself is not a
layer). Imports by string (`importlib.import_module`) are not seen.

Edges, for a module `m`:
- `import a.b.c` is an edge to `a.b.c`. `from a.b import c` is an edge to `a.b.c` when that
  is a module (it is then the same as `import a.b.c`), else to `a.b` (`c` is a name defined
  in `a.b`'s `__init__`). Relative imports are resolved first.
- Python also executes the parent packages' `__init__` (`a`, `a.b`) on the way. `graph`
  leaves those implicit edges out (so a package whose `__init__` re-exports a submodule that
  imports a sibling `from a.b import sibling` is no cycle: `a.b` is already running then);
  `with_parents` adds the ones that can run code the importer did not start (parents that
  are not its own ancestors), and `reachable` follows them, since Python executes them.
Only the project's own modules (the files under `roots`) are kept; stdlib and third-party
imports are dropped.
"""

import ast
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = [REPO / "src" / "clusterfl", REPO / "pipeline"]  # top-level packages of the project

Graph = dict[str, set[str]]  # dotted module -> project modules it imports


def _modules(roots: Iterable[Path]) -> dict[str, Path]:
    """Dotted name -> file, for every .py file under each root package."""
    found: dict[str, Path] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def module_path(name: str, roots: Iterable[Path] = ROOTS) -> Path:
    """The file that defines module `name` (a package's `__init__.py`)."""
    return _modules(roots)[name]


def _package(name: str, path: Path) -> str:
    """The package a relative import in module `name` starts from."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules that module `name` (file `path`) imports explicitly."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # `from ..x import y`: climb level-1 packages up from our own
                anchor = _package(name, path).split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            subs = {f"{base}.{alias.name}" for alias in node.names} & known
            out |= subs
            if len(subs) < len(node.names):  # a name from `base` itself: its `__init__`
                out.add(base)
    return out & known


def graph(roots: Iterable[Path] = ROOTS) -> Graph:
    """Every project module -> the project modules it imports explicitly."""
    modules = _modules(roots)
    known = set(modules)
    return {name: _imported(name, path, known) for name, path in modules.items()}


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def with_parents(g: Graph) -> Graph:
    """`g` plus the implicit edges: importing `a.b.c` first runs `a` and `a.b`, except the
    importer's own ancestors (already running when it is)."""
    out: Graph = {}
    for name, targets in g.items():
        mine = {*_parents(name), name}
        out[name] = targets | {p for t in targets for p in _parents(t) if p in g} - mine
    return out


def reachable(g: Graph, start: str) -> set[str]:
    """Every module that importing `start` executes, `start` included: its imports,
    transitively, and the parent packages of each (Python runs their `__init__` first)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen or name not in g:
            continue
        seen.add(name)
        todo += [*g[name], *_parents(name)]
    return seen


def cycles(g: Graph) -> list[list[str]]:
    """The import cycles: each strongly connected component of more than one module, or a
    module that imports itself, as a sorted list; components sorted too (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # recursion depth <= number of modules (a few hundred)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in g.get(v, ()):
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
            if len(component) > 1 or v in g.get(v, ()):
                found.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(found)


def cycle_path(g: Graph, component: list[str]) -> list[str]:
    """One concrete loop through a cycle's first module, for a readable message:
    [a, b, ..., a], each importing the next (breadth-first, so a shortest one)."""
    start, members = component[0], set(component)
    back: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(g[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(back[path[-1]])
                    return [*reversed(path), start]
                if w not in back:
                    back[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]
