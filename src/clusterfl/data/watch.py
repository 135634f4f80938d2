"""The smartwatch exercise recordings shipped in the `seglearn` wheel (BSD; Burns et al. 2018,
"Shoulder physiotherapy exercise recognition: machine learning the inertial signals from a
smartwatch", arXiv:1802.01489), cut into UCI HAR's format for P3 (mmFL).

The file: `seglearn/data/watch_dataset.npy`, a pickled dict of 140 recordings at 50 Hz, each
[n_i, 6] (accelerometer x, y, z, gyroscope x, y, z; n_i about 1,770), with the exercise
(7 classes) and the subject (10) of each. Where it comes from, in order: `file` (a copy you
supply), the installed `seglearn` package, or the wheel `seglearn==1.2.5` fetched from the
package index (`pip download`, the real download path here) into `cache`; every source is
checked against the file's SHA-256.

Readings, UCI HAR's format (Anguita et al. 2013): windows of 128 readings with 50 % overlap
(step 64), each window labelled with its recording's exercise; the two modalities are the
accelerometer's and the gyroscope's 3 x 128 readings, flattened channel by channel as
BasicMotions'. The test set (`holdout`):
- `time` (default): the last `test_fraction` of every recording's readings, cut before
  windowing, so no reading is in a training and a test window, and every client is tested on
  the exercises and arms it trains on (UCI HAR's users are likewise tested on what they do);
- `recording`: whole recordings, `test_fraction` of each subject's, drawn from `split_seed`
  (`test_recordings`). Each subject recorded every exercise once per arm, so this tests on the
  other arm: a random forest on one subject's windows scores 0-61 % (seed 0), and P3's
  Standalone 0-9 %. It is kept as that harder reading.
A validation view (`validation_fraction` > 0, `holdout: time` only): the test tail is left out
altogether, and the `validation_fraction` of every recording's readings just before it
becomes the scored split, cut before windowing like the test tail; training keeps what comes
before. A run on it reports validation accuracy, so settings the paper leaves open (P3's
rates) are chosen without the test tail and without a window that shares readings with a
training window (a random carve of 50 %-overlapping windows would). Each channel is
standardised with the mean and std of the training windows alone. `groups` = subject, so a
partition can make the subjects its clients (`modality` with `clients: subjects`).
"""

import hashlib
import io
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clusterfl.core.errors import UserError
from clusterfl.core.options import require
from clusterfl.data.dataset import Dataset

WATCH_SHA256 = "eb122f23cdf06ef6bd6c6c5312958ec5cf9d038e2e6d457b8081662c75a42537"
WHEEL = "seglearn==1.2.5"
MEMBER = "seglearn/data/watch_dataset.npy"
MODALITIES = ("accelerometer", "gyroscope")


@dataclass(frozen=True)
class WatchOptions:
    file: str | None = None  # a copy of watch_dataset.npy (or of the wheel) you supply
    cache: str = "data/raw/cache"
    window: int = 128
    step: int = 64
    test_fraction: float = 0.25
    holdout: str = "time"  # or "recording" (module docstring)
    split_seed: int = 0  # draws the test recordings of `holdout: recording`
    validation_fraction: float = 0.0  # > 0: the validation view (module docstring)

    def validate(self, key: str) -> None:
        require(self.window >= 2, f"{key}.window", "must be >= 2")
        require(1 <= self.step <= self.window, f"{key}.step", "must be in [1, window]")
        require(0 < self.test_fraction < 1, f"{key}.test_fraction", "must be in (0, 1)")
        require(self.holdout in ("time", "recording"), f"{key}.holdout",
                "must be time or recording")
        require(0 <= self.validation_fraction < 1 - self.test_fraction,
                f"{key}.validation_fraction", "must be in [0, 1 - test_fraction)")
        require(self.validation_fraction == 0 or self.holdout == "time",
                f"{key}.validation_fraction", "needs holdout: time")


def _checked(data: bytes, where: str) -> dict[str, Any]:
    digest = hashlib.sha256(data).hexdigest()
    if digest != WATCH_SHA256:
        raise UserError(f"{where}: SHA-256 {digest} is not watch_dataset.npy's {WATCH_SHA256}")
    raw: dict[str, Any] = np.load(io.BytesIO(data), allow_pickle=True).item()
    return raw


def _read(path: Path) -> dict[str, Any]:
    """The recordings from an .npy file or from a wheel holding it."""
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as wheel:
            return _checked(wheel.read(MEMBER), f"{path}:{MEMBER}")
    return _checked(path.read_bytes(), str(path))


def locate(opts: WatchOptions) -> dict[str, Any]:
    """The recordings, from the first source that has them (module docstring)."""
    if opts.file is not None:
        if not Path(opts.file).exists():
            raise UserError(f"datasets.watch.file: {opts.file} does not exist")
        return _read(Path(opts.file))
    try:
        import seglearn  # type: ignore[import-not-found]

        return _read(Path(seglearn.__file__).parent / "data" / "watch_dataset.npy")
    except ImportError:
        pass
    cache = Path(opts.cache)
    wheels = sorted(cache.glob("seglearn-1.2.5-*.whl"))
    if not wheels:
        cache.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, "-m", "pip", "download", WHEEL, "--no-deps",
                               "-d", str(cache), "-q"], capture_output=True, text=True)
        wheels = sorted(cache.glob("seglearn-1.2.5-*.whl"))
        if done.returncode != 0 or not wheels:
            raise UserError(f"datasets.watch: could not fetch {WHEEL} from the package index "
                            f"({done.stderr.strip()[-200:]}); set `file` to a copy of {MEMBER}")
    return _read(wheels[0])


def windows(recording: np.ndarray, window: int, step: int) -> np.ndarray:
    """[w, 6, window]: every full window of a [n, 6] recording, `step` apart."""
    starts = range(0, len(recording) - window + 1, step)
    return np.stack([recording[s:s + window].T for s in starts]) if len(starts) else \
        np.zeros((0, recording.shape[1], window))


def test_recordings(subjects: np.ndarray, exercises: np.ndarray, fraction: float,
                    rng: np.random.Generator) -> np.ndarray:
    """[R] bool: `fraction` of each subject's recordings (at least one) held out for test, each
    of another exercise, and of an exercise the subject recorded more than once where it has one.

    Why: the file has 2 recordings of every (subject, exercise), one per arm. Drawn freely, a
    subject's 4 test recordings were often both of one exercise, which that subject then never
    trained on: Standalone scored 0 % on every client. So each test exercise keeps a training
    recording of the same subject (the other arm).
    """
    test = np.zeros(len(subjects), dtype=bool)
    for subject in np.unique(subjects):
        mine = np.flatnonzero(subjects == subject)
        repeated = [e for e in np.unique(exercises[mine])
                    if np.count_nonzero(exercises[mine] == e) > 1]
        pool = np.asarray(repeated or np.unique(exercises[mine]), dtype=np.int64)
        count = min(max(1, round(fraction * len(mine))), len(pool))
        for exercise in rng.permutation(pool)[:count]:
            test[rng.choice(mine[exercises[mine] == exercise])] = True
    return test


def split_windows(raw: dict[str, Any], subjects: np.ndarray, opts: WatchOptions
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(windows [w, 6, window], recording of each [w], test flag of each [w]) by `holdout`."""
    recordings = [np.asarray(r, dtype=np.float64) for r in raw["X"]]
    if opts.holdout == "recording":
        held = test_recordings(subjects, np.asarray(raw["y"]), opts.test_fraction,
                               np.random.default_rng(opts.split_seed))
        parts = [(r, i, bool(held[i])) for i, r in enumerate(recordings)]
    else:  # the recording's tail (or, for validation, the span before it), cut before windowing
        parts = []
        for i, r in enumerate(recordings):
            end = round((1 - opts.test_fraction) * len(r))
            if opts.validation_fraction > 0:  # the test tail is never read
                start = round((1 - opts.test_fraction - opts.validation_fraction) * len(r))
                parts += [(r[:start], i, False), (r[start:end], i, True)]
            else:
                parts += [(r[:end], i, False), (r[end:], i, True)]
    cut = [windows(r, opts.window, opts.step) for r, _, _ in parts]
    count = [len(c) for c in cut]
    recording = np.repeat([i for _, i, _ in parts], count).astype(np.int64)
    test = np.repeat([t for _, _, t in parts], count).astype(bool)
    return np.concatenate(cut), recording, test


def from_recordings(raw: dict[str, Any], opts: WatchOptions) -> Dataset:
    """The windows of every recording as a two-modality `Dataset` (module docstring)."""
    subject_ids = np.asarray(raw["subject"])
    subjects = np.unique(subject_ids, return_inverse=True)[1]
    x, recording, test = split_windows(raw, subjects, opts)
    split = test.astype(np.int8)
    train = x[split == 0]
    mean = train.mean(axis=(0, 2), keepdims=True)
    std = train.std(axis=(0, 2), keepdims=True)
    x = (x - mean) / np.where(std > 0, std, 1.0)
    flat = np.concatenate([x[:, :3].reshape(len(x), -1), x[:, 3:].reshape(len(x), -1)], axis=1)
    labels = [str(v) for v in raw.get("y_labels", [])]
    return Dataset(
        name="watch",
        x=flat.astype(np.float32),
        y=np.asarray(raw["y"], dtype=np.int64)[recording],
        num_classes=len(labels) or int(np.max(raw["y"])) + 1,
        groups=subjects[recording].astype(np.int64),
        split=split,
        modalities=MODALITIES,
        modality_sizes=(3 * opts.window, 3 * opts.window),
        extras={"recording": recording},
        info={"source": f"{WHEEL}: {MEMBER} (sha256 {WATCH_SHA256[:12]}...)",
              "classes": " ".join(labels)},
    )


def watch(opts: WatchOptions, rng: np.random.Generator) -> Dataset:
    return from_recordings(locate(opts), opts)
