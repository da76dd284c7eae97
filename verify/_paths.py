"""Output-path validation: refuse, before any work starts, an output the suite must not write.

How the command line uses it (each function raises :class:`OutputPathError`, a ValueError
with a one-line message naming the option, the reason and the fix; the CLI prints it and
exits 2):

- ``report --out DIR``: ``out = validate_report_out(DIR)`` before any claim runs; build in
  ``staging = verify._atomic.make_staging(out)`` (not ``tempfile.mkdtemp``), finish with
  ``verify._atomic.replace_dir(staging, out)``; on an exception ``shutil.rmtree(staging)``.
- ``check --json FILE`` (and ``bench --json FILE``): ``validate_output_file(FILE, "--json")``
  before any check runs, then ``verify._atomic.atomic_write_bytes(FILE, ...)``.
- ``experiment NAME --out DIR``: ``verify.experiments.prepare(NAME, settings, DIR, profile)``
  validates the settings and ``validate_output_dir(DIR, "--out", files=(NAME.json, NAME.png))``.

A report directory may be replaced only when it is new, empty, or was written by the report
itself (marker file ``.meanfield-verify-report`` listing its entries, see verify._atomic).
"""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

from verify._atomic import MARKER, recover_interrupted, why_not_replaceable

__all__ = ["OutputPathError", "validate_output_dir", "validate_output_file",
           "validate_report_out"]


class OutputPathError(ValueError):
    """An output path the suite refuses to write (one-line message: why and what to do)."""


def _as_path(path: Any, what: str, kind: str) -> Path:
    if path is None or isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise OutputPathError(f"{what} needs a {kind} path; got {type(path).__name__}")
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise OutputPathError(f"{what} needs a {kind} name; got an empty string")
    if "\0" in text:
        raise OutputPathError(f"{what}: the path contains a NUL character")
    return Path(os.path.expanduser(text))


def _nearest_existing(p: Path) -> Path:
    q = p
    while not os.path.lexists(q) and q != q.parent:
        q = q.parent
    return q


def _virtual_root(p: Path) -> str | None:
    """``/proc`` when ``p`` lies in a kernel's virtual file system (/proc, /sys, /dev)."""
    parts = p.absolute().parts
    if len(parts) > 1 and parts[1] in ("proc", "sys", "dev") and parts[1:3] != ("dev", "shm"):
        return "/" + parts[1]
    return None


def _require_writable_dir(parent: Path, what: str, target: Path) -> None:
    """The nearest existing ancestor of ``parent`` is a directory we can create entries in
    (probed by creating and removing a hidden directory: root ignores permission bits, and
    /proc or a read-only mount refuse only at creation)."""
    anc = _nearest_existing(parent)
    virtual = _virtual_root(anc)
    if virtual is not None:
        raise OutputPathError(f"{what} {target}: {virtual} is a virtual file system of the "
                              "kernel, not writable storage; choose a path under a writable "
                              "directory")
    if not anc.is_dir():
        raise OutputPathError(f"{what} {target}: {anc} is not a directory; choose a path "
                              "under a writable directory")
    try:
        probe = tempfile.mkdtemp(prefix=".meanfield-verify-probe-", dir=anc)
        os.rmdir(probe)
    except OSError as exc:
        reason = {errno.EACCES: "permission denied", errno.EPERM: "permission denied",
                  errno.EROFS: "a read-only file system", errno.ENOSPC: "no space left",
                  }.get(exc.errno, exc.strerror or type(exc).__name__)
        raise OutputPathError(f"{what} {target}: {anc} is not writable ({reason}); "
                              "choose a writable location") from None


def validate_report_out(path: Any, what: str = "--out") -> Path:
    """Check ``report --out`` before any work: returns the absolute (resolved) directory.

    Accepted: a path that does not exist yet (its parent writable), an empty directory, or
    a directory written by a previous report (marker listing all its entries; reports of
    earlier versions without a marker are recognised by their exact layout).  Refused: a
    file, a non-empty foreign directory, the file-system root, the home directory, the
    current directory or one of its ancestors, a directory containing ``.git``, a mount
    point, an unwritable location.  Repairs first what an interrupted earlier run left
    (``.NAME.old``, marked ``.NAME.tmp*``)."""
    p = _as_path(path, what, "directory")
    target = p.resolve()
    fix = "choose a new or empty directory, e.g. --out report"
    if target == target.parent:
        raise OutputPathError(f"{what} {p}: refusing to replace the file-system root; {fix}")
    try:
        home = Path.home().resolve()
    except (RuntimeError, KeyError):
        home = None
    if home is not None and target == home:
        raise OutputPathError(f"{what} {p}: refusing to replace the home directory; {fix}")
    cwd = Path.cwd().resolve()
    if target == cwd or target in cwd.parents:
        where = "the current directory" if target == cwd else "an ancestor of the current directory"
        raise OutputPathError(f"{what} {p}: refusing to replace {where}; {fix}")
    if os.path.lexists(target / ".git"):
        raise OutputPathError(f"{what} {p}: refusing to replace a git repository "
                              f"({target} contains .git); {fix}")
    if os.path.lexists(target) and not target.is_dir():
        raise OutputPathError(f"{what} {p}: it is a file, not a directory; the report writes a "
                              f"directory: {fix}")
    if target.is_dir() and os.path.ismount(target):
        raise OutputPathError(f"{what} {p}: refusing to replace a mount point; {fix}")
    _require_writable_dir(target.parent, what, p)
    recover_interrupted(target)
    why = why_not_replaceable(target)
    if why is not None:
        raise OutputPathError(f"{what} {p}: refusing to replace it: {why}; {fix}, or "
                              "move it away yourself")
    return target


def validate_output_file(path: Any, what: str = "--json") -> Path:
    """Check an output file path (``check --json FILE``) before any work: returns it
    absolute.  Refuses an empty name, a directory, an existing non-regular file (device,
    fifo), a missing parent directory (as cp and git do: it is not created) and an
    unwritable or virtual (/proc, /sys) location."""
    p = _as_path(path, what, "file")
    text = os.fspath(path) if not isinstance(path, Path) else str(path)
    if p.is_dir() or str(text).endswith(("/", os.sep)):
        raise OutputPathError(f"{what} {text}: names a directory; give a file name, e.g. "
                              f"{what} {p / 'evidence.json'}")
    if os.path.lexists(p) and p.exists() and not p.is_file():
        raise OutputPathError(f"{what} {p}: it exists and is not a regular file; choose "
                              "another name")
    if p.name == MARKER:
        raise OutputPathError(f"{what} {p}: {MARKER} is reserved for the report's marker; "
                              "choose another name")
    parent = p.absolute().parent
    if not parent.is_dir() and _virtual_root(parent) is None:
        missing = _nearest_existing(parent)
        raise OutputPathError(
            f"{what} {p}: the directory {parent} does not exist; create it first"
            if missing.is_dir() else
            f"{what} {p}: {missing} is not a directory")
    _require_writable_dir(parent, what, p)
    return p.absolute()


def validate_output_dir(path: Any, what: str = "--out", files: Iterable[str] = (),
                        owned: Callable[[str], bool] | None = None) -> Path:
    """Check an output directory into which named ``files`` are written (experiments):
    it is a directory or can be created in a writable ancestor, and none of ``files``
    inside it is a directory or a non-regular file.  With ``owned`` (a test of an entry's
    name), an existing directory holding an entry it does not own (a foreign, non-empty
    directory) is refused, as ``report --out`` refuses one.  Returns it absolute."""
    p = _as_path(path, what, "directory")
    if os.path.lexists(p) and not p.is_dir():
        raise OutputPathError(f"{what} {p}: it is a file, not a directory; choose a "
                              "directory (it is created if missing)")
    _require_writable_dir(p.absolute() if p.is_dir() else p.absolute().parent, what, p)
    if owned is not None and p.is_dir():
        foreign = sorted(e.name for e in os.scandir(p) if not (e.is_file() and owned(e.name)))
        if foreign:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            raise OutputPathError(f"{what} {p}: refusing to write into a directory holding "
                                  f"files the experiments did not write ({foreign[0]}{more}); "
                                  "choose a new or empty directory, e.g. --out out")
    for name in files:
        f = p / name
        if f.is_dir():
            raise OutputPathError(f"{what} {p}: {f} is a directory; remove it or choose "
                                  "another --out")
        if f.exists() and not f.is_file():
            raise OutputPathError(f"{what} {p}: {f} is not a regular file; choose another --out")
    return p.absolute()
