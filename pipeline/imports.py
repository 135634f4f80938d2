"""The project's import graph, read from the source (AST): which project modules each module
imports, at module level and inside functions. `clusterfl render` derives a stage's DVC code
deps from it (what the stage's process can import), and the tests use it to prove there is
no import cycle and that training never imports report code.

A module's edges are its own `import` statements (those under `if TYPE_CHECKING:`, which
never run, are kept apart in `typing`, for `cycles` to count on request): `from pkg import
name` is an edge to
`pkg.name` where that is a submodule, else to `pkg`. Importing `a.b.c` also runs
`a/__init__` and `a/b/__init__`: `closure` adds those parents, `cycles` does not (a package
that imports its own submodules is how a registry fills, not a cycle).
"""

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("src/clusterfl", "pipeline")  # the project's code, from the repository root


@dataclass
class Module:
    name: str
    path: Path
    top: set[str] = field(default_factory=set)  # imported when the module is imported
    lazy: set[str] = field(default_factory=set)  # imported inside a function body
    typing: set[str] = field(default_factory=set)  # under `if TYPE_CHECKING:` (never run)


def _dotted(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, *([target] if target else [])])


def _type_checking_only(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): imports for the type checker only."""
    if not isinstance(node, ast.If) or node.orelse:
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _edges(tree: ast.AST, module: Module, known: set[str]) -> None:
    is_package = module.path.name == "__init__.py"

    def visit(node: ast.AST, lazy: bool, typing: bool = False) -> None:
        for child in ast.iter_child_nodes(node):
            # never runs: no edge for DVC deps, nor for `cycles` unless asked
            checker = typing or _type_checking_only(child)
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef
                                       | ast.Lambda)
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = _absolute(module.name, is_package, child.level, child.module)
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                         for alias in child.names]
            for name in names:
                while name and name not in known:  # `import a.b.c`: the deepest module
                    name = name.rpartition(".")[0]
                if name and name != module.name:
                    (module.typing if checker else module.lazy if lazy else module.top).add(name)
            visit(child, inner, checker)

    visit(tree, False)


def graph(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Module]:
    """Every project module under `packages` (paths from `root`) with its imports."""
    modules: dict[str, Module] = {}
    for package in packages:
        base = (root / package).parent
        for path in sorted((root / package).rglob("*.py")):
            name = _dotted(path, base)
            modules[name] = Module(name, path)
    known = set(modules)
    for module in modules.values():
        _edges(ast.parse(module.path.read_text(), str(module.path)), module, known)
    return modules


def function_imports(modules: dict[str, Module], module: str, function: str) -> set[str]:
    """The project modules that function `function` of `module` imports in its body (a CLI
    command's stage, imported only when that command runs)."""
    known = set(modules)
    tree = ast.parse(modules[module].path.read_text())
    body = next((node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                 and node.name == function), None)
    if body is None:
        raise KeyError(f"{module} has no function {function!r}")
    scratch = Module(module, modules[module].path)
    _edges(ast.Module(body=body.body, type_ignores=[]), scratch, known)
    return scratch.top | scratch.lazy


def closure(modules: dict[str, Module], starts: Iterable[str], lazy: bool = True) -> set[str]:
    """The modules that importing `starts` (and, with `lazy`, calling their functions) can
    run, parents' `__init__` included."""
    seen: set[str] = set()
    todo = list(starts)
    while todo:
        name = todo.pop()
        if name in seen or name not in modules:
            continue
        seen.add(name)
        parent = name.rpartition(".")[0]
        todo += [parent] if parent else []
        todo += modules[name].top | (modules[name].lazy if lazy else set())
    return seen


def cycles(modules: dict[str, Module], type_checking: bool = False) -> list[list[str]]:
    """Import cycles (strongly connected components of more than one module), counting
    module-level and function-level imports alike, and with `type_checking` those under
    `if TYPE_CHECKING:` too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(name: str) -> None:  # Tarjan's algorithm
        index[name] = low[name] = len(index)
        stack.append(name)
        edges = modules[name].top | modules[name].lazy
        for other in sorted((edges | modules[name].typing) if type_checking else edges):
            if other not in index:
                connect(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == name:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(modules):
        if name not in index:
            connect(name)
    return found
