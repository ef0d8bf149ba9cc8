"""The project's Python sources as the engine and the memo read them: through the capped reader, parsed once per
version of a file, each file's imports followed through render/ and scenes/, and a digest of the files a module's code
reaches (a beat's cache key: render/video/sources.py; a kept simulation: computed, below).

A half-typed scene is the normal state of a file while it is edited: a syntax error is one message naming the file
and line (the studio shows it and goes on; `film plan` prints it), never a traceback from `ast.parse`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import pickle
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from render.errors import FilmError
from render.files import PROJECT_ROOT, display_path, read_capped, write_atomic
from render import memo
from render.memo import key_of, remembered

T = TypeVar("T")

MAX_SOURCE_BYTES = 1 << 20  # the longest scene module is about 20 kB

_PARSED: dict[Path, tuple[bytes, ast.Module]] = {}  # path -> (digest of its bytes, its tree)
_IMPORTS: dict[Path, tuple[tuple, list[str]]] = {}  # path -> (its state, the dotted names its imports give)
_THIS_CODE = Path(__file__).read_bytes()  # (the import names' memo key: this file's way of reading them)
_ROOT_TEXT = str(PROJECT_ROOT) + os.sep
PROJECT_PACKAGES = ("render", "scenes")


def source_bytes(path: Path) -> bytes:
    """A scene module's bytes (a FIFO, a device or a link loop in its place is one message)."""
    try:
        return read_capped(Path(path), MAX_SOURCE_BYTES, "a Python module", display_path(path))
    except FileNotFoundError:
        raise FilmError(f"{display_path(path)}: not found; a scene imports it (put it back, or change the import)") \
            from None
    except OSError as error:
        raise FilmError(f"{display_path(path)}: cannot read it ({error.strerror or error})") from None


def source_tree(path: Path) -> ast.Module:
    """A scene module parsed, again only when its bytes change."""
    return parsed(Path(path))[1]


def scene_imports(path: Path, name: str | None = None, paths: dict[str, Path | None] | None = None) -> list[str]:
    """The project modules a file imports, in any form and at any depth (`import render.formulas`, `from scenes
    import copying`, `from .style import …`, an import inside a function), each with the packages above it (whose
    `__init__.py` runs first). The names its imports give are worked out again only when its bytes change, in this
    process or any other (render/memo.py: a command walks some 150 files); which of them are project modules is
    looked up each time. In one process a file is read again only when its state (file_states) changes: the cue
    check walks each beat's scene, and the beats share most of their imports."""
    path = Path(path)
    state = file_states([path])
    known = _IMPORTS.get(path)
    if known is not None and state and known[0] == state:
        return project_modules(known[1], paths)
    data = source_bytes(path)
    if name is None:
        try:
            name = module_name(path)
        except ValueError:  # (a file outside the project)
            name = str(path)
    payload = remembered("imports", key_of("imports", name, path.name, _THIS_CODE, data),
                         lambda: json.dumps(import_names(parsed(path)[1], path)).encode())
    named = json.loads(payload)
    _IMPORTS[path] = (state, named)
    return project_modules(named, paths)


def module_path(name: str) -> Path | None:
    """The file a project module's name stands for: its .py file, or its package's __init__.py (None: not one)."""
    relative = _ROOT_TEXT + name.replace(".", os.sep)
    for candidate in (relative + ".py", relative + os.sep + "__init__.py"):
        if os.path.isfile(candidate):
            return Path(candidate)
    return None


def module_name(path: Path) -> str:
    text = str(path)
    if text.startswith(_ROOT_TEXT) and text.endswith(".py") and os.sep + "." not in text and not os.path.islink(text):
        parts = text[len(_ROOT_TEXT):-3].split(os.sep)  # (a file module_path found: no link or .. to resolve)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    relative = Path(path).resolve().relative_to(PROJECT_ROOT.resolve()).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def top_classes(path: Path) -> list[str] | None:
    """The names of the classes a module defines at its top level (None: it does not parse, or cannot be read), worked
    out again only when its bytes change (render/memo.py: the storyboard checks each beat's class on every run)."""
    try:
        data = source_bytes(path)
        payload = remembered("classes", key_of("classes", _THIS_CODE, data), lambda: json.dumps(
            [node.name for node in parsed(Path(path))[1].body if isinstance(node, ast.ClassDef)]).encode())
    except FilmError:
        return None
    return json.loads(payload)


def import_names(tree: ast.Module, path: Path) -> list[str]:
    """Every dotted name a module's imports give (relative ones made absolute), in the order they stand."""
    try:
        name = module_name(path)
    except ValueError:  # (a file outside the project: its relative imports are not ours to follow)
        name = ""
    package = name if Path(path).name == "__init__.py" else name.rpartition(".")[0]
    named: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, base] if base else parts)
            named.append(base)
            named += [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]  # a submodule, if one
    return named


def project_modules(named: list[str], paths: dict[str, Path | None] | None = None) -> list[str]:
    """Of dotted names, the project's modules (and each package above one), in order, each once (`paths`: the files
    names were found to stand for, looked up once in one walk)."""
    paths = {} if paths is None else paths
    found: list[str] = []
    for full in named:
        parts = full.split(".")
        if parts[0] not in PROJECT_PACKAGES:
            continue
        for depth in range(1, len(parts) + 1):
            prefix = ".".join(parts[:depth])
            if prefix not in paths:
                paths[prefix] = module_path(prefix)
            if prefix not in found and paths[prefix] is not None:
                found.append(prefix)
    return found


def parsed(path: Path) -> tuple[bytes, ast.Module]:
    data = source_bytes(path)
    digest = hashlib.sha256(data).digest()
    known = _PARSED.get(path)
    if known is not None and known[0] == digest:
        return known
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # ("invalid escape sequence": Python's to report, on import)
            tree = ast.parse(data, filename=str(path))
    except SyntaxError as error:
        column = f":{error.offset}" if error.offset else ""
        raise FilmError(f"{display_path(path)}:{error.lineno or 1}{column}: {error.msg} (a Python syntax error); "
                        f"fix it and save the file again") from None
    except (ValueError, RecursionError, MemoryError) as error:  # a NUL byte; nesting beyond the parser's limits
        raise FilmError(f"{display_path(path)}: cannot be parsed as Python ({type(error).__name__}: {error})") \
            from None
    _PARSED[path] = known = (digest, tree)
    return known


_WALKED: dict[tuple[str, ...], tuple[tuple, list[Path]]] = {}  # roots -> (its files' states, its files)
_DIGESTS: dict[tuple[str, ...], tuple[tuple, str]] = {}  # roots -> (its files' states, their digest)


def file_states(paths: list[Path]) -> tuple:
    """What each file and each folder holding one is now (inode, size, change and modification times): a file written
    again, or a file made, renamed or removed beside one, changes it."""
    states = []
    for path in [*paths, *sorted({path.parent for path in paths})]:
        try:
            found = os.stat(path)
        except OSError:
            return ()
        states.append((found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns))
    return tuple(states)


def walked_files(roots: tuple[str, ...]) -> tuple[tuple, list[Path]]:
    """The files of the modules `roots` and of every project module they import, at any depth, with their states,
    walked again only when one of those files, or a folder holding one, has changed since: in this process (the
    studio looks up each beat's key several times an update) or, through the memo's walks/, in any other (a command
    resolves its plan and its beats' keys from some 150 files)."""
    known = _WALKED.get(roots)
    if known is not None and known[0] and file_states(known[1]) == known[0]:
        return known
    kept = kept_walk(roots)
    if kept is not None:
        _WALKED[roots] = known = (kept[0], kept[1])
        if kept[2]:
            _DIGESTS[roots] = (kept[0], kept[2])
        return known
    files = walk(roots)
    _WALKED[roots] = known = (file_states(files), files)
    keep_walk(roots, known[0], files, None)
    return known


def walked(roots: tuple[str, ...]) -> tuple[tuple, list[Path], str]:
    """walked_files, and a digest of those files' names and bytes, read again only when one of those files, or a
    folder holding one, has changed since."""
    states, files = walked_files(roots)
    known = _DIGESTS.get(roots)
    if known is not None and states and known[0] == states:
        return states, files, known[1]
    digest = hashlib.sha256()
    for path in files:  # (read after their states were taken: a file saved meanwhile is read again next time)
        digest.update(path.name.encode())
        digest.update(source_bytes(path))
    _DIGESTS[roots] = (states, digest.hexdigest())
    keep_walk(roots, states, files, digest.hexdigest())
    return states, files, digest.hexdigest()


RACY_NS = 2_000_000_000  # a file changed this recently may change again within its timestamps' resolution


def walk_record(roots: tuple[str, ...]) -> Path:
    """Named by the project's folder too: a copy of the project (with its memo) walks its own files, not these."""
    return memo.MEMO_DIR / "walks" / f"{key_of('walk', _THIS_CODE, str(PROJECT_ROOT), *roots)}.json"


def kept_walk(roots: tuple[str, ...]) -> tuple[tuple, list[Path], str | None] | None:
    """A walk another process kept, if every file it found, and every folder holding one, is as it was then (inode,
    size, modification and change times: a file written again, or made, renamed or removed beside one, is a miss)."""
    try:
        record = json.loads(walk_record(roots).read_bytes())
        files = [Path(name) for name in record["files"]]
        states = tuple(tuple(state) for state in record["states"])
        digest = record["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not states or file_states(files) != states or not (digest is None or isinstance(digest, str)):
        return None
    return states, files, digest


def keep_walk(roots: tuple[str, ...], states: tuple, files: list[Path], digest: str | None) -> None:
    """Keep a walk for other processes, unless one of its files or folders changed in the last two seconds (as git's
    index does: a second save in the same tick of the clock would leave its state as it was)."""
    if not states or max(max(state[2], state[3]) for state in states) > time.time_ns() - RACY_NS:
        return
    record = {"files": [str(path) for path in files], "states": [list(state) for state in states], "digest": digest}
    try:
        walk_record(roots).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(walk_record(roots), json.dumps(record))
    except OSError:
        pass  # (a read-only or full build folder: walked again next time)


def walk(roots: tuple[str, ...]) -> list[Path]:
    """The files of the modules `roots` and of every project module they import, at any depth."""
    seen: set[str] = set()
    found: dict[str, Path] = {}
    paths: dict[str, Path | None] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        path = paths[name] if name in paths else module_path(name)
        if path is None:
            source_bytes(PROJECT_ROOT / (name.replace(".", "/") + ".py"))  # names the missing file
            continue
        found[name] = path
        pending += scene_imports(path, name, paths)
    return sorted(found.values())


def code_digest(module: str) -> str:
    """A digest of the names and bytes of a project module and every project module it imports, at any depth: what a
    result computed by that module's code alone depends on among the project's files (computed, below)."""
    return walked((module,))[2]


def computed(kind: str, module: str, inputs: object, make: Callable[[], T]) -> T:
    """What `make()` returns, kept between processes: named by the bytes of `module` and of every project module it
    imports at any depth, numpy's release and `inputs`' repr (frozen dataclasses and numbers: everything the result
    is computed from), so an edit to any of that code or any input names another entry. An exception is not kept."""
    import numpy

    key = key_of(kind, code_digest(module), numpy.__version__, repr(inputs))
    return pickle.loads(remembered(kind, key, lambda: pickle.dumps(make(), protocol=pickle.HIGHEST_PROTOCOL)))
