"""Where files live, and the one way every output is written: whole or not at all.

Every result (a plan, a track, a beat, the film, a cache entry) is written to a temporary
file beside its destination and renamed over it, so an interrupted or failed run leaves a
good earlier output intact and a reader never sees half a file.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger("film")

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = PROJECT_ROOT / "data"
STORYBOARD_PATH = PROJECT_ROOT / "script" / "storyboard.yaml"
PAGE_SCRIPT_PATH = PROJECT_ROOT / "script" / "page.yaml"  # the film's page in words
BENCH_SCRIPT_PATH = PROJECT_ROOT / "script" / "bench.yaml"  # what make bench times on the film (its beats, its words)
BUILD_DIR = PROJECT_ROOT / "build"


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` for a writer (ffmpeg, PIL, numpy) to fill; renamed over
    `path` when the block succeeds, removed when it fails. Its suffix is the destination's,
    so tools that choose a format by extension still do."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}", dir=path.parent)
    os.close(handle)
    temporary = Path(temporary)
    try:
        yield temporary
        os.chmod(temporary, 0o666 & ~current_umask())  # mkstemp's 0600 would hide the result from others
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_atomic(path: Path, content: str | bytes) -> Path:
    """Write text (UTF-8) or bytes to `path`, durably and atomically."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with atomic_path(path) as temporary:
        with open(temporary, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
    return Path(path)


def resolved(path: Path | str) -> Path:
    """`path` absolute, its links followed as far as they go: Path.resolve() raises RuntimeError on a link loop (a save
    can make one: `ln -s storyboard.yaml storyboard.yaml`), which would end whoever asked (the studio's watcher)."""
    return Path(os.path.realpath(path))


LINK_LOOP = "a link that loops (a link to itself, or a circle of links)"


def file_kind(path: Path) -> str | None:
    """What is at `path` (links followed) when it is not a regular file: 'a folder', 'a FIFO', 'a device',
    'a socket', a link loop; None for a regular file or nothing at all."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            return LINK_LOOP
        if error.errno == errno.ENAMETOOLONG:
            return "a path too long for this file system"
        raise
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"


def read_capped(path: Path, limit: int, what: str, where: str | None = None) -> bytes:
    """A regular file's bytes, at most `limit` of them: the one way the project reads a file a user can edit or
    give (the storyboard, the catalog, pronunciations, measured datasets, configs, scenes' sources). A FIFO, a
    device (/dev/zero), a link loop or a file far larger than its kind ever is gets one message instead of a hang,
    a read that never ends or a traceback. FileNotFoundError passes through (callers say what was expected there)."""
    from render.errors import FilmError

    where = where or str(path)
    kind = file_kind(path)
    if kind is not None:
        raise FilmError(f"{where}: is {kind}, not a file; give the path of {what}")
    # O_NONBLOCK: should a FIFO replace the file after the check, opening it does not wait for a writer.
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENAMETOOLONG):
            raise FilmError(f"{where}: is {file_kind(path) or LINK_LOOP}, not a file; give the path of {what}") \
                from None
        raise
    with os.fdopen(descriptor, "rb") as stream:
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            raise FilmError(f"{where}: is not a regular file; give the path of {what}")
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise FilmError(f"{where}: is over {limit / 2**20:g} MiB, far larger than {what} ever is; "
                        f"is it the right file?")
    return data


def read_text_capped(path: Path, limit: int, what: str, where: str, missing: str, fix: str,
                     encoding: str = "utf-8") -> str:
    """A user's text file through read_capped, every failure one message naming `where`: `missing` where there is no
    such file, the system's reason where it cannot be read, the line of the first byte that is not UTF-8 and `fix`."""
    from render.errors import FilmError

    try:
        raw = read_capped(Path(path), limit, what, where)
    except FileNotFoundError:
        raise FilmError(f"{where}: {missing}") from None
    except OSError as error:
        raise FilmError(f"{where}: cannot read it ({error.strerror or error})") from None
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise FilmError(f"{where}:{line}: not UTF-8 text (byte 0x{raw[error.start]:02x}); {fix}") from None


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def record_made(output: Path, key_file: Path, key: str) -> None:
    """Note beside `output` what it was made from (`key`) and what it is (its checksum)."""
    write_atomic(key_file, f"{key}\n{file_digest(output)}\n")


def up_to_date(output: Path, key_file: Path, key: str) -> bool:
    """`output` was made from exactly `key` and is still the file that was made: a truncated or
    damaged output is made again, never trusted."""
    try:
        recorded_key, recorded_digest = key_file.read_text().split("\n")[:2]
    except (OSError, ValueError):
        return False
    if recorded_key != key or not output.exists():
        return False
    if file_digest(output) != recorded_digest:
        log.warning("%s has changed since it was made; making it again", output)
        return False
    return True


def move(finished: Path, path: Path) -> Path:
    """Move a finished file (a render another program wrote whole) to `path` in one step."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    os.replace(finished, path)
    return Path(path)


def replace_folder(built: Path, path: Path) -> Path:
    """Swap a folder built whole beside `path` into its place: the old one is moved aside first
    and removed only once the new one is in, so a reader sees one or the other."""
    built, path = Path(built), Path(path)
    aside = path.with_name(f".{path.name}.old.{os.getpid()}")
    if path.exists():
        os.replace(path, aside)
    os.replace(built, path)
    shutil.rmtree(aside, ignore_errors=True)
    return path


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def output_dir(choice_name: str, is_default: bool, build_dir: Path = BUILD_DIR) -> Path:
    """build/ for the storyboard's own choice, build/<gpu>-<model>-<dtype>/ for any other."""
    return Path(build_dir) if is_default else Path(build_dir) / choice_name


def cache_dir(build_dir: Path = BUILD_DIR) -> Path:
    """Shared by every choice: a clip or a beat is keyed by its content, not by the film."""
    return Path(build_dir) / "cache"


def memo_dir(build_dir: Path = BUILD_DIR) -> Path:
    """Where a project's computed results are kept (render/memo.py): under its own build folder's cache."""
    return cache_dir(build_dir) / "memo"


def link_or_copy(source: Path, target: Path) -> None:
    """`target` is `source` (a hard link), or a copy of it where the two cannot share a file."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


PROJECT_PARTS = ("render", "scenes", "script", "data", "pyproject.toml")


def copy_project(folder: Path, cache: Path | None = None) -> Path:
    """A copy of the project's code and files in `folder` (not its build), for edits a user might save; with `cache`,
    a build folder whose cache is a copy of that one (speech, typesetting, beats). The copy's compiled modules and the
    project's memo come along (each is checked before use: a module's against its source's time and size, a memo
    entry against the code and inputs it names), so the copy's first run does not compile or compute again what the
    project already has."""
    for part in PROJECT_PARTS:
        source = PROJECT_ROOT / part
        if source.is_dir():
            shutil.copytree(source, folder / part, symlinks=True)
        else:
            shutil.copy2(source, folder / part)
    if cache is not None:
        shutil.copytree(cache, folder / "build" / "cache", symlinks=True)
    if memo_dir().is_dir():
        copy_memo(memo_dir(), memo_dir(folder / "build"))
    return folder


def copy_memo(source: Path, target: Path) -> None:
    """The memo's entries as they are now, where another process may be writing to it: its half-written temporaries
    are not copied, and an entry replaced or removed while the copy runs is left out (each entry is checked before
    use, and one missing is made again)."""
    try:
        shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True, copy_function=shutil.copy2,
                        ignore=shutil.ignore_patterns(".*.tmp*"))
    except shutil.Error as error:  # (files gone between the listing and the copy: the rest were copied)
        if any(Path(entry[0]).exists() for entry in error.args[0]):
            raise  # (a file still there that could not be copied: a real failure)


def display_path(path: Path) -> str:
    """The path relative to the working directory where possible (what a user typed)."""
    return _display_path(str(path), os.getcwd())


@functools.lru_cache(maxsize=4096)
def _display_path(path: str, cwd: str) -> str:
    # Every value's place is worded as it is read: resolving the same few paths again was most of reading a file.
    for absolute in (os.path.abspath, resolved):  # a link's own name first: data/measured/x.yaml, not /dev/zero
        try:
            return str(Path(absolute(path)).relative_to(absolute(cwd)))
        except ValueError:
            continue
    return path
