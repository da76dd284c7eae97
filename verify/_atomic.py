"""Atomic file and directory writes that never destroy what the suite did not write.

- :func:`atomic_write_bytes` writes a file through a hidden sibling (``.NAME.PID.*.partial``)
  and ``os.replace``; readers see the old file or the new one.  New files get the mode the
  umask allows (0666 & ~umask), an existing file keeps its mode.  Partial files left by a
  killed process are removed by the next write to the same name.
- :func:`make_staging` / :func:`replace_dir` build an output directory (the report) in a
  hidden sibling ``.NAME.tmpXXXX`` and move it into place.  Every directory the suite writes
  carries the marker file :data:`MARKER` (JSON: format version, state, list of entries);
  nothing without that marker is ever renamed aside or deleted.  The swap is one
  ``renameat2(RENAME_EXCHANGE)`` where the kernel and file system support it, otherwise two
  renames (``target -> .NAME.old``, ``staging -> target``).  :func:`recover_interrupted`,
  run by the next validation or swap, repairs what a killed run left: it restores
  ``.NAME.old`` when the target is missing (a kill between the two renames), deletes a
  ``.NAME.old`` whose replacement is in place, and deletes ``.NAME.tmp*`` staging
  directories that carry the marker and whose process is gone.

Test hook: ``MEANFIELD_VERIFY_TEST_KILL_AT=STAGE`` makes the process SIGKILL itself at that
stage (see :data:`STAGES`), ``MEANFIELD_VERIFY_TEST_NO_EXCHANGE=1`` forces the two-rename
path.  Neither is meant for users.
"""
from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import signal
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["MARKER", "MARKER_FORMAT", "STAGES", "atomic_write_bytes", "make_staging",
           "read_marker", "recover_interrupted", "replace_dir", "umask_mode"]

MARKER = ".meanfield-verify-report"
MARKER_FORMAT = 1
_TOOL = "meanfield-verify report"
STAGES = ("staging-created", "marked", "moved-aside", "swapped", "exchanged", "cleaned",
          "file-written")

_umask_lock = threading.Lock()


# ----------------------------------------------------------------------------- helpers

def _stage(name: str) -> None:
    """Test hook: SIGKILL this process at stage ``name`` when the environment asks for it."""
    if os.environ.get("MEANFIELD_VERIFY_TEST_KILL_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def current_umask() -> int:
    """The process umask (read from /proc when possible: no transient change)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def umask_mode(directory: bool) -> int:
    """The mode a plain ``mkdir``/``open`` would give: 0777 or 0666 less the umask."""
    return (0o777 if directory else 0o666) & ~current_umask()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _entries(root: Path) -> list[str]:
    """Relative paths of everything below ``root`` except the marker (sorted, '/' separated)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for n in dirnames + filenames:
            p = (rel / n).as_posix()
            if p != MARKER:
                out.append(p)
    return sorted(out)


def read_marker(directory: str | Path) -> dict[str, Any] | None:
    """The parsed marker of ``directory`` if it is a valid marker of this tool, else None."""
    p = Path(directory) / MARKER
    try:
        if p.is_symlink() or not p.is_file():
            return None
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("tool") != _TOOL \
            or not isinstance(data.get("format"), int):
        return None
    return data


def owns_directory(directory: str | Path) -> tuple[bool, str]:
    """Whether the suite may replace ``directory``: (True, "") when it is empty or carries a
    complete marker listing every entry it holds; else (False, why)."""
    d = Path(directory)
    try:
        names = os.listdir(d)
    except OSError as exc:
        return False, f"cannot list it ({exc.strerror})"
    if not names:
        return True, ""
    m = read_marker(d)
    if m is None and _is_legacy_report(d):
        return True, ""
    if m is None:
        return False, f"it is not empty and has no {MARKER} marker (it was not written by `verify report`)"
    if m["format"] > MARKER_FORMAT:
        return False, f"its {MARKER} marker has format {m['format']} (this version knows {MARKER_FORMAT})"
    if m.get("state") != "complete":
        return False, f"its {MARKER} marker says it is an unfinished staging directory"
    listed = set(m.get("files") or [])
    extra = [e for e in _entries(d) if e not in listed]
    if extra:
        shown = ", ".join(extra[:3]) + (", ..." if len(extra) > 3 else "")
        return False, f"it holds entries the report did not write ({shown})"
    return True, ""


_LEGACY_FILES = {"report.md", "index.html", "evidence.json", "figures"}


def _is_legacy_report(d: Path) -> bool:
    """A report written before the marker existed: exactly report.md, index.html,
    evidence.json (with a "claims" list) and figures/ holding only PNG files."""
    try:
        names = set(os.listdir(d))
        if not {"report.md", "evidence.json"} <= names or not names <= _LEGACY_FILES:
            return False
        if any(not (d / n).is_file() or (d / n).is_symlink() for n in names - {"figures"}):
            return False
        if "figures" in names:
            fig = d / "figures"
            if fig.is_symlink() or not fig.is_dir():
                return False
            if any(not n.endswith(".png") or not (fig / n).is_file() or (fig / n).is_symlink()
                   for n in os.listdir(fig)):
                return False
        ev = json.loads((d / "evidence.json").read_text(encoding="utf-8"))
        return isinstance(ev, dict) and isinstance(ev.get("claims"), list)
    except (OSError, ValueError, UnicodeDecodeError):
        return False


def _write_marker(directory: Path, state: str) -> None:
    data: dict[str, Any] = {"tool": _TOOL, "format": MARKER_FORMAT, "state": state,
                            "pid": os.getpid(), "host": socket.gethostname()}
    if state != "staging":
        data["files"] = _entries(directory)
    tmp = directory / (MARKER + ".partial")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.chmod(tmp, umask_mode(False))
    os.replace(tmp, directory / MARKER)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap the names ``a`` and ``b`` (Linux renameat2); False if unsupported."""
    if os.environ.get("MEANFIELD_VERIFY_TEST_NO_EXCHANGE"):
        return False
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


# ----------------------------------------------------------------------------- files

def _clean_partials(path: Path) -> None:
    """Remove ``.NAME.PID.*.partial`` files next to ``path`` whose process is gone."""
    prefix = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for n in names:
        if not (n.startswith(prefix) and n.endswith(".partial")):
            continue
        pid = n[len(prefix):].split(".", 1)[0]
        if not pid.isdigit() or _pid_alive(int(pid)):
            continue
        p = path.parent / n
        if p.is_file() and not p.is_symlink():
            p.unlink(missing_ok=True)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one.

    The parent directories are created; a new file gets ``0666 & ~umask``, an existing file
    keeps its mode.  Refuses (ValueError) a path that is a directory or not a regular file."""
    path = Path(path)
    if str(path) in ("", "."):
        raise ValueError("output file name is empty: give a file name such as out.json")
    if path.is_dir():
        raise ValueError(f"output file {path} is a directory: give a file name inside it, "
                         f"e.g. {path / 'out.json'}")
    if path.exists() and not path.is_file():
        raise ValueError(f"output file {path} exists and is not a regular file: choose "
                         "another name")
    path.parent.mkdir(parents=True, exist_ok=True)
    _clean_partials(path)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = umask_mode(False)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".partial",
                               dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        _stage("file-written")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ----------------------------------------------------------------------------- directories

def _old_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.old")


def why_not_replaceable(target: str | Path) -> str | None:
    """Why the suite may not replace the directory ``target`` (None if it may): it exists
    and is not a directory, holds what the report did not write, or ``.NAME.old`` is in
    the way.  The one refuse-to-replace rule, checked before work starts
    (``verify._paths.validate_report_out``) and again at the swap (:func:`replace_dir`)."""
    target = Path(target).absolute()
    if os.path.lexists(target):
        if target.is_symlink() or not target.is_dir():
            return "it is a file, not a directory"
        ok, why = owns_directory(target)
        if not ok:
            return why
    old = _old_name(target)
    if os.path.lexists(old):
        return f"{old} exists and was not written by the report (no marker)"
    return None


def _staging_prefix(target: Path) -> str:
    return f".{target.name}.tmp"


def make_staging(target: str | Path) -> Path:
    """A new hidden staging directory next to ``target`` (mode from the umask), marked as
    staging with this process id so that a later run can clean it if this one is killed."""
    target = Path(target).absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=_staging_prefix(target), dir=target.parent))
    os.chmod(staging, umask_mode(True))
    _write_marker(staging, "staging")
    _stage("staging-created")
    return staging


def recover_interrupted(target: str | Path) -> list[str]:
    """Repair what a killed run left next to ``target``; returns what was done (one line
    each).  Only directories carrying the marker are touched."""
    target = Path(target).absolute()
    done: list[str] = []
    old = _old_name(target)
    if old.is_dir() and not old.is_symlink() and read_marker(old) is not None:
        if not os.path.lexists(target):
            os.replace(old, target)
            done.append(f"restored {target} from {old.name} (an earlier run was interrupted)")
        elif target.is_dir() and read_marker(target) is not None:
            shutil.rmtree(old)
            done.append(f"removed {old.name} left by an interrupted run")
    try:
        names = os.listdir(target.parent)
    except OSError:
        return done
    prefix = _staging_prefix(target)
    for n in names:
        if not n.startswith(prefix):
            continue
        p = target.parent / n
        if p.is_symlink() or not p.is_dir():
            continue
        m = read_marker(p)
        if m is None:
            continue
        if m.get("host") == socket.gethostname() and isinstance(m.get("pid"), int) \
                and _pid_alive(m["pid"]):
            continue  # a run in progress (possibly between its marker and its swap)
        if m.get("state") == "staging" and m.get("host") != socket.gethostname():
            continue  # another machine's run: cannot tell whether it is alive
        shutil.rmtree(p)
        done.append(f"removed staging directory {n} left by an interrupted run")
    return done


def replace_dir(staging: str | Path, target: str | Path) -> None:
    """Move the finished ``staging`` directory to ``target``.

    ``target`` may be missing, an empty directory, or a directory this suite wrote (marker
    listing all its entries); anything else raises ValueError and nothing is moved.  The
    marker is written into ``staging`` first; the previous report is deleted only after the
    new one is in place."""
    staging, target = Path(staging).absolute(), Path(target).absolute()
    if not staging.is_dir():
        raise ValueError(f"staging directory {staging} does not exist")
    recover_interrupted(target)
    why = why_not_replaceable(target)
    if why is not None:
        raise ValueError(f"refusing to replace {target}: {why}; choose a new or empty "
                         "directory for --out, or move it away")
    if os.path.lexists(target):
        if os.listdir(target) and read_marker(target) is None:
            _write_marker(target, "complete")  # adopt a report of an earlier version
    os.chmod(staging, umask_mode(True))
    _write_marker(staging, "complete")
    _stage("marked")
    if not os.path.lexists(target):
        os.replace(staging, target)
        _fsync_dir(target.parent)
        _stage("cleaned")
        return
    if not os.listdir(target):
        os.replace(staging, target)  # rename(2) replaces an empty directory
        _fsync_dir(target.parent)
        _stage("cleaned")
        return
    if _exchange(staging, target):
        # staging now holds the previous report (complete marker): delete it
        _fsync_dir(target.parent)
        _stage("exchanged")
        if read_marker(staging) is not None:
            shutil.rmtree(staging)
        _stage("cleaned")
        return
    old = _old_name(target)
    if os.path.lexists(old):  # absent at the check above: it appeared during the swap
        raise ValueError(f"refusing to replace {target}: {old} appeared meanwhile; move it "
                         "away and run again")
    os.replace(target, old)
    _stage("moved-aside")
    os.replace(staging, target)
    _fsync_dir(target.parent)
    _stage("swapped")
    if read_marker(old) is not None:
        shutil.rmtree(old)
    _stage("cleaned")
