"""The cross-paper results table: cells beside the paper's number, labels from the metric
registry, the Table-2 layout, metrics.json and the merge of a paper's numbers into it."""

import pandas as pd
import pytest

from clusterfl.reports import results, tables
from clusterfl.reports.runs import seed_rows
from tests.reports.histories import write_accuracy_run


def _seeds() -> pd.DataFrame:
    return pd.DataFrame([
        {"experiment": "e1", "algorithm": "pfedme", "seed": s, "metric": "test_acc", "last": a,
         "best": a, "best_round": 3, "last_loss": 0.1} for s, a in [(0, 80.0), (1, 90.0)]
    ] + [{"experiment": "e2", "algorithm": "ifca_k2", "seed": 0, "metric": "test_acc",
          "last": 70.0, "best": 71.0, "best_round": 2, "last_loss": 0.2},
         {"experiment": "e3", "algorithm": "fedsoft", "seed": 0, "metric": "test_mse",
          "last": 4.0, "best": 3.5, "best_round": 1, "last_loss": None}])


def test_paper_layout_puts_ours_beside_the_papers_number():
    table = results.summary_table(_seeds(), {"e1": {"values": {"pfedme": 79.21}}})
    assert table.loc[0, "diff_vs_paper"] == pytest.approx(85.0 - 79.21)
    lines = results.paper_layout(table[table["metric"] == "test_acc"]).splitlines()
    assert lines[0] == "| algorithm | e1 | e2 |"
    assert lines[1] == "|---|---|---|"
    assert lines[2] == "| pfedme | 85.00 ± 5.00 (79.21) |  |"
    assert lines[3] == "| ifca_k2 |  | 70.00 ± 0.00 |"


def test_results_table_labels_each_cell_by_its_metric_and_cites_the_source():
    refs = {"e1": {"source": "P1 Table 2", "values": {"pfedme": 79.21}}}
    lines = results.results_markdown(results.summary_table(_seeds(), refs), refs).splitlines()
    assert lines[0] == ("| experiment | algorithm | metric | paper | ours | scored as | diff "
                        "(ours − paper) | ours, last round | ours, best round | best round | "
                        "seeds | note |")
    assert lines[2] == ("| e1 | pfedme | test accuracy (%) | 79.21 (P1 Table 2) | 85.00 ± 5.00 "
                        "| last round | +5.79 | 85.00 ± 5.00 | 85.00 ± 5.00 | 3 | 2 |  |")
    assert lines[4] == ("| e3 | fedsoft | test MSE | – | 4.00 ± 0.00 | last round | – | "
                        "4.00 ± 0.00 | 3.50 ± 0.00 | 1 | 1 |  |")


def test_a_cell_scored_by_its_papers_protocol_shows_that_number_and_its_notes():
    """P1's section scores a cell by the official protocol (best round): the results table's
    `ours` and diff are that number, the last round stays beside it, and the gap's notes are
    numbered under the table (each note once)."""
    refs = {"e1": {"source": "P1 Table 2", "values": {"pfedme": 79.21}}}
    official = pd.DataFrame([{"experiment": "e1", "algorithm": "pfedme", "seed": s,
                              "metric": "test_acc", "last": v, "best": v, "best_round": 2,
                              "scored_as": "P1 protocol: local w_i, best round"}
                             for s, v in [(0, 90.0), (1, 92.0)]])
    table = results.scored(results.summary_table(_seeds(), refs), official, "unused")
    notes = {("e1", "pfedme"): ["scale: 2 rounds", "data: a subset"],
             ("e2", "ifca_k2"): ["data: a subset"]}
    text = results.results_markdown(table, refs, notes)
    lines = text.splitlines()
    assert lines[2] == ("| e1 | pfedme | test accuracy (%) | 79.21 (P1 Table 2) | 91.00 ± 1.00 "
                        "| P1 protocol: local w_i, best round | +11.79 | 85.00 ± 5.00 | "
                        "85.00 ± 5.00 | 3 | 2 | 1, 2 |")
    assert lines[3].endswith("| last round | – | 70.00 ± 0.00 | 71.00 ± 0.00 | 2 | 1 | 2 |")
    assert text.endswith("Notes on the gaps to the papers:\n\n1. scale: 2 rounds\n"
                         "2. data: a subset\n")
    assert table.loc[0, "diff_vs_paper"] == pytest.approx(91.0 - 79.21)


def test_metrics_json_and_a_papers_numbers_merged_in(tmp_path):
    write_accuracy_run(tmp_path, "e", "fedavg", 0, [0.5, 0.7])
    write_accuracy_run(tmp_path, "e", "fedavg", 1, [0.6, 0.6])
    table = results.summary_table(pd.DataFrame(seed_rows(tmp_path, "e", "fedavg")), {})
    metrics = results.metrics_json(table)
    assert metrics == {"e": {"fedavg": {"last_acc": 65.0, "best_acc": 65.0}}}
    results.merge_metrics(metrics, {"e": {"fedavg": {"mixture_mae": 0.2}}, "f": {"x": {}}})
    assert metrics == {"e": {"fedavg": {"last_acc": 65.0, "best_acc": 65.0, "mixture_mae": 0.2}},
                       "f": {"x": {}}}


def test_mean_std_and_markdown_table():
    assert tables.mean_std([1.0, 3.0]) == "2.00 ± 1.00"
    assert tables.mean_std([1.0, 2.0], digits=1) == "1.5 ± 0.5"
    assert tables.mean_std([]) == "–"
    assert tables.markdown_table(["a", "b"], [["1", "2"]]) == ["| a | b |", "|---|---|",
                                                              "| 1 | 2 |"]
