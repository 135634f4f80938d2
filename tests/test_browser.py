"""What a user sees, in a real browser: the MLflow UI over a small run's store, and the report
page `reports/<suite>/index.html`.

Two cells (FedAvg and pFedKM K=3 on P1's synthetic MLR, 2 seeds, 4 rounds) are trained and
reported into a temporary repo; a real `mlflow server` serves its store on 127.0.0.1 and
headless Chromium (Debian's `chromium`, driven by Playwright; `make test` installs it as
root) opens the runs table, a seed run's charts, the parent run's artifacts, the chart view
comparing two algorithms, and the report page. Screenshots go to the test's tmp dir and are
copied to CLUSTERFL_SCREENSHOTS (default: <tmp>/clusterfl-screenshots) for a person to look
at. Skipped, with the reason, only where no Chromium or no Playwright is installed.
"""

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from typer.testing import CliRunner

from tests.mlflow_servers import free_port, start_server, stop_server

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.server, pytest.mark.slow, pytest.mark.browser]

ROUNDS, SEEDS = 4, [0, 1]
EXPERIMENT = "p1_synthetic_mlr"
ALGORITHMS = ("fedavg", "pfedkm_k3")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SEED0 = "tags.seed = '0'"  # the search that shows one seed of every cell
SCREENS = Path(os.environ.get("CLUSTERFL_SCREENSHOTS",
                              Path(tempfile.gettempdir()) / "clusterfl-screenshots"))


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("no Chromium on this machine (Debian: apt-get install chromium; `make test` "
                "installs it when run as root)")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright not installed (requirements.lock)")
    executable = _chromium()
    with sync_api.sync_playwright() as p:
        # Playwright's launch gives every run a fresh profile (its own --user-data-dir)
        launched = p.chromium.launch(executable_path=executable, args=FLAGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A trained and reported repo: results, reports/default/ and an MLflow sqlite store."""
    from pipeline.cli import app

    ws = tmp_path_factory.mktemp("repo")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["suite"].update(seeds=SEEDS, training={"rounds": ROUNDS},
                           grid=[{"experiments": [EXPERIMENT], "algorithms": ALGORITHMS}])
    params["datasets"]["p1_synthetic"].update(clients_per_cluster=3, max_size=200)
    (ws / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    commands = [["download", "p1_synthetic"], ["partition", "p1_synthetic"],
                *[["train", EXPERIMENT, a] for a in ALGORITHMS], ["report"]]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(ws)
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{ws / 'mlflow.db'}")
        for args in commands:
            result = CliRunner().invoke(app, [*args, "-p", "params.yaml"])
            assert result.exit_code == 0, (args, result.output, result.exception)
    return ws


@pytest.fixture(scope="module")
def server(repo):
    port = free_port()
    # the UI as a user's `mlflow server` serves it, job runner included
    proc = start_server(repo / "mlflow.db", port, cwd=repo, timeout=180, jobs=True)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(proc)


@pytest.fixture
def page(browser, tmp_path):
    context = browser.new_context(viewport={"width": 1500, "height": 950})
    context.set_default_timeout(90_000)  # a shared 2-core machine: the UI loads slowly
    opened = context.new_page()
    yield opened
    context.close()


def _shot(page, tmp_path: Path, name: str, full_page: bool = False) -> Path:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    SCREENS.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, SCREENS / path.name)
    return path


def _runs(repo: Path) -> dict[str, str]:
    """Run name -> run id in the store."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{repo / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("clusterfl")
    return {r.info.run_name: r.info.run_id for r in client.search_runs([experiment.experiment_id])}


def _experiment_id(repo: Path) -> str:
    from clusterfl.run.tracking import find_experiment

    return find_experiment("clusterfl", f"sqlite:///{repo / 'mlflow.db'}")


def _close_assistant(page) -> None:
    """MLflow 3.17 opens an assistant panel beside every page; close it for a wider view."""
    close = page.locator("button[aria-label=Close]")
    if close.count():
        close.first.click()


def _expand_parents(page) -> None:
    """Click each parent run's expander (the + beside its name) to show its seed runs."""
    page.get_by_role("link", name=f"{EXPERIMENT}/{ALGORITHMS[0]}", exact=True).first.wait_for()
    expand = page.locator("button[data-component-id*=runnamecellrenderer]")
    for i in range(expand.count()):
        expand.nth(i).click()


def test_runs_table_shows_cells_and_seed_runs(page, server, repo, tmp_path):
    from clusterfl.run.tracking import runs_page_url

    page.goto(runs_page_url(server, _experiment_id(repo)))
    for alg in ALGORITHMS:
        page.get_by_text(f"{EXPERIMENT}/{alg}", exact=True).first.wait_for()
    assert "/runs" in page.url and "genai" not in page.url  # the runs table, not traces
    _close_assistant(page)
    _expand_parents(page)
    for alg in ALGORITHMS:
        for seed in SEEDS:
            page.get_by_text(f"{EXPERIMENT}/{alg}/seed{seed}", exact=True).wait_for()
    page.get_by_text("report/default", exact=True).wait_for()
    _shot(page, tmp_path, "1_runs_table")


def test_seed_run_chart_draws_every_round(page, server, repo, tmp_path):
    runs = _runs(repo)
    run_id = runs[f"{EXPERIMENT}/pfedkm_k3/seed0"]
    page.goto(f"{server}/#/experiments/{_experiment_id(repo)}/runs/{run_id}/model-metrics"
              "?workflowType=machine_learning")
    # charts below the fold render only when scrolled to (a spinner until then): pFedKM logs
    # 10 metrics, test_acc among the last alphabetically, so search for it as a user would
    page.get_by_placeholder("Search metric charts").fill("test_acc")
    card = page.locator("[data-testid=experiment-view-compare-runs-card]").filter(
        has=page.locator("h4[title=test_acc]"))
    card.locator("g.points path.point").first.wait_for()  # drawn, not a spinner
    _close_assistant(page)
    assert card.locator("g.points path.point").count() == ROUNDS
    assert card.locator(".js-line").first.get_attribute("d").count("L") == ROUNDS - 1
    _shot(page, tmp_path, "2_seed_run_charts")


def test_parent_run_lists_figures_and_summary(page, server, repo, tmp_path):
    """The parent run's artifacts page lists the figures the report attached, previews the
    stored PNG itself (decoded, its own width), and shows the summary table with the paper's
    number beside ours."""
    from mlflow.tracking import MlflowClient
    from PIL import Image

    run_id = _runs(repo)[f"{EXPERIMENT}/pfedkm_k3"]
    client = MlflowClient(f"sqlite:///{repo / 'mlflow.db'}")
    expected = [f"{EXPERIMENT}_{kind}.png" for kind in ("curves", "clustering", "assignments")]
    assert sorted(Path(a.path).name for a in client.list_artifacts(run_id, "figures")) == sorted(
        expected)
    summary = Path(client.download_artifacts(run_id, "tables/summary.md", str(tmp_path)))
    assert "81.88" in summary.read_text()  # P1 Table 2's pFedKM K=3 number, beside ours
    page.goto(f"{server}/#/experiments/{_experiment_id(repo)}/runs/{run_id}/artifacts"
              "?workflowType=machine_learning")
    for folder in ("figures", "tables", "curves"):
        page.get_by_text(folder, exact=True).first.wait_for()
    _close_assistant(page)
    page.get_by_text("figures", exact=True).first.click()
    for name in expected:
        page.get_by_text(name, exact=True).wait_for()
    page.get_by_text(f"{EXPERIMENT}_assignments.png", exact=True).click()
    preview = page.locator("img[src^=blob]").first
    preview.wait_for()  # the figure's preview, fetched from the server
    page.wait_for_function("img => img.complete && img.naturalWidth > 0",
                           arg=preview.element_handle())
    stored = client.download_artifacts(run_id, f"figures/{EXPERIMENT}_assignments.png",
                                       str(tmp_path))
    with Image.open(stored) as image:
        assert preview.evaluate("img => img.naturalWidth") == image.width
    _shot(page, tmp_path, "3_parent_run_artifacts")
    page.get_by_text("tables", exact=True).first.click()
    page.get_by_text("summary.md", exact=True).click()
    page.get_by_text("81.88").first.wait_for()  # the table's text, shown by the UI


def test_chart_view_compares_two_algorithms(page, server, repo, tmp_path):
    """docs/operations.md's walkthrough: filter to seed 0 of each cell, switch to the chart view."""
    from clusterfl.run.tracking import runs_page_url

    url = runs_page_url(server, _experiment_id(repo))
    page.goto(f"{url}&compareRunsMode=CHART&searchFilter={quote(SEED0)}")
    _expand_parents(page)
    # a regular expression: pFedKM also logs <model>_test_acc (model_views) and the parents
    # last_/best_ summaries, whose cards would push test_acc's out of view (not drawn)
    page.get_by_placeholder("Search metric charts").fill("^test_acc$")
    card = page.locator("[data-testid=experiment-view-compare-runs-card]").filter(
        has=page.locator("h4[title=test_acc]"))
    card.locator(".js-line").nth(len(ALGORITHMS) - 1).wait_for()
    _close_assistant(page)
    legend = card.inner_text()
    for alg in ALGORITHMS:
        assert f"{EXPERIMENT}/{alg}/seed0" in legend
    assert f"{EXPERIMENT}/fedavg/seed1" not in legend
    card.scroll_into_view_if_needed()
    _shot(page, tmp_path, "4_compare_two_algorithms")
    card.locator("button[data-component-id=fullscreen_button_chartcard]").click()
    dialog = page.locator("[role=dialog]").filter(has_text="test_acc")
    dialog.locator(".js-line").nth(len(ALGORITHMS) - 1).wait_for()
    for alg in ALGORITHMS:  # the large chart's legend names both seed runs
        assert f"{EXPERIMENT}/{alg}/seed0 (test_acc)" in dialog.inner_text()
    _shot(page, tmp_path, "4b_test_acc_fullscreen")  # docs/img/mlflow_compare.png


def test_report_page_has_every_table_and_figure(page, repo, tmp_path):
    reports = repo / "reports" / "default"
    tables = sum(len(re.findall(r"^\|[-: |]+\|$", p.read_text(), re.M))
                 for p in (reports / "tables").glob("*.md"))
    figures = sorted((reports / "figures").rglob("*.png"))
    assert tables >= 2 and len(figures) >= 3
    page.goto((reports / "index.html").as_uri())
    assert page.locator("table").count() == tables
    images = page.locator("img")
    for i in range(images.count()):  # loading="lazy": each loads as a reader scrolls to it
        images.nth(i).scroll_into_view_if_needed()
    page.wait_for_function("Array.from(document.images).every(i => i.complete)")
    assert page.evaluate("Array.from(document.images).filter("
                         "i => i.complete && i.naturalWidth > 0).length") == len(figures)
    text = page.inner_text("body")
    assert "81.88" in text  # P1 Table 2's pFedKM K=3 number, beside ours
    for alg in ALGORITHMS:
        assert alg in text
    assert page.evaluate("Array.from(document.querySelectorAll('a[href]')).filter("
                         "a => a.getAttribute('href').endsWith('.md')).length") == 0
    _shot(page, tmp_path, "5_report_page", full_page=True)
