"""The layers stay layers: no import cycle in src/ or pipeline/, and the engine (the lowest
layer but `clusterfl.types`) never pulls in the loop, checkpoints, history, config or
evaluators. Read from the source (tests/import_graph.py), so lazy imports count too."""

from pathlib import Path

import pytest

from tests.import_graph import (
    Graph,
    cycle_path,
    cycles,
    graph,
    module_path,
    reachable,
    with_parents,
)

GRAPH = graph()
# Modules the engine must not execute: what builds on it (a package forbids its submodules).
ABOVE_ENGINE = ("clusterfl.loop", "clusterfl.checkpoints", "clusterfl.history",
                "clusterfl.config", "clusterfl.evaluators")


def _describe(g: Graph) -> str:
    """One line per cycle: a shortest loop through it, then all its modules."""
    return "\n".join(f"{len(c)} modules: {' -> '.join(cycle_path(g, c))}   (all: {c})"
                     for c in cycles(g))


@pytest.mark.parametrize("parents", [False, True], ids=["explicit", "with-parent-packages"])
def test_no_import_cycles(parents: bool) -> None:
    """`explicit`: the imports as written. `with-parent-packages`: also the package
    `__init__`s Python runs on the way (`import a.b.c` runs `a.b` first)."""
    g = with_parents(GRAPH) if parents else GRAPH
    found = cycles(g)
    assert not found, "import cycles:\n" + _describe(g)


def test_graph_reads_every_kind_of_import(tmp_path: Path) -> None:
    """On a made-up package: function-level, relative and `from pkg import submodule`
    imports, parent packages, a cycle and a self-import."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from pkg.a import f\n",
        "a.py": "import os\n\ndef f():\n    from .sub import b\n",
        "sub/__init__.py": "",
        "sub/b.py": "from pkg import c\nfrom .. import a\n",
        "c.py": "import pkg.sub.b\nfrom pkg import f\nimport pkg.c\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    g = graph([pkg])
    assert g == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.sub.b"}, "pkg.sub": set(),
                 "pkg.sub.b": {"pkg.a", "pkg.c"}, "pkg.c": {"pkg", "pkg.sub.b", "pkg.c"}}
    assert cycles(g) == [["pkg", "pkg.a", "pkg.c", "pkg.sub.b"]]
    assert cycle_path(g, cycles(g)[0]) == ["pkg", "pkg.a", "pkg.sub.b", "pkg.c", "pkg"]
    assert with_parents(g)["pkg.a"] == {"pkg.sub", "pkg.sub.b"}
    assert reachable(g, "pkg.sub.b") == set(g)
    assert module_path("pkg.sub", [pkg]) == pkg / "sub" / "__init__.py"


def test_engine_stays_below_the_loop() -> None:
    """Every engine module, with all it imports, parent packages included."""
    engine = sorted(m for m in GRAPH if m == "clusterfl.engine" or
                    m.startswith("clusterfl.engine."))
    assert len(engine) > 5
    for start in engine:
        bad = sorted(m for m in reachable(GRAPH, start)
                     if any(m == a or m.startswith(a + ".") for a in ABOVE_ENGINE))
        assert not bad, f"{start} imports (transitively) {bad}"
