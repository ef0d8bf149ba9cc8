"""Every place the renderer reaches into Manim, PyAV or svgelements, listed once, and the versions it was tested on.

Speed-ups that replace a library's own methods (a deep copy that shares what never changes, families listed in one
pass, frames handed to the encoder without new buffers, parsed outlines kept between renders, a renderer that
writes only its part of a beat) rely on internals a release may change without notice. `install` (and `installed`,
for the length of a render) is the one place a library's attribute is assigned: it checks the installed releases
against TESTED first (once; an untested one is refused with one message) and sets only what PATCHED lists. The sites
that reach in call it while a beat renders; nothing patches at import. What is only read (a private member of
Manim's segment encoder, its SVG cache) is listed too, and reached from one module of render/engine/ each. A test
checks that every name listed here exists in the installed libraries, that no other module assigns a library
attribute, and that no module reads or sets a private member of anything but its own objects outside this list.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from dataclasses import dataclass

from render.errors import FilmError

# The releases the patches below were tested on (a version matches by its prefix); pyproject.toml pins the same.
TESTED = {"manim": ("0.22.",), "av": ("18.",), "svgelements": ("1.9.",)}


@dataclass(frozen=True)
class Patch:
    library: str
    name: str      # from the library's root: the internal replaced or relied on
    where: str     # the module that reaches in
    why: str
    adds: bool = False      # the library's class has no such attribute: the renderer adds it
    instance: bool = False  # an attribute the library's own __init__ sets on each object (not on the class)
    reads: bool = False     # relied on, never assigned (install refuses it)


def manim(name: str, where: str, why: str) -> Patch:
    return Patch("manim", name, where, why)


# In the order a render meets them.
PATCHED = (
    manim("mobject.mobject.Mobject.__deepcopy__", "render/engine/copying.py",
          "a copy shares the parts that never change (points stay, colours and parsed paths are immutable)"),
    Patch("manim", "utils.color.core.ManimColor.__deepcopy__", "render/engine/copying.py", "colours are immutable",
          adds=True),
    Patch("svgelements", "Path.__deepcopy__", "render/engine/copying.py", "a glyph's copies share its parsed path",
          adds=True),
    manim("mobject.mobject.Mobject.get_family", "render/engine/families.py", "a family listed in one pass"),
    manim("camera.camera.Camera.set_cairo_context_path", "render/engine/camera.py",
          "an outline traced once while its points stay the same (overridden in KeptPathCamera)"),
    manim("renderer.cairo_renderer.CairoRenderer.freeze_current_frame", "render/engine/drawing.py",
          "a held frame written for this part of the beat only"),
    manim("renderer.cairo_renderer.CairoRenderer.render", "render/engine/drawing.py",
          "each frame drawn once, by layers, within the part"),
    manim("renderer.cairo_renderer.CairoRenderer.save_static_frame_data", "render/engine/drawing.py",
          "nothing drawn for a skipped play"),
    manim("renderer.cairo_renderer.CairoRenderer.update_frame", "render/engine/drawing.py",
          "nothing drawn for a skipped play"),
    Patch("manim", "renderer.cairo_renderer.CairoRenderer.static_image", "render/engine/drawing.py",
          "no background kept for a skipped play", adds=True),
    Patch("manim", "renderer.cairo_renderer.CairoRenderer._original_skipping_status", "render/engine/drawing.py",
          "a play wholly before the part skipped, as Manim's own skipping does", adds=True),
    manim("renderer.cairo_renderer.CairoRenderer.get_frame", "render/video/frames.py",
          "frames handed over in kept buffers"),
    manim("scene.video_segment_encoder.VideoSegmentEncoder.write_frame", "render/video/frames.py",
          "kept buffers, and a held picture's repeats made rather than encoded"),
    manim("scene.video_segment_encoder.VideoSegmentEncoder.finish", "render/video/frames.py",
          "the held picture's repeats written at the end"),
    # What render/video/frames.py's encoding reaches through render/engine/encoder.py, the only module to touch them.
    Patch("manim", "scene.video_segment_encoder.VideoSegmentEncoder._validate_frame", "render/engine/encoder.py",
          "Manim's own check of each frame handed over", reads=True),
    Patch("manim", "scene.video_segment_encoder.VideoSegmentEncoder._stream", "render/engine/encoder.py",
          "the stream's codec context (size, format, threads, x264's options) and its encode", instance=True,
          reads=True),
    Patch("manim", "scene.video_segment_encoder.VideoSegmentEncoder._container", "render/engine/encoder.py",
          "packets muxed, and the file closed after the held repeats", instance=True, reads=True),
    Patch("manim", "scene.video_segment_encoder.VideoSegmentEncoder._operation_error", "render/engine/encoder.py",
          "a failed encode or finish raised as Manim raises it", reads=True),
    Patch("manim", "scene.video_segment_encoder.VideoSegmentEncoder._next_pts", "render/engine/encoder.py",
          "each frame's time: the counter moved on past every frame written, held repeats included", instance=True),
    Patch("manim", "scene.video_segment_encoder.VideoSegmentEncoder._closed", "render/engine/encoder.py",
          "a segment whose held repeats are written marked closed, as Manim's own finish marks it", instance=True),
    Patch("av", "VideoFrame.reformat", "render/video/frames.py",
          "the kept picture converted to the encoder's format (with its stream's codec context, Manim's _stream)"),
    manim("mobject.svg.svg_mobject.SVGMobject.init_svg_mobject", "render/video/shapes.py",
          "text's and formulas' outlines kept between renders"),
    manim("mobject.svg.svg_mobject.SVGMobject.generate_mobject", "render/video/shapes.py",
          "text's and formulas' outlines kept between renders"),
    # What render/video/shapes.py's kept shapes reach through render/engine/svg.py.
    Patch("manim", "mobject.svg.svg_mobject.hash_obj", "render/engine/svg.py",
          "Manim's own key for a parsed SVG (not in svg_mobject's __all__)", reads=True),
    Patch("manim", "mobject.svg.svg_mobject.SVG_HASH_TO_MOB_MAP", "render/engine/svg.py",
          "Manim's own cache of parsed SVGs for this process, read and filled with kept shapes", reads=True),
    Patch("manim", "mobject.svg.svg_mobject.VMobjectFromSVGPath.path_obj", "render/engine/svg.py",
          "a kept shape's pieces without the svgelements path they were made from", instance=True),
)


@functools.cache
def check_versions() -> None:
    """Refuse a library whose internals the patches were not tested on: one message naming what to do."""
    import importlib.metadata  # (here: 0.08 s of every command that only names the patched modules)

    for library, prefixes in TESTED.items():
        try:
            version = importlib.metadata.version(library)
        except importlib.metadata.PackageNotFoundError:  # importable, but no dist-info says which release it is
            names = ", ".join(".".join(patch.name.split(".")[-2:]) for patch in PATCHED if patch.library == library)
            raise FilmError(f"{library} has no package metadata (its dist-info is missing), so which release it is "
                            f"cannot be told, and the renderer reaches into its internals ({names}) as tested on "
                            f"{' or '.join(prefix + 'x' for prefix in prefixes)}: an untested release. Run `make "
                            f"setup` to install the tested one (pyproject.toml pins it)") from None
        if not version.startswith(prefixes):
            names = ", ".join(".".join(patch.name.split(".")[-2:]) for patch in PATCHED if patch.library == library)
            raise FilmError(f"{library} {version} is installed, but the renderer reaches into its internals ({names}) "
                            f"as tested on {' or '.join(prefix + 'x' for prefix in prefixes)}; run `make setup` to "
                            f"install the tested release (pyproject.toml pins it), or test "
                            f"render/engine/internals.py's list against {version} and add it to TESTED")



LISTED = frozenset(".".join(patch.name.split(".")[-2:]) for patch in PATCHED if not patch.reads)  # what is set


def install(owner: object, name: str, value: object) -> None:
    """Set `owner.name` to `value`: a library class's method, or what one of its objects holds (Manim's renderer's
    hooks and state). The installed releases are checked first; a name PATCHED does not list is refused."""
    check_versions()
    listed = f"{(owner if inspect.isclass(owner) else type(owner)).__name__}.{name}"
    if listed not in LISTED:
        raise FilmError(f"the renderer sets {listed}, which render/engine/internals.py does not list: add it to "
                        f"PATCHED, with where it is set and why")
    setattr(owner, name, value)


@contextlib.contextmanager
def installed(*replacements: tuple[object, str, object]):
    """Each (owner, name, value) installed for the length of the block, the library's own put back after."""
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in replacements]
    for owner, name, value in replacements:
        install(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in reversed(originals):
            install(owner, name, value)
