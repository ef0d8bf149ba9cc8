"""The scenes' source files as the engine reads them: through the capped reader, parsed once per version of a file.

A half-typed scene is the normal state of a file while it is edited: a syntax error is one message naming the file
and line (the studio shows it and goes on; `film plan` prints it), never a traceback from `ast.parse`.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import warnings
from pathlib import Path

from render.errors import FilmError
from render.files import PROJECT_ROOT, read_capped
from render.memo import key_of, remembered
from render.specs.yamlio import display_path

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


_WALKED: dict[tuple[str, bool], tuple[tuple, list[Path], str]] = {}  # (module, drawn) -> (its files' states, its
# files, their digest)


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


def walked(module: str, drawn: bool = True) -> tuple[tuple, list[Path], str]:
    """scene_sources's files and a digest of their names and bytes, walked and read again only when one of those
    files, or a folder holding one, has changed since (the studio looks up each beat's key several times an
    update)."""
    known = _WALKED.get((module, drawn))
    if known is not None and known[0] and file_states(known[1]) == known[0]:
        return known
    files = walk_sources(module, drawn)
    states = file_states(files)  # (before the reads: a file saved meanwhile is walked again next time)
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        digest.update(source_bytes(path))
    _WALKED[module, drawn] = known = (states, files, digest.hexdigest())
    return known


def scene_sources(module: str) -> list[Path]:
    """The files a beat's pictures depend on: its scene module and every project module it imports, followed through
    scenes/ and render/ alike, with the engine that draws any beat (render/video/beats.py) and every module that
    installs one of the renderer's patches on Manim, PyAV or svgelements (render/engine/internals.py), and what those
    import."""
    return list(walked(module)[1])


def sources_digest(module: str) -> str:
    """A digest of the names and bytes of the files a beat's pictures depend on (scene_sources)."""
    return walked(module)[2]


def code_digest(module: str) -> str:
    """A digest of the names and bytes of a project module and every project module it imports, at any depth: what a
    result computed by that module's code alone depends on among the project's files (render/plan/load.py's kept
    simulations)."""
    return walked(module, drawn=False)[2]


def walk_sources(module: str, drawn: bool = True) -> list[Path]:
    """The files of `module` and every project module it imports; `drawn`: with the engine that draws a beat."""
    seen: set[str] = set()
    pending = [module]
    if drawn:
        from render.engine.internals import PATCHED

        pending += ["render.engine.scene", "render.video.beats", "render.engine.internals",
                    *(module_name(PROJECT_ROOT / patch.where) for patch in PATCHED)]
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


@functools.cache
def library_versions() -> str:
    """The installed releases a beat's pictures depend on: Manim, the Cairo and Pango it draws with (the Python
    bindings and the C libraries they load), PyAV and the FFmpeg libraries it encodes with, svgelements, and the
    ffmpeg command's own version (it joins and holds a beat's frames)."""
    import importlib.metadata

    from render import media

    versions = {}
    for package in ("manim", "pycairo", "manimpango", "av", "svgelements", "ffmpeg-python"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "absent"
    try:
        import av
        import cairo
        import manimpango

        versions["cairo library"] = cairo.cairo_version_string()
        versions["pango library"] = manimpango.pango_version()
        versions["ffmpeg libraries (PyAV)"] = str(getattr(av, "ffmpeg_version_info", None)
                                                  or sorted(av.library_versions.items()))
    except ImportError as error:  # (the internals check names a missing library; the key only records it)
        versions["import"] = str(error)
    versions["ffmpeg command"] = media.ffmpeg_version()
    return json.dumps(versions, sort_keys=True)
