"""The smartwatch recordings (seglearn's format, built here): windows, a split by recording,
train-only standardisation, the checksum, and subjects or whole recordings as the modality
scheme's clients."""

import hashlib
import io
import zipfile

import numpy as np
import pytest

from clusterfl.core.errors import UserError
from clusterfl.core.types import Dataset
from clusterfl.data import watch
from clusterfl.partition.clustered import ModalityOptions, modality, pooled_tests


def raw(lengths=(300, 200, 260, 130, 400, 250), seed=0) -> dict:
    """Six recordings of 2 subjects in seglearn's layout: X [n_i, 6], y, subject, labels."""
    rng = np.random.default_rng(seed)
    return {"X": [rng.normal(i, 1.0 + i, (n, 6)) for i, n in enumerate(lengths)],
            "y": np.array([0, 1, 2, 0, 1, 2]), "subject": np.array([7, 7, 7, 9, 9, 9]),
            "y_labels": ["PEN", "ABD", "FEL"]}


def test_windows_of_128_with_half_overlap_and_test_by_recording():
    opts = watch.WatchOptions(test_fraction=0.34, holdout="recording")
    data = watch.from_recordings(raw(), opts)
    # full windows of 128 every 64 readings: (n - 128) // 64 + 1 per recording
    per = [(n - 128) // 64 + 1 for n in (300, 200, 260, 130, 400, 250)]
    assert len(data.y) == sum(per) and data.x.shape[1] == 2 * 3 * 128
    assert data.modalities == ("accelerometer", "gyroscope")
    recording = data.extras["recording"]
    for r in range(6):  # a recording is wholly train or wholly test
        assert len(set(data.split[recording == r].tolist())) == 1
    # one test recording per subject (round(0.34 x 3) = 1), the subjects renumbered 0, 1
    test = {int(r) for r in np.unique(recording[data.split == 1])}
    assert len(test) == 2 and {int(data.groups[recording == r][0]) for r in test} == {0, 1}
    assert data.y.tolist() == np.repeat([0, 1, 2, 0, 1, 2], per).tolist()


def test_the_default_test_set_is_each_recordings_tail_cut_before_windowing():
    lengths = (600, 520, 700, 450, 800, 640)
    rec = raw(lengths)
    data = watch.from_recordings(rec, watch.WatchOptions(test_fraction=0.25))
    recording = data.extras["recording"]
    for r, n in enumerate(lengths):
        cut = round(0.75 * n)  # windows of the head [0, cut) train, of the tail [cut, n) test
        head, tail = max(0, (cut - 128) // 64 + 1), max(0, (n - cut - 128) // 64 + 1)
        assert (data.split[recording == r] == 0).sum() == head
        assert (data.split[recording == r] == 1).sum() == tail
    assert (data.split == 1).sum() == 1 + 1 + 1 + 0 + 2 + 1
    # the raw windows: the 800-reading recording's test windows start at its cut, 600 and 664
    x, recording, test = watch.split_windows(rec, np.array([0, 0, 0, 1, 1, 1]),
                                             watch.WatchOptions(test_fraction=0.25))
    got = x[(recording == 4) & test]
    np.testing.assert_array_equal(got[0], rec["X"][4][600:728].T)
    np.testing.assert_array_equal(got[1], rec["X"][4][664:792].T)
    with pytest.raises(UserError, match="holdout: must be time or recording"):
        watch.WatchOptions(holdout="subject").validate("datasets.watch")


def test_the_validation_view_scores_the_span_before_the_test_tail_and_never_reads_it():
    rec = raw((800, 640, 600, 520, 700, 450))
    opts = watch.WatchOptions(test_fraction=0.25, validation_fraction=0.2)
    x, recording, scored = watch.split_windows(rec, np.array([0, 0, 0, 1, 1, 1]), opts)
    # the 800-reading recording: training [0, 440), validation [440, 600), the tail [600, 800)
    # left out: 5 training windows (starting at 0, 64, ..., 256), 1 validation window at 440
    assert (recording == 0).sum() == (440 - 128) // 64 + 1 + 1
    np.testing.assert_array_equal(x[(recording == 0) & scored][0], rec["X"][0][440:568].T)
    assert not any(np.array_equal(w, rec["X"][0][600:728].T) for w in x[recording == 0])
    assert x[(recording == 0) & ~scored].max() <= rec["X"][0][:440].max()  # from the head only
    # a test tail changed beyond recognition changes nothing in the view
    changed = {**rec, "X": [r.copy() for r in rec["X"]]}
    for r in changed["X"]:
        r[round(0.75 * len(r)):] = 1e6
    np.testing.assert_array_equal(watch.from_recordings(changed, opts).x,
                                  watch.from_recordings(rec, opts).x)
    with pytest.raises(UserError, match="validation_fraction: needs holdout: time"):
        watch.WatchOptions(holdout="recording", validation_fraction=0.2).validate("datasets.w")
    with pytest.raises(UserError, match=r"must be in \[0, 1 - test_fraction\)"):
        watch.WatchOptions(test_fraction=0.5, validation_fraction=0.5).validate("datasets.w")


def test_channels_are_standardised_on_the_training_windows_alone():
    data = watch.from_recordings(raw(), watch.WatchOptions(test_fraction=0.34))
    channels = data.x.reshape(len(data.x), 6, 128)[data.split == 0]
    np.testing.assert_allclose(channels.mean(axis=(0, 2)), 0.0, atol=1e-5)
    np.testing.assert_allclose(channels.std(axis=(0, 2)), 1.0, atol=1e-4)
    test = data.x.reshape(len(data.x), 6, 128)[data.split == 1]
    assert abs(test.mean()) > 1e-3  # the test windows did not set the statistics


def test_only_the_published_file_is_read(tmp_path, monkeypatch):
    buffer = io.BytesIO()
    np.save(buffer, raw(), allow_pickle=True)
    fake = tmp_path / "watch_dataset.npy"
    fake.write_bytes(buffer.getvalue())
    with pytest.raises(UserError, match=r"is not watch_dataset\.npy.s"):
        watch.locate(watch.WatchOptions(file=str(fake)))
    wheel = tmp_path / "seglearn-1.2.5-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(watch.MEMBER, buffer.getvalue())
    # with this file's digest as the published one, both the file and the wheel read
    monkeypatch.setattr(watch, "WATCH_SHA256", hashlib.sha256(buffer.getvalue()).hexdigest())
    for source in (fake, wheel):
        got = watch.locate(watch.WatchOptions(file=str(source)))
        assert got["subject"].tolist() == [7, 7, 7, 9, 9, 9]
    with pytest.raises(UserError, match="does not exist"):
        watch.locate(watch.WatchOptions(file=str(tmp_path / "nowhere.npy")))


def test_subjects_are_the_clients_of_their_modality_with_the_datasets_split():
    data = watch.from_recordings(raw(), watch.WatchOptions(test_fraction=0.34))
    part = modality(data, ModalityOptions(clients="subjects"), np.random.default_rng(3))
    n = len(data.y)
    assert sorted(part.cluster.tolist()) == [0, 1]  # one subject per modality
    for k, (train, test) in enumerate(zip(part.train, part.test, strict=True)):
        view, rows = train // n, train % n
        assert set(view.tolist()) == {part.cluster[k]}
        assert len(set(data.groups[rows].tolist())) == 1  # one subject
        assert (data.split[rows] == 0).all() and (data.split[test % n] == 1).all()
    with pytest.raises(UserError, match="clients: must be dirichlet, subjects or recordings"):
        ModalityOptions(clients="people").validate("partitions.p.scheme")


def test_every_test_exercise_keeps_a_training_recording_of_its_subject():
    # the file's layout: 2 recordings (one per arm) of every (subject, exercise)
    subjects = np.repeat([0, 1, 2], 8)
    exercises = np.tile(np.repeat([0, 1, 2, 3], 2), 3)
    for seed in range(40):
        test = watch.test_recordings(subjects, exercises, 0.25, np.random.default_rng(seed))
        for s in range(3):
            held = exercises[test & (subjects == s)]
            assert len(held) == 2 and len(set(held.tolist())) == 2  # round(0.25 x 8), distinct
            kept = set(exercises[~test & (subjects == s)].tolist())
            assert set(held.tolist()) <= kept
    # a subject with every exercise once still gets its test recording
    once = watch.test_recordings(np.zeros(3, int), np.arange(3), 0.25, np.random.default_rng(0))
    assert once.sum() == 1


def recordings() -> Dataset:
    """6 recordings (exercises 0, 1, 2, 0, 1, 2) of 4 windows each, the last one its test tail."""
    return Dataset(name="rec", x=np.zeros((24, 4), np.float32), y=np.repeat([0, 1, 2] * 2, 4),
                   num_classes=3, split=np.tile([0, 0, 0, 1], 6).astype(np.int8),
                   modalities=("a", "b"), modality_sizes=(2, 2),
                   extras={"recording": np.repeat(np.arange(6), 4)})


def test_recordings_are_dealt_whole_to_label_skewed_clients_with_the_datasets_split():
    data = recordings()
    # one client a modality: each takes the 3 recordings dealt to its modality, 9 + 3 windows
    one = modality(data, ModalityOptions(clients="recordings", clients_per_modality=1,
                                         min_size=1), np.random.default_rng(3))
    assert [len(t) for t in one.train] == [9, 9] and [len(t) for t in one.test] == [3, 3]
    assert one.cluster.tolist() == [0, 1]
    held = [set((t % 24 // 4).tolist()) for t in one.train]
    assert held[0] | held[1] == set(range(6)) and not held[0] & held[1]
    # the modalities' shares are the generator's first permutation of the 6 recordings
    first = np.random.default_rng(3).permutation(6)
    assert held == [set(first[:3].tolist()), set(first[3:].tolist())]
    # two clients a modality: every recording wholly with one client, train rows 0-2, test 3
    two = modality(data, ModalityOptions(clients="recordings", clients_per_modality=2,
                                         min_size=1), np.random.default_rng(5))
    owner = {}
    for k, (train, test) in enumerate(zip(two.train, two.test, strict=True)):
        assert set((train // 24).tolist()) <= {two.cluster[k]}
        for rec in set((train % 24 // 4).tolist()):
            assert owner.setdefault(rec, k) == k
            assert sorted((train % 24)[train % 24 // 4 == rec] % 4) == [0, 1, 2]
            assert ((test % 24)[test % 24 // 4 == rec] % 4).tolist() == [3]
    assert sorted(owner) == list(range(6)) and sum(len(t) for t in two.train) == 18
    with pytest.raises(UserError, match="needs a dataset with recording ids"):
        modality(Dataset(name="x", x=data.x, y=data.y, num_classes=3, split=data.split,
                         modalities=("a", "b"), modality_sizes=(2, 2)),
                 ModalityOptions(clients="recordings"), np.random.default_rng(0))


def test_a_pooled_test_scores_every_client_on_its_modalitys_test_samples():
    got = pooled_tests((np.array([1, 5]), np.array([2]), np.array([7, 3])), np.array([0, 1, 0]))
    assert [t.tolist() for t in got] == [[1, 3, 5, 7], [2], [1, 3, 5, 7]]
    # the same draw as `own` (trains identical), each test the union of its modality's tails
    opts = {"clients": "recordings", "clients_per_modality": 2, "min_size": 1}
    own = modality(recordings(), ModalityOptions(**opts), np.random.default_rng(5))
    pooled = modality(recordings(), ModalityOptions(**opts, test="pooled"),
                      np.random.default_rng(5))
    assert all(np.array_equal(a, b) for a, b in zip(own.train, pooled.train, strict=True))
    for k, test in enumerate(pooled.test):
        mine = [t for t, c in zip(own.test, own.cluster, strict=True) if c == own.cluster[k]]
        assert test.tolist() == sorted(np.concatenate(mine).tolist()) and len(test) == 3
    with pytest.raises(UserError, match="test: must be own or pooled"):
        ModalityOptions(test="mine").validate("partitions.p.scheme")
