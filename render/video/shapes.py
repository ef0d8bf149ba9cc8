"""Shapes kept between renders: the outlines Manim makes from Pango's text and LaTeX's formulas.

Manim parses an SVG into shapes once per process at most (and a Text not even that: it parses every time).
Parsing was most of what a text costs, and a still, a one-beat edit or a studio update is a new process, so
each parsed SVG is also kept in `<cache>/typeset/shapes/`, named by the SVG's bytes and how it is parsed,
and checked before use: a damaged or half-written entry is parsed again.

A text's SVG is parsed faster than Manim parses it, to the same shapes: Pango writes each glyph once, as
a symbol, and places it with a `use` at each character. svgelements parsed the whole document, then Manim
made a group for every element; here each placed glyph becomes the path svgelements would make of it (its
outline moved to its place, reified) and the shape Manim makes of that, with the fill of its group. Any
SVG of another form (a formula's, from dvisvgm) is parsed by Manim. Tested on every text of the film: the
same points and colours, exactly.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import pickle
import xml.etree.ElementTree as ET
import zlib
from contextlib import contextmanager
from pathlib import Path

from render.files import write_atomic
from render.engine import svg
from render.engine.internals import installed

log = logging.getLogger("film")

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
        svg.forget_source(part)
    payload = zlib.compress(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL), 1)
    write_atomic(path, hashlib.sha256(payload).digest() + payload)


SVG, XLINK = "{http://www.w3.org/2000/svg}", "{http://www.w3.org/1999/xlink}href"


def placed_glyphs(path: Path) -> list[tuple[str, str, str, str, str]] | None:
    """(outline, x, y, fill, fill opacity) of each glyph placed in a Pango text SVG, or None for an SVG of any
    other form: <defs><g><symbol id><path style="stroke:none;" d/></symbol>…</g></defs>, then
    <g id><g style="fill:…;fill-opacity:…;"><use xlink:href x y/>…</g>…</g>."""
    root = ET.parse(path).getroot()
    outlines: dict[str, str | None] = {}
    placed = []
    for child in root:
        if child.tag == SVG + "defs":
            for group in child:
                if group.tag != SVG + "g" or group.attrib:
                    return None
                for symbol in group:
                    paths = list(symbol)
                    if symbol.tag != SVG + "symbol" or len(paths) > 1 or any(
                            shape.tag != SVG + "path" or shape.get("style") != "stroke:none;"
                            or set(shape.attrib) != {"style", "d"} for shape in paths):
                        return None
                    outlines[symbol.get("id")] = paths[0].get("d") if paths else None
        elif child.tag == SVG + "g" and set(child.attrib) <= {"id"}:
            for group in child:
                if group.tag != SVG + "g" or set(group.attrib) != {"style"}:
                    return None
                style = dict(part.split(":", 1) for part in group.get("style").strip(";").split(";"))
                if set(style) != {"fill", "fill-opacity"}:
                    return None
                for use in group:
                    if use.tag != SVG + "use" or set(use.attrib) != {XLINK, "x", "y"}:
                        return None
                    placed.append((use.get(XLINK).removeprefix("#"), use.get("x"), use.get("y"), style["fill"],
                                   style["fill-opacity"]))
        else:
            return None
    return [(outlines[name], x, y, fill, opacity) for name, x, y, fill, opacity in placed if outlines.get(name)]


def glyph_shapes(mobject, glyphs: list[tuple[str, str, str, str, str]]) -> list:
    """Manim's shape of each placed glyph, as its SVG parse makes it (see the module's note)."""
    import svgelements as se

    shapes = []
    for outline, x, y, fill, opacity in glyphs:
        path = se.Path(outline, transform=f"translate({x},{y})")
        path.reify()
        path.fill, path.stroke, path.stroke_width = se.Color(fill), se.Color("none"), 0.0
        path.fill.opacity = float(opacity)
        shape = mobject.path_to_mobject(path)
        if shape.has_points():
            mobject.apply_style_to_mobject(shape, path)
            shapes.append(shape)
    return shapes


@contextmanager
def kept_shapes(cache: Path | None):
    """While rendering: each SVG Manim would parse is taken from `<cache>/typeset/shapes/` when kept there,
    and kept there once parsed."""
    if cache is None:
        yield
        return
    from manim import RIGHT
    from manim.mobject.svg import svg_mobject

    folder = Path(cache) / "typeset" / "shapes"
    folder.mkdir(parents=True, exist_ok=True)
    parse = svg_mobject.SVGMobject.init_svg_mobject

    def init_svg_mobject(mobject, use_svg_cache: bool):
        seed = svg.manim_key(mobject) if use_svg_cache else None  # Manim's own key
        if seed is not None and (seed, folder) not in written:
            written.add((seed, folder))
            path = folder / shape_name(mobject)  # Manim's own cache (svg.parsed) holds this process's shapes
            if svg.parsed(seed) is None and (kept := read_shape(path)) is not None:
                svg.remember(seed, kept)
            if svg.parsed(seed) is None:
                parse(mobject, use_svg_cache)  # parsed, and put in Manim's cache
                write_shape(path, svg.parsed(seed))
                return mobject
            if not path.is_file():  # parsed by an earlier render of this process that kept nothing
                write_shape(path, svg.parsed(seed))
        return parse(mobject, use_svg_cache)

    generate = svg_mobject.SVGMobject.generate_mobject

    def generate_mobject(mobject):
        glyphs = placed_glyphs(mobject.get_file_path())
        if glyphs is None:
            return generate(mobject)
        mobject.add(*glyph_shapes(mobject, glyphs))
        mobject.flip(RIGHT)  # as Manim's parse ends
        return mobject

    with installed((svg_mobject.SVGMobject, "init_svg_mobject", init_svg_mobject),
                   (svg_mobject.SVGMobject, "generate_mobject", generate_mobject)):
        yield
