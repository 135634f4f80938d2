"""The report page: Markdown tables and figures rendered into one HTML page, written by the
report stage from the same Markdown as tables/, and each figure owned by the right cell."""


from rich.console import Console

from clusterfl.papers import load_papers
from clusterfl.reports import html
from pipeline import report as stage
from tests.reports.histories import StandInSuite, write_accuracy_run

EXP = "p1_synthetic_mlr"


def test_render_has_tables_figures_and_escapes_raw_html():
    md = "Some text <script>x</script>\n\n| a | b |\n|---|---|\n| 1 ± 0.5 (2) | x_y |\n"
    page = html.render("T", [html.Section("P1 pFedKM: one", md, ["figures/a b.png"]),
                             html.Section("Other", "no table")])
    assert page.count("<table>") == 1 and "<td>1 ± 0.5 (2)</td>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert '<img src="figures/a b.png"' in page
    assert '<section id="p1-pfedkm--one">' in page and 'href="#other"' in page


def test_strip_heading_drops_only_a_leading_title():
    assert html.strip_heading("# Results\n\ntext\n") == "text\n"
    assert html.strip_heading("text\n# not first\n") == "text\n# not first\n"


def test_stage_writes_index_with_every_table_and_figure(tmp_path):
    results, reports = tmp_path / "results/s", tmp_path / "reports/s"
    for alg in ("pfedme", "pfedkm_k3"):
        for seed in (0, 1):
            write_accuracy_run(results, EXP, alg, seed, [0.5, 0.75], clusters=[[0, 1], [1, 1]])
    suite = StandInSuite(load_papers(), [("p1", EXP, a) for a in ("pfedme", "pfedkm_k3")])
    stage.run(suite, Console(quiet=True), results, tmp_path / "data/s/partitions", reports)
    page = (reports / "index.html").read_text()
    markdown_tables = sum(p.read_text().count("\n|---") for p in (reports / "tables").glob("*.md"))
    # results.md, P1's Table 2 under the official protocol and as the text describes it, and
    # its protocol table (one row per cell without views)
    assert markdown_tables == 4 and page.count("<table>") == markdown_tables
    assert "| p1_synthetic_mlr | pfedme | its evaluated model (no views recorded) |" in \
        (reports / "tables/p1.md").read_text()
    figures = sorted(p.relative_to(reports).as_posix()
                     for p in (reports / "figures").rglob("*.png"))
    assert figures == ["figures/convergence.png", f"figures/{EXP}_assignments.png",
                       f"figures/{EXP}_curves.png"]  # no clustering metric recorded
    assert all(page.count(f'<img src="{f}"') == 1 for f in figures)
    assert '.md"' not in page and 'href="#p1-pfedkm' in page  # links stay on the page
    assert "79.21 (P1 Table 2, Syn MLR)" in page and "81.88" in page  # the paper's numbers


def test_cell_files_go_to_the_longest_matching_experiment(tmp_path):
    for name in ("e.png", "e_curves.png", "e_lam0_curves.png", "p5/e_objective.png",
                 "other.png"):
        (tmp_path / "figures" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "figures" / name).write_bytes(b"")
    (tmp_path / "curves/test_acc").mkdir(parents=True)
    (tmp_path / "curves/test_acc/e__a.csv").write_text("")
    files = stage._cell_files(tmp_path, ("e", "a"), ["e", "e_lam0"])
    assert [(p.relative_to(tmp_path).as_posix(), folder) for p, folder in files] == [
        ("figures/e.png", "figures"), ("figures/e_curves.png", "figures"),
        ("figures/p5/e_objective.png", "figures"), ("curves/test_acc/e__a.csv", "curves")]
    lam0 = stage._cell_files(tmp_path, ("e_lam0", "a"), ["e", "e_lam0"])
    assert [p.name for p, _ in lam0] == ["e_lam0_curves.png"]
