"""The scenes' source files as the engine reads them: through the capped reader, parsed once per version of a file.

A half-typed scene is the normal state of a file while it is edited: a syntax error is one message naming the file
and line (the studio shows it and goes on; `film plan` prints it), never a traceback from `ast.parse`.
"""

from __future__ import annotations

import ast
import hashlib
import warnings
from pathlib import Path

from render.errors import FilmError
from render.files import PROJECT_ROOT, read_capped
from render.specs.yamlio import display_path

MAX_SOURCE_BYTES = 1 << 20  # the longest scene module is about 20 kB

_PARSED: dict[Path, tuple[bytes, ast.Module, list[str]]] = {}  # path -> (digest of its bytes, tree, scene imports)


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
    """The scene modules a file imports (`from scenes.helpers import …`), found again only when its bytes change: a
    film looks up 27 beat keys, each reading its scene's imports."""
    return list(parsed(Path(path))[2])


def parsed(path: Path) -> tuple[bytes, ast.Module, list[str]]:
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
    imports = [node.module for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("scenes.")]
    _PARSED[path] = known = (digest, tree, imports)
    return known


def scene_sources(module: str) -> list[Path]:
    """The files a beat's pictures depend on: its scene module, the scene modules it imports,
    the formatter and the renderer."""
    seen: set[str] = set()
    pending = [module, "scenes.base"]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        pending += scene_imports(PROJECT_ROOT / (name.replace(".", "/") + ".py"))
    shared = ["render/formatting.py", "render/plan/tracking.py", "render/video/beats.py"]
    return sorted([PROJECT_ROOT / (name.replace(".", "/") + ".py") for name in seen]
                  + [PROJECT_ROOT / path for path in shared])
