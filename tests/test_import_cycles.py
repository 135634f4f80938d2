"""The layers stay layers: no import cycle in src/ or pipeline/ (`if TYPE_CHECKING:` imports
included), and the engine (the lowest layer but `clusterfl.core.types`) never pulls in the loop,
checkpoints, history, config or evaluators. Read from the source by `pipeline.imports` (what
`clusterfl render` derives code deps from), so imports inside functions count too."""

from pathlib import Path

from pipeline.imports import closure, cycles, function_imports, graph

ROOT = Path(__file__).resolve().parents[1]
GRAPH = graph(ROOT)
# Modules the engine must not execute: what builds on it (a package forbids its submodules).
ABOVE_ENGINE = ("clusterfl.training.loop", "clusterfl.run.checkpoints",
                "clusterfl.training.history", "clusterfl.run.config", "clusterfl.evaluators")


def test_no_import_cycles() -> None:
    """Imports under `if TYPE_CHECKING:` count too: the layers point one way also for what a
    type checker reads."""
    found = cycles(GRAPH, type_checking=True)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_graph_reads_every_kind_of_import(tmp_path: Path) -> None:
    """On a made-up package: function-level, relative and `from pkg import submodule`
    imports, a module importing itself, and a cycle through a function-level import."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from pkg.a import f\n",
        "a.py": "import os\n\ndef f():\n    from .sub import b\n",
        "sub/__init__.py": "import typing\n\nif typing.TYPE_CHECKING:\n    import pkg.c\n",
        "sub/b.py": "from pkg import c\nfrom .. import a\n",
        "c.py": "import pkg.sub.b\nfrom pkg import f\nimport pkg.c\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    g = graph(tmp_path, ["pkg"])
    # sub's `if TYPE_CHECKING:` import never runs: no edge (else sub <-> c would be a cycle)
    assert {n: (m.top, m.lazy) for n, m in g.items()} == {
        "pkg": ({"pkg.a"}, set()), "pkg.a": (set(), {"pkg.sub.b"}), "pkg.sub": (set(), set()),
        "pkg.sub.b": ({"pkg.a", "pkg.c"}, set()), "pkg.c": ({"pkg", "pkg.sub.b"}, set())}
    assert cycles(g) == [["pkg", "pkg.a", "pkg.c", "pkg.sub.b"]]
    assert closure(g, ["pkg.c"], lazy=False) == {"pkg", "pkg.a", "pkg.c", "pkg.sub",
                                                 "pkg.sub.b"}
    assert closure(g, ["pkg.a"], lazy=False) == {"pkg", "pkg.a"}  # f's import never ran
    assert function_imports(g, "pkg.a", "f") == {"pkg.sub.b"}


def test_type_checking_imports_count_for_cycles_on_request(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                              "    from pkg.b import B\n")
    (pkg / "b.py").write_text("import pkg.a\n")
    g = graph(tmp_path, ["pkg"])
    assert (g["pkg.a"].top, g["pkg.a"].typing) == (set(), {"pkg.b"})
    assert cycles(g) == []
    assert cycles(g, type_checking=True) == [["pkg.a", "pkg.b"]]


def test_engine_stays_below_the_loop() -> None:
    """Every engine module, with all it imports (inside functions too), parents included."""
    engine = sorted(m for m in GRAPH if m == "clusterfl.engine" or
                    m.startswith("clusterfl.engine."))
    assert len(engine) > 5
    for start in engine:
        bad = sorted(m for m in closure(GRAPH, [start])
                     if any(m == a or m.startswith(a + ".") for a in ABOVE_ENGINE))
        assert not bad, f"{start} imports (transitively) {bad}"
