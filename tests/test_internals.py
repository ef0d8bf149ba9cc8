"""Whatever reaches into Manim, PyAV or svgelements does so from one list, checked against the tested versions
(issue 44): render/engine/internals.py."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import json
import re
from pathlib import Path

import pytest

from render.errors import FilmError
from render.engine import internals

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = ("manim", "av", "svgelements")
RENDERERS = {"renderer", "self.renderer"}  # what the scenes call Manim's renderer


def resolve(library: str, name: str) -> object:
    """The object a dotted name from a library's root names in the installed library (an AttributeError or an
    ImportError if a release moved or removed it)."""
    attributes = name.split(".")
    module = importlib.import_module(library)
    for index in range(len(attributes), 0, -1):
        try:
            module = importlib.import_module(".".join([library, *attributes[:index]]))
        except ImportError:
            continue
        attributes = attributes[index:]
        break
    found = module
    for attribute in attributes:
        found = getattr(found, attribute)
    return found


def test_every_internal_listed_is_there_in_the_installed_libraries():
    """Each name listed exists: on its class or module, or (an instance's attribute) assigned to `self.NAME` in its
    class's own code, which a release that renamed it would no longer do."""
    import inspect
    import textwrap

    for patch in internals.PATCHED:
        owner, _, attribute = patch.name.rpartition(".")
        found = resolve(patch.library, owner)
        if patch.instance:
            tree = ast.parse(textwrap.dedent(inspect.getsource(found)))
            assigned = {target.attr for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AugAssign,
                                                                                   ast.AnnAssign))
                        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                        if isinstance(target, ast.Attribute) and dotted(target.value) == "self"}
            assert attribute in assigned, f"{patch.library}.{patch.name}: {owner} no longer sets self.{attribute}"
        else:
            assert patch.adds or hasattr(found, attribute), f"{patch.library}.{patch.name} is gone"
        assert (ROOT / patch.where).is_file(), patch.where


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return ""


def replaced_in(path: Path) -> set[str]:
    """The attributes a module sets on the libraries' objects: a class or module imported from them (or a name
    bound to one), or Manim's renderer, as `Owner.attribute`."""
    tree = ast.parse(path.read_text())
    library_names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in LIBRARIES:
            library_names.update({alias.asname or alias.name: alias.name for alias in node.names})
        elif isinstance(node, ast.Import):
            library_names.update({(alias.asname or alias.name): alias.name for alias in node.names
                                  if alias.name.split(".")[0] in LIBRARIES})
    for node in ast.walk(tree):  # names bound to a library's object (encoder_class = module.Class)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            source = dotted(node.value)
            if source.split(".")[0] in library_names:
                library_names[node.targets[0].id] = source.split(".")[-1]
    found = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            for each in (target.elts if isinstance(target, ast.Tuple) else [target]):
                if not isinstance(each, ast.Attribute):
                    continue
                owner = dotted(each.value)
                if owner in RENDERERS:
                    found.add(f"CairoRenderer.{each.attr}")
                elif owner.split(".")[0] in library_names:
                    found.add(f"{library_names.get(owner, owner.split('.')[-1])}.{each.attr}")
    return found


def test_only_the_one_switch_assigns_a_library_attribute():
    """Issue 56, step 5: render/engine/internals.py's install (and installed) is the only code that assigns a library
    attribute; the sites that reach in call it, and it sets only what PATCHED lists."""
    replaced = {}
    for path in [*(ROOT / "render").rglob("*.py"), *(ROOT / "scenes").rglob("*.py")]:
        for name in replaced_in(path):
            replaced.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert replaced == {}, f"assigned outside render/engine/internals.py's install: {replaced}"
    calls = re.compile(r"\binternals\.install\(|\binstalled\(\(|^from render\.engine\.internals import .*\binstall\b",
                       re.MULTILINE)
    modules = [*(ROOT / "render").rglob("*.py"), *(ROOT / "scenes").rglob("*.py")]
    sites = {str(path.relative_to(ROOT)) for path in modules if calls.search(path.read_text())}
    assert sites == {"render/engine/copying.py", "render/engine/families.py", "render/engine/drawing.py",
                     "render/engine/encoder.py", "render/engine/svg.py", "render/video/frames.py",
                     "render/video/shapes.py"}, sites
    assigned = {patch.where for patch in internals.PATCHED
                if patch.where != "render/engine/camera.py" and not patch.reads}
    assert assigned <= sites, assigned - sites  # (the camera overrides a method in a subclass: nothing assigned)
    from manim import Mobject

    with pytest.raises(FilmError, match=r"the renderer sets Mobject\.get_center, which render/engine/internals\.py "
                                        r"does not list: add it to PATCHED"):
        internals.install(Mobject, "get_center", lambda mobject: None)


def test_nothing_patches_at_import_and_a_render_installs_every_speed_up():
    """Importing the engine, the scenes and the renderer leaves Manim's and svgelements' methods as they are; a scene
    set up to draw installs the copies and the families, and a render's frames and shapes are put back after it."""
    probe = """
import json, svgelements
from manim import Mobject, ManimColor
from manim.mobject.svg.svg_mobject import SVGMobject
from manim.renderer.cairo_renderer import CairoRenderer
before = (Mobject.__deepcopy__, Mobject.get_family, SVGMobject.init_svg_mobject, CairoRenderer.get_frame)
import render.engine.scene, render.video.beats, render.video.frames, render.video.shapes, scenes.prefill, scenes.decode
after_import = (Mobject.__deepcopy__, Mobject.get_family, SVGMobject.init_svg_mobject, CairoRenderer.get_frame)
print(json.dumps([a is b for a, b in zip(before, after_import)] + [hasattr(svgelements.Path, "__deepcopy__"),
                 "__deepcopy__" in vars(ManimColor)]))
with render.video.frames.kept_frame_buffers():
    inside = CairoRenderer.get_frame is not before[3]
render.engine.copying.install(); render.engine.families.install()
print(json.dumps([inside, CairoRenderer.get_frame is before[3],
                  Mobject.__deepcopy__ is render.engine.copying.copy_mobject,
                  Mobject.get_family is render.engine.families.get_family]))
"""
    import subprocess
    import sys

    made = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    imported, rendered = (json.loads(line) for line in made.stdout.strip().splitlines()[-2:])
    assert imported == [True, True, True, True, False, False], imported  # nothing patched by an import
    assert rendered == [True, True, True, True], rendered


def refusal(monkeypatch, version) -> str:
    """The internals check's message with importlib.metadata.version replaced by `version` (then restored)."""
    internals.check_versions.cache_clear()
    monkeypatch.setattr(importlib.metadata, "version", version)
    try:
        with pytest.raises(FilmError) as error:
            internals.check_versions()
    finally:
        monkeypatch.undo()
        internals.check_versions.cache_clear()
    return str(error.value)


def test_an_untested_release_is_refused_with_one_message(monkeypatch):
    real = importlib.metadata.version
    message = refusal(monkeypatch, lambda name: "0.23.1" if name == "manim" else real(name))
    assert message.startswith("manim 0.23.1 is installed, but the renderer reaches into its internals (")
    assert "Mobject.__deepcopy__" in message and "tested on 0.22.x" in message and "make setup" in message
    internals.check_versions()  # the installed versions are the tested ones


def test_a_library_without_metadata_is_an_untested_release_with_one_message(monkeypatch):
    real = importlib.metadata.version

    def version(name):
        if name == "svgelements":  # its dist-info moved aside: importable, but no release to read
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    message = refusal(monkeypatch, version)
    assert message.startswith("svgelements has no package metadata (its dist-info is missing)"), message
    assert "Path.__deepcopy__" in message and "tested on 1.9.x" in message and "make setup" in message
    assert "\n" not in message


PRIVATE = re.compile(r"_[A-Za-z0-9]\w*$")  # _name, not __dunder__
ATTRIBUTE_CALLS = {"getattr", "setattr", "hasattr", "delattr"}
# Private members of the standard library and Jinja that the project reaches, each for a reason (not Manim's, PyAV's
# or svgelements', which PATCHED lists): (module, owner.name) -> why.
ELSEWHERE = {
    ("render/measure/client.py", "self._sock._io_refs"): "the standard socket's count of its files (http.client "
                                                         "reads through makefile on a socket wrapped for deadlines)",
    ("render/measure/client.py", "self._sock._decref_socketios"): "the same socket's files, closed as socket does",
    ("render/plan/templating.py", "value._fail_with_undefined_error"): "Jinja's Undefined: its own refusal",
    ("render/plan/templating.py", "arg._fail_with_undefined_error"): "Jinja's Undefined: its own refusal",
    ("render/plan/templating.py", "?._undefined_message"): "Jinja's Undefined: the message it would give",
    ("render/plan/templating.py", "?._parse"): "Jinja's environment: a template parsed once to walk its nodes",
    ("render/studio/warm.py", "multiprocessing.util._exit_function"): "a forked drawing skips its parent's exit "
                                                                       "handlers",
    ("render/studio/warm.py", "os._exit"): "a forked drawing ends without its parent's exit handlers (documented)",
    ("render/video/runner.py", "os._exit"): "a worker ends without its parent's exit handlers (documented)",
    ("render/video/runner.py", "self.pool._processes"): "the process pool's size, which it does not publish",
}


def private_reaches(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, owner, name, read or set) for each private member a module reaches on anything but its own `self` and
    `cls`, however the owner is bound (a parameter, a loop's name, a chain), getattr and setattr with a constant name
    included, `+=` counted as a set."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and PRIVATE.match(node.attr) and dotted(node.value) not in ("self", "cls"):
            found.append((node.lineno, dotted(node.value) or "?", node.attr,
                          "set" if isinstance(node.ctx, (ast.Store, ast.Del)) else "read"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_CALLS \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and PRIVATE.match(node.args[1].value):
            found.append((node.lineno, dotted(node.args[0]) or "?", node.args[1].value,
                          "set" if node.func.id in ("setattr", "delattr") else "read"))
    return found


def test_a_private_member_is_reached_only_where_the_switch_lists_it():
    """Issue 66, 15: no module reads or sets a private member of anything but its own objects, however the owner is
    bound (render/video/frames.py once set six of Manim's encoder's through a parameter), except in the module of
    render/engine/ that PATCHED names for it (and only reads there: the sets go through install), or where ELSEWHERE
    says why (the standard library's and Jinja's)."""
    listed = {}
    for patch in internals.PATCHED:
        listed.setdefault(patch.name.rpartition(".")[2], set()).add(patch.where)
    unlisted = []
    for path in sorted([*(ROOT / "render").rglob("*.py"), *(ROOT / "scenes").rglob("*.py")]):
        module = str(path.relative_to(ROOT))
        for line, owner, name, how in private_reaches(path):
            if (module, f"{owner}.{name}") in ELSEWHERE:
                continue
            if how == "read" and module.startswith("render/engine/") and module in listed.get(name, ()):
                continue
            unlisted.append(f"{module}:{line}: {how}s {owner}.{name}")
    assert unlisted == [], "reached outside render/engine/internals.py's list:\n" + "\n".join(unlisted)
    for module, reach in ELSEWHERE:
        assert (ROOT / module).is_file() and reach.rpartition(".")[2] in (ROOT / module).read_text(), (module, reach)


def test_the_private_reach_check_sees_a_set_through_a_parameter(tmp_path):
    """The check above, on the kinds of reach it must see: a set through a parameter, `+=`, setattr with a constant
    name, a read through a chain."""
    module = tmp_path / "sample.py"
    module.write_text("def write(encoder, pixels):\n    encoder._picture = pixels\n    encoder._next_pts += 1\n"
                      "    setattr(encoder, '_held', None)\n    return encoder._stream.codec_context\n")
    assert sorted(private_reaches(module)) == [(2, "encoder", "_picture", "set"), (3, "encoder", "_next_pts", "set"),
                                               (4, "encoder", "_held", "set"), (5, "encoder", "_stream", "read")]


def test_a_library_modules_names_outside_its_all_are_listed():
    """A name read from one of the libraries' modules (`svg_mobject.SVG_HASH_TO_MOB_MAP`) that the module does not
    export (its __all__) is listed in PATCHED, with the module that reads it."""
    listed = {(patch.name.rpartition(".")[2], patch.where) for patch in internals.PATCHED}
    unlisted = []
    for path in sorted([*(ROOT / "render").rglob("*.py"), *(ROOT / "scenes").rglob("*.py")]):
        tree = ast.parse(path.read_text())
        modules = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in LIBRARIES:
                for alias in node.names:
                    try:
                        modules[alias.asname or alias.name] = importlib.import_module(f"{node.module}.{alias.name}")
                    except ImportError:
                        pass  # a class or function, not a module
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
                exported = getattr(modules[node.value.id], "__all__", None)
                if exported is not None and node.attr not in exported \
                        and (node.attr, str(path.relative_to(ROOT))) not in listed:
                    unlisted.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert unlisted == [], unlisted
