"""Fetch a raw file into the cache: mirrors in order, checksums verified, never half-written.

A `Resource` names one official file, its official URLs and its published checksum(s).
`fetch` returns the cached path, trying in order:
1. the file already in `cache_dir` (verified; a corrupt cached file is an error that names it
   and is left as it is: raw data is immutable once downloaded, so we never delete it);
2. each mirror of `mirrors`: a local directory, a `file://` directory URL, or an http(s) base
   URL; the file's name is appended;
3. the official URLs.
A candidate is copied or downloaded to a temporary file beside the target, verified, then moved
into place with `os.replace`, so the cache only ever holds complete, verified files. A candidate
that fails its checksum is discarded and the next one is tried.

Checksums: `md5` is the published MD5 of the file as distributed (torchvision's tables).
`content_md5` is the published MD5 of a `.gz` file's uncompressed bytes: mirrors that
recompress (the Debian package of Fashion-MNIST does: its `.gz` bytes differ, its content
does not) are accepted when their content matches. A resource with neither checksum has none
published (UCI HAR); its SHA-256 is recorded in the dataset's `info` instead.
"""

import gzip
import hashlib
import os
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from clusterfl.core.errors import UserError
from clusterfl.core.io import temporary_file

TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Resource:
    filename: str
    urls: tuple[str, ...]
    md5: str | None = None
    content_md5: str | None = None


def file_digest(path: Path, algorithm: str = "md5", gunzip: bool = False) -> str:
    digest = hashlib.new(algorithm)
    opener = gzip.open if gunzip else open
    with opener(path, "rb") as f:  # type: ignore[operator]
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def checksum_problem(resource: Resource, path: Path) -> str | None:
    """None when `path` matches the resource's published checksum, else why not."""
    if resource.md5 is None and resource.content_md5 is None:
        return None
    got = file_digest(path)
    if resource.md5 is not None and got == resource.md5:
        return None
    if resource.content_md5 is not None:
        try:
            if file_digest(path, gunzip=True) == resource.content_md5:
                return None
        except (OSError, EOFError, gzip.BadGzipFile):
            pass
    expected = resource.md5 or f"content {resource.content_md5}"
    return f"checksum mismatch (md5 {got}, expected {expected})"


def _candidates(resource: Resource, mirrors: tuple[str, ...]) -> list[str]:
    out = []
    for mirror in mirrors:
        if "://" in mirror:
            out.append(mirror.rstrip("/") + "/" + resource.filename)
        else:
            out.append(str(Path(mirror) / resource.filename))
    return out + list(resource.urls)


def _copy_to(source: str, tmp: Path) -> None:
    if source.startswith("file://"):
        source = urllib.request.url2pathname(source[len("file://"):])
    if "://" not in source:
        shutil.copyfile(source, tmp)
        return
    with urllib.request.urlopen(source, timeout=TIMEOUT_S) as response, tmp.open("wb") as out:
        shutil.copyfileobj(response, out, 1 << 20)


def fetch(
    resource: Resource, cache_dir: Path, mirrors: tuple[str, ...] = (), key: str = ""
) -> Path:
    """Return `cache_dir/filename`, verified; see the module docstring for the order tried."""
    target = Path(cache_dir) / resource.filename
    where = f"{key}: " if key else ""
    if target.exists():
        problem = checksum_problem(resource, target)
        if problem is not None:
            raise UserError(
                f"{where}cached file {target} fails its check: {problem}; it was left as it is:"
                " delete it to fetch it again"
            )
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tried = []
    for source in _candidates(resource, mirrors):
        tmp = temporary_file(target.parent, f".{resource.filename}.")  # the umask's mode
        try:
            _copy_to(source, tmp)
            problem = checksum_problem(resource, tmp)
            if problem is None:
                os.replace(tmp, target)
                return target
            tried.append(f"{source} ({problem})")
        except (OSError, ValueError) as err:
            tried.append(f"{source} ({type(err).__name__}: {err})")
        finally:
            tmp.unlink(missing_ok=True)
    official = resource.urls[0] if resource.urls else resource.filename
    raise UserError(
        f"{where}could not get {resource.filename}; tried: {'; '.join(tried)}. Download {official}"
        f" by hand and put it at {target}, or list a directory holding it in {key or 'the'}"
        " mirrors option"
    )
