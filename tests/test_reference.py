"""Reference results (`pipeline.reference`): a paper's histories packed byte for byte in one
tar.xz and the same bytes on every export, its report rendered from them (a changed table is
found stale), `clusterfl compare` reading the packed tree; and every reference committed under
reference/ is current: its report equals a fresh rendering of its histories."""

import json
import lzma
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clusterfl.core.errors import UserError
from clusterfl.papers.benchmark.report import sizes
from clusterfl.run.config import load_params
from pipeline import reference
from pipeline.cli import app
from tests.workspace import cli_in_process, grid

ROOT = Path(__file__).resolve().parents[1]
CELLS = [("p4_fig1_n100", "pfl_tc"), ("p4_fig1_n100", "oracle")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A workspace whose suite trained two P4 cells (2 seeds, 3 rounds)."""
    ws = tmp_path_factory.mktemp("ref")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(seeds=[0, 1], training={"rounds": 3}, grid=grid(CELLS))
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    cli_in_process(ws, "download", "p4_threshold_n100")
    cli_in_process(ws, "partition", "p4_threshold_n100")
    for exp, alg in CELLS:
        cli_in_process(ws, "train", exp, alg, "--no-track")
    return ws


def test_export_packs_every_history_and_renders_the_papers_report(trained, tmp_path):
    ws = trained
    params = load_params(ws / "params.yaml")
    target = reference.export(params, "p4", ws)
    assert target == ws / "reference/default/p4"
    with lzma.open(target / "histories/histories.tar.xz") as raw, \
            tarfile.open(fileobj=raw) as tar:
        members = tar.getmembers()
        assert [m.name for m in members] == sorted(
            f"{e}/{a}/seed{s}/history.json" for e, a in CELLS for s in (0, 1))
        assert {(m.mtime, m.uid, m.gid, m.uname, m.mode) for m in members} == {
            (0, 0, 0, "", 0o644)}  # nothing of this machine or this moment
        for m in members:
            plain = ws / "results/default" / m.name
            assert tar.extractfile(m).read() == plain.read_bytes()
    provenance = json.loads((target / "provenance.json").read_text())
    assert provenance["paper"] == "p4" and set(provenance["git_commit"]) == {
        f"{e}/{a}" for e, a in CELLS}
    assert "p4_fig1_n100/pfl_tc" in (target / "costs.md").read_text()  # timings from logs/
    report = target / "report"
    assert (report / "tables/p4.md").exists() and (report / "index.html").exists()
    assert not (report / "costs.md").exists()  # wall-clock: beside the report, not in it
    # the sizes a report reads where the data is absent (a fresh clone): those of the files
    name = params.experiment(CELLS[0][0]).partition
    data = ws / "data/default"
    dataset = data / "raw" / params.partition(name)["dataset"] / "dataset.npz"
    for seed in (0, 1):
        from_summary = sizes.read_sizes(target / "partitions", name, seed, tmp_path / "none")
        assert from_summary == sizes.from_files(data / f"partitions/{name}/seed{seed}.npz",
                                                sizes.dataset_shape(dataset))
        assert from_summary.num_clients > 1  # (a regression: num_classes 0)
    first = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    reference.export(params, "p4", ws)  # the same results: the same bytes, PNGs included
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == first
    assert reference.stale_files(params, "p4", target) == []
    table = report / "tables/p4.md"
    table.write_text(table.read_text() + "\nedited by hand\n")
    (report / "tables/extra.csv").write_text("x\n")
    assert reference.stale_files(params, "p4", target) == ["tables/extra.csv", "tables/p4.md"]


def test_compare_reads_a_packed_reference(trained, tmp_path):
    ws = trained
    target = reference.export(load_params(ws / "params.yaml"), "p4", ws)
    same = CliRunner().invoke(app, ["compare", str(target / "histories"),
                                    str(ws / "results/default")])
    assert same.exit_code == 0, same.output
    assert "4 of 4 histories in both trees equal" in same.output
    changed = tmp_path / "changed"
    shutil.copytree(ws / "results/default", changed)
    history = changed / "p4_fig1_n100/oracle/seed1/history.json"
    data = json.loads(history.read_text())
    data.pop("checksum")
    data["records"][-1][data["primary"]] += 1e-9
    history.write_text(json.dumps(data))
    differ = CliRunner().invoke(app, ["compare", str(target / "histories"), str(changed)])
    assert differ.exit_code == 1 and "3 of 4 histories in both trees equal" in differ.output


def test_export_without_results_names_the_missing_cells_and_writes_nothing(tmp_path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(grid=grid(CELLS))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    with pytest.raises(UserError, match=r"no results for 2 cells of paper 'p4' "
                                        r"\(p4_fig1_n100/pfl_tc, p4_fig1_n100/oracle\)"):
        reference.export(load_params(tmp_path / "params.yaml"), "p4", tmp_path)
    assert not (tmp_path / "reference").exists()


def test_sizes_without_data_or_summary_name_the_partition_stage(tmp_path):
    with pytest.raises(UserError, match=r"seed0\.npz: no partition file .* seed0\.sizes\.json"):
        sizes.read_sizes(tmp_path, "bm_iid", 0, tmp_path / "dataset.npz")
    (tmp_path / "bm_iid").mkdir()
    (tmp_path / "bm_iid/seed0.sizes.json").write_text('{"num_clients": 3}')
    with pytest.raises(UserError, match=r"seed0\.sizes\.json: not a sizes summary"):
        sizes.read_sizes(tmp_path, "bm_iid", 0, tmp_path / "dataset.npz")


def test_every_committed_reference_report_is_current():
    """A committed reference's report equals a fresh rendering of its histories (in a new
    interpreter, as a user runs it: in this process other test files' registrations stay
    behind); when report code or a references.yaml changes, `python -m pipeline.reference
    --render` brings it up to date (no training)."""
    committed = reference.committed(ROOT)
    assert committed, "no reference committed"
    proc = subprocess.run([sys.executable, "-m", "pipeline.reference", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [line for line in proc.stdout.splitlines() if line.endswith(": current")] == [
        f"reference/{suite}/{paper}/report: current" for suite, paper in committed]


def test_a_document_block_shows_the_named_table_of_a_committed_report(tmp_path):
    report = tmp_path / "reference/paper/p9/report/tables"
    report.mkdir(parents=True)
    (report / "p9.md").write_text("# P9\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\ntext\n\n"
                                  "| c |\n|---|\n| 3 |\n")
    assert reference.markdown_tables((report / "p9.md").read_text()) == [
        "| a | b |\n|---|---|\n| 1 | 2 |\n", "| c |\n|---|\n| 3 |\n"]
    doc = ("before\n<!-- reference paper/p9 tables/p9.md#2 -->\n| old |\n"
           "<!-- end reference -->\nafter\n")
    assert reference.fill_blocks(doc, tmp_path) == (
        "before\n<!-- reference paper/p9 tables/p9.md#2 -->\n| c |\n|---|\n| 3 |\n"
        "<!-- end reference -->\nafter\n")
    with pytest.raises(UserError, match=r"README.md: .*p9.md has 2 tables, not #3"):
        reference.fill_blocks(doc.replace("#2", "#3"), tmp_path, "README.md")
    with pytest.raises(UserError, match=r"README.md: reference block names .*p8/report/tables"):
        reference.fill_blocks(doc.replace("p9 ", "p8 "), tmp_path, "README.md")


def test_readme_and_docs_show_the_committed_reference_tables():
    """Every reference block of README.md and docs/ equals its committed report's table."""
    stale = [str(p.relative_to(ROOT)) for p in reference.documents(ROOT)
             if reference.fill_blocks(p.read_text(), ROOT, str(p)) != p.read_text()]
    assert stale == [], "run `python -m pipeline.reference --render`"


def test_figures_are_written_as_palette_pngs(tmp_path: Path) -> None:
    """A committed figure is a 256-colour palette PNG of the same size: a report-like figure
    (antialiased curves, a translucent band: thousands of RGBA colours) comes back in mode
    "P", smaller, and looks the same (mean pixel error of a few levels)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image

    fig, ax = plt.subplots(figsize=(6, 4))
    rounds = np.arange(1, 51)
    for k in range(3):
        mean = 80 - 30 * np.exp(-rounds / (5 + 3 * k))
        ax.plot(rounds, mean)
        ax.fill_between(rounds, mean - 3, mean + 3, alpha=0.2)
    path = tmp_path / "figure.png"
    fig.savefig(path, dpi=150)
    plt.close(fig)
    with Image.open(path) as image:
        original = np.asarray(image.convert("RGBA"), dtype=int)
        assert len(image.convert("RGBA").getcolors(1 << 24)) > 256
    before = path.stat().st_size
    reference.palette_png(path)
    with Image.open(path) as image:
        assert (image.mode, image.size) == ("P", (900, 600))
        back = np.asarray(image.convert("RGBA"), dtype=int)
    assert path.stat().st_size < before / 1.5
    assert np.abs(back - original).mean() < 3


def test_a_tuned_cells_picks_are_packed_beside_its_histories(trained, tmp_path) -> None:
    """The benchmark's report reads each cell's picks.json: a reference packs it at its
    results path (a cell without a tune stage has none), and the unpacked tree has it back."""
    results = tmp_path / "results"
    for alg in ("fedavg", "ifca"):
        seed = results / "bm_iid" / alg / "seed0"
        seed.mkdir(parents=True)
        shutil.copy(trained / "results/default/p4_fig1_n100/oracle/seed0/history.json",
                    seed / "history.json")  # a real history: pack validates each
    picks = results / "tuning" / "bm_iid" / "ifca" / "picks.json"
    picks.parent.mkdir(parents=True)
    picks.write_text('{"picked": {"lr": 0.1}}')
    files = reference.packed_files(results, [("bm_iid", "fedavg"), ("bm_iid", "ifca")])
    assert sorted(files) == ["bm_iid/fedavg/seed0/history.json",
                             "bm_iid/ifca/seed0/history.json", "tuning/bm_iid/ifca/picks.json"]
    reference.pack(files, tmp_path / "ref" / reference.ARCHIVE)
    with reference.unpacked(tmp_path / "ref") as tree:
        assert (tree / "tuning/bm_iid/ifca/picks.json").read_text() == picks.read_text()
        assert not (tree / "tuning/bm_iid/fedavg").exists()
