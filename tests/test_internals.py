"""Whatever reaches into Manim, PyAV or svgelements does so from one list, checked against the tested versions
(issue 44): render/engine/internals.py."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
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
    for patch in internals.PATCHED:
        owner, _, attribute = patch.name.rpartition(".")
        found = resolve(patch.library, owner)
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


def test_no_module_replaces_an_internal_the_list_lacks():
    listed = {".".join(patch.name.split(".")[-2:]) for patch in internals.PATCHED}
    replaced = {}
    for path in [*(ROOT / "render").rglob("*.py"), *(ROOT / "scenes").rglob("*.py")]:
        for name in replaced_in(path):
            replaced.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert {"Mobject.__deepcopy__", "CairoRenderer.render", "VideoSegmentEncoder.write_frame"} <= set(replaced)
    unlisted = {name: where for name, where in replaced.items() if name not in listed}
    assert not unlisted, f"add these to render/engine/internals.py's PATCHED: {unlisted}"


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
