"""Shapes kept between renders: the outlines Manim makes from Pango's text and LaTeX's formulas.

Manim parses an SVG into shapes once per process at most (and a Text not even that: it parses every time).
Parsing was most of what a text costs, and a still, a one-beat edit or a studio update is a new process, so
each parsed SVG is also kept in `<cache>/typeset/shapes/`, named by the SVG's bytes and how it is parsed,
and checked before use: a damaged or half-written entry is parsed again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import pickle
import zlib
from contextlib import contextmanager
from pathlib import Path

from render.files import write_atomic

log = logging.getLogger(__name__)

FORMAT = 1
written: set[tuple[int, Path]] = set()  # (Manim's key, folder): shapes this process has kept there or found


def shape_name(mobject) -> str:
    """The entry's name: the SVG's bytes and everything else Manim's own cache key holds but the path."""
    class_name, defaults, path_config, _file_name, renderer = mobject.hash_seed
    digest = hashlib.sha256(Path(mobject.get_file_path()).read_bytes())
    digest.update(json.dumps([FORMAT, importlib.metadata.version("manim"), class_name, str(renderer)]).encode())
    digest.update(repr(sorted(defaults.items())).encode() + repr(sorted(path_config.items())).encode())
    return digest.hexdigest()[:32] + ".shape"


def read_shape(path: Path):
    """The kept shape, or None when there is none or it fails its check."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest, payload = data[:32], data[32:]
    try:
        if hashlib.sha256(payload).digest() != digest:
            raise ValueError("its checksum does not match")
        return pickle.loads(zlib.decompress(payload))
    except (ValueError, zlib.error, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ImportError,
            IndexError) as error:
        log.warning("kept shape %s is damaged (%s); parsing its SVG again", path.name, error)
        path.unlink(missing_ok=True)
        return None


def write_shape(path: Path, shape) -> None:
    kept = shape.copy()
    for part in kept.get_family():
        if hasattr(part, "path_obj"):
            part.path_obj = None  # what its points were made from: not needed again
    payload = zlib.compress(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL), 1)
    write_atomic(path, hashlib.sha256(payload).digest() + payload)


@contextmanager
def kept_shapes(cache: Path | None):
    """While rendering: each SVG Manim would parse is taken from `<cache>/typeset/shapes/` when kept there,
    and kept there once parsed."""
    if cache is None:
        yield
        return
    from manim.mobject.svg import svg_mobject

    folder = Path(cache) / "typeset" / "shapes"
    folder.mkdir(parents=True, exist_ok=True)
    parse = svg_mobject.SVGMobject.init_svg_mobject

    def init_svg_mobject(mobject, use_svg_cache: bool):
        seed = svg_mobject.hash_obj(mobject.hash_seed) if use_svg_cache else None  # Manim's own key
        if seed is not None and (seed, folder) not in written:
            written.add((seed, folder))
            in_memory = svg_mobject.SVG_HASH_TO_MOB_MAP  # Manim's own cache, for this process
            path = folder / shape_name(mobject)
            if seed not in in_memory and (kept := read_shape(path)) is not None:
                in_memory[seed] = kept
            if seed not in in_memory:
                parse(mobject, use_svg_cache)  # parsed, and put in Manim's cache
                write_shape(path, in_memory[seed])
                return mobject
            if not path.is_file():  # parsed by an earlier render of this process that kept nothing
                write_shape(path, in_memory[seed])
        return parse(mobject, use_svg_cache)

    svg_mobject.SVGMobject.init_svg_mobject = init_svg_mobject
    try:
        yield
    finally:
        svg_mobject.SVGMobject.init_svg_mobject = parse
