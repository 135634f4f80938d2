"""P2's draw-distance check: D and the D each center implies, exact on hand-made matrices,
the least-squares fits, and one shrunk draw trained end to end."""

from pathlib import Path

import numpy as np
import pandas as pd

from clusterfl.data import build_dataset
from clusterfl.papers.p2.tools import draws as dr
from clusterfl.run.config import load_params

ROOT = Path(__file__).resolve().parents[3]
PAPER_1090 = [[68.4, 29.5], [21.8, 58.6]]  # references.yaml p2_synth_1090


def test_squared_distance_and_a_center_on_the_segment_gives_d_back():
    theta = np.array([[0.0, 0.0, 3.0], [4.0, 0.0, 3.0]])
    assert dr.squared_distance(theta) == 16.0
    # c = 0.75 theta_0 + 0.25 theta_1: MSE 1 + 0.25^2 16 = 2 on 0, 1 + 0.75^2 16 = 10 on 1
    matrix = np.array([[2.0, 10.0], [10.0, 2.0]])
    np.testing.assert_allclose(dr.implied_distance(matrix), [16.0, 16.0])


def test_the_papers_table1_matrix_implies_163_and_167():
    m = dr.matched(np.array(PAPER_1090))
    np.testing.assert_array_equal(m, [[29.5, 68.4], [58.6, 21.8]])
    np.testing.assert_allclose(dr.implied_distance(m), [167.13, 163.09], atol=0.01)


def test_fit_recovers_an_exact_line_and_prefers_the_right_regressor():
    d = np.array([100.0, 150.0, 200.0, 300.0, 400.0])
    f = dr.fit(d, 0.3 * d)
    assert abs(f.slope - 0.3) < 1e-12 and abs(f.intercept) < 1e-9 and f.r2 > 1 - 1e-12
    assert abs(f.slope_origin - 0.3) < 1e-12 and f.r2_origin > 1 - 1e-12
    root = dr.fit(d, 0.3 * d, squared=False)
    assert root.regressor == "sqrt(D)" and root.r2_origin < f.r2_origin


def test_one_shrunk_draw_and_the_table(tmp_path):
    params = load_params(ROOT / "suites/paper/params.yaml")
    small = {"samples_per_distribution": 600, "test_per_distribution": 60}
    part = {"num_clients": 8, "size_range": [20, 40], "holdout_size": 60}
    rows = [dr.draw_row(params, "p2_synth_1090", "fedsoft", draw, rounds=2,
                        dataset_options=small, partition_options=part) for draw in (0, 1)]
    theta = build_dataset("fedsoft_regression", {"sigma0": 3.1623, **small, "seed": 1},
                          "d").extras["theta"]
    assert rows[1]["D"] == dr.squared_distance(theta)
    text = dr.markdown(pd.DataFrame(rows), PAPER_1090, "P2 Table 1")
    assert "| paper (P2 Table 1) | ? | 29.5 | 68.4 | 58.6 | 21.8 | 167, 163 |" in text
    assert text.count("(nearest)") == 1 and "| sqrt(D) |" in text
