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
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from render.errors import FilmError
from render.files import PROJECT_ROOT, display_path, read_capped
from render.memo import key_of, remembered

T = TypeVar("T")

MAX_SOURCE_BYTES = 1 << 20  # the longest scene module is about 20 kB

_PARSED: dict[Path, tuple[bytes, ast.Module]] = {}  # path -> (digest of its bytes, its tree)
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


def scene_imports(path: Path) -> list[str]:
    """The project modules a file imports, in any form and at any depth (`import render.formulas`, `from scenes
    import copying`, `from .style import …`, an import inside a function), each with the packages above it (whose
    `__init__.py` runs first). The names its imports give are worked out again only when its bytes change, in this
    process or any other (render/memo.py: a command walks some 500 files); which of them are project modules is
    looked up each time."""
    path = Path(path)
    data = source_bytes(path)
    try:
        name = module_name(path)
    except ValueError:  # (a file outside the project)
        name = str(path)
    payload = remembered("imports", key_of("imports", name, path.name, Path(__file__).read_bytes(), data),
                         lambda: json.dumps(import_names(parsed(path)[1], path)).encode())
    return project_modules(json.loads(payload))


def module_path(name: str) -> Path | None:
    """The file a project module's name stands for: its .py file, or its package's __init__.py (None: not one)."""
    relative = name.replace(".", "/")
    for candidate in (PROJECT_ROOT / f"{relative}.py", PROJECT_ROOT / relative / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path) -> str:
    relative = Path(path).resolve().relative_to(PROJECT_ROOT.resolve()).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


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


def project_modules(named: list[str]) -> list[str]:
    """Of dotted names, the project's modules (and each package above one), in order, each once."""
    found: list[str] = []
    for full in named:
        parts = full.split(".")
        if parts[0] not in PROJECT_PACKAGES:
            continue
        for depth in range(1, len(parts) + 1):
            prefix = ".".join(parts[:depth])
            if prefix not in found and module_path(prefix) is not None:
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


_WALKED: dict[tuple[str, ...], tuple[tuple, list[Path], str]] = {}  # roots -> (its files' states, its files, their
# digest)


def file_states(paths: list[Path]) -> tuple:
    """What each file and each folder holding one is now (inode, size, change and modification times): a file written
    again, or a file made, renamed or removed beside one, changes it."""
    states = []
    for path in [*paths, *sorted({path.parent for path in paths})]:
        try:
            found = path.stat()
        except OSError:
            return ()
        states.append((found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns))
    return tuple(states)


def walked(roots: tuple[str, ...]) -> tuple[tuple, list[Path], str]:
    """The files of the modules `roots` and of every project module they import, at any depth, and a digest of their
    names and bytes, walked and read again only when one of those files, or a folder holding one, has changed since
    (the studio looks up each beat's key several times an update)."""
    known = _WALKED.get(roots)
    if known is not None and known[0] and file_states(known[1]) == known[0]:
        return known
    files = walk(roots)
    states = file_states(files)  # (before the reads: a file saved meanwhile is walked again next time)
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        digest.update(source_bytes(path))
    _WALKED[roots] = known = (states, files, digest.hexdigest())
    return known


def walk(roots: tuple[str, ...]) -> list[Path]:
    """The files of the modules `roots` and of every project module they import, at any depth."""
    seen: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        path = module_path(name)
        if path is None:
            source_bytes(PROJECT_ROOT / (name.replace(".", "/") + ".py"))  # names the missing file
            continue
        pending += scene_imports(path)
    return sorted(module_path(name) for name in seen)


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
