"""A beat's cache key covers everything its pictures depend on, and nothing else (issue 54, item 1).

The oracle is Python itself: the project modules that importing a beat's scene module and the engine loads (in a
fresh interpreter, in a copy of the project) are what its pictures can depend on. Appending a line to each of them
must change that beat's key; appending one to a module no beat loads must not. Then real renders at the tests' size:
an edit to render/formulas.py renders again the beats that import it, and an edit to the film's page reuses all."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BEAT_IDS, copy_project

KEYS = """
import dataclasses, json, sys
from render.plan.beat_scene import scene_of
from render.plan.resolve import resolve_plan
from render.plan.types import BeatTiming
from render.video.beats import quality
from render.video.cache import base_key
plan = resolve_plan(recordings=sys.argv[1])
plan = dataclasses.replace(plan, beats=tuple(dataclasses.replace(beat, timing=BeatTiming(
    beat.start, beat.end, beat.end, 1.0, "fixed", {}, (), ())) for beat in plan.beats))  # (the key's code part)


def keys():
    return {beat.id: base_key(plan, beat.id, quality("tiny")) for beat in plan.beats}


found = {"": keys()}
for name in sys.argv[2:]:  # each file with a line appended, then as it was
    with open(name, "rb") as file:
        original = file.read()
    with open(name, "wb") as file:
        file.write(original + b"\\n# an edit\\n")
    try:
        found[name] = keys()
    finally:
        with open(name, "wb") as file:
            file.write(original)
print(json.dumps(found))
"""

LOADED = """
import importlib, json, os, sys
from pathlib import Path
root = Path.cwd().resolve()
importlib.import_module("render.video.beats")  # the engine every beat loads, imported once; each scene in a fork
importlib.import_module("manim")  # (a library, never a project module: imported once, not in each fork)
found = {}
for module in sys.argv[1:]:
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(reading)
        importlib.import_module(module)
        names = [name for name, loaded in list(sys.modules.items())
                 if getattr(loaded, "__file__", None) and Path(loaded.__file__).resolve().is_relative_to(root)]
        os.write(writing, json.dumps(sorted(str(Path(sys.modules[name].__file__).resolve().relative_to(root))
                                            for name in names)).encode())
        os._exit(0)
    os.close(writing)
    with os.fdopen(reading, "rb") as pipe:
        found[module] = json.loads(pipe.read())
    assert os.waitpid(child, 0)[1] == 0, module
print(json.dumps(found))
"""


USERS = """
import json
from render.files import PROJECT_ROOT
from render.plan.beat_scene import scene_of
from render.plan.storyboard import load_storyboard
from render.video.sources import scene_sources
print(json.dumps([beat.id for beat in load_storyboard().beats
                  if PROJECT_ROOT / "render" / "formulas.py" in scene_sources(scene_of(beat.id).module)]))
"""


def run_in(project: Path, script: str, *args: str) -> object:
    result = subprocess.run([sys.executable, "-c", script, *args], cwd=project, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(project)}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return copy_project(tmp_path_factory.mktemp("project"))


def test_every_module_a_beat_loads_is_in_its_key_and_an_unrelated_one_is_not(project):
    from render.plan.beat_scene import scene_of

    modules = {beat: scene_of(beat).module for beat in BEAT_IDS}
    by_module = run_in(project, LOADED, *modules.values())
    loaded = {beat: set(by_module[module]) for beat, module in modules.items()}
    everything = set().union(*loaded.values())
    assert "render/formulas.py" in everything and "render/engine/internals.py" in everything
    assert "render/engine/copying.py" in everything and "render/engine/families.py" in everything
    unrelated = ("render/publish/page.py", "render/measure/client.py")  # the film's page, the measuring client
    assert not everything & set(unrelated)
    keys = run_in(project, KEYS, str(project / "none"), *sorted(everything), *unrelated)
    before = keys[""]
    missed = [f"{relative} -> {beat}" for relative in sorted(everything) for beat, files in loaded.items()
              if relative in files and keys[relative][beat] == before[beat]]
    assert not missed, missed
    for relative in unrelated:  # every key as it was
        assert keys[relative] == before, relative


def test_an_import_inside_a_function_in_any_form_is_followed(project):
    from render.plan.beat_scene import scene_of

    recordings = str(project / "none")
    entry = scene_of("decode")
    scene = project / entry.path
    original = scene.read_text()
    helper = project / "render" / "picture_helper.py"
    other = project / "scenes" / "picture_extra.py"
    helper.write_text("SCALE = 1\n")
    other.write_text("OFFSET = 0\n")
    try:
        scene.write_text(original + "\n\ndef _helpers():\n    import render.picture_helper  # noqa: F401\n"
                         "    from scenes import picture_extra  # noqa: F401\n")
        keys = run_in(project, KEYS, recordings, str(helper), str(other))
        for path in (helper, other):
            assert keys[str(path)]["decode"] != keys[""]["decode"], path.name
            assert keys[str(path)]["two-waits"] == keys[""]["two-waits"], path.name  # (it imports neither)
    finally:
        scene.write_text(original)
        helper.unlink()
        other.unlink()


def test_the_libraries_releases_are_in_the_key(monkeypatch):
    from render.plan.resolve import resolve_plan
    from render.video import cache
    from render.video.beats import quality
    from render.video.sources import library_versions

    versions = json.loads(library_versions())
    for library in ("manim", "pycairo", "cairo library", "manimpango", "pango library", "av",
                    "ffmpeg libraries (PyAV)", "ffmpeg command", "svgelements"):
        assert versions[library] and versions[library] != "absent", library
    from render.plan.types import BeatTiming

    plan = resolve_plan()
    plan = dataclasses.replace(plan, beats=tuple(dataclasses.replace(beat, timing=BeatTiming(
        beat.start, beat.end, beat.end, 1.0, "fixed", {}, (), ())) for beat in plan.beats))
    before = cache.base_key(plan, "prefill", quality("tiny"))
    # Each quality its own entry (a tiny beat is never served for a 1080p film), and the same one each time.
    keys = {name: cache.base_key(plan, "prefill", quality(name)) for name in ("tiny", "low", "medium", "high")}
    assert len(set(keys.values())) == 4 and keys["tiny"] == before
    monkeypatch.setattr(cache, "library_versions", lambda: library_versions().replace(versions["manim"], "0.99.0"))
    assert cache.base_key(plan, "prefill", quality("tiny")) != before


def rendered(lines: str) -> list[str]:
    return re.findall(r"^\s+rendered (\S+) in", lines, re.M)


def test_an_edit_renders_again_the_beats_that_use_it_and_only_those(tmp_path, default_tiny_film):
    """Real runs of `film film` (make film's and make preview's command, at the tests' size), each stopped at the
    line that says which beats it renders (printed before any is drawn). That a beat rendered is stored and reused
    is tests/test_hardening.py's (a killed run's rerun) and test_hostile_input.py's; a whole run's printed lines
    are read against the project's message forms in test_output.py (the suite's `film film`) and test_hardening.py
    (a run that renders)."""
    import signal

    project = copy_project(tmp_path / "project", cache=default_tiny_film.build / "cache")
    (project / "none").mkdir()
    command = [sys.executable, "-m", "render.cli", "film", "--quality", "tiny", "--build", str(project / "build"),
               "--recordings", str(project / "none"), "--jobs", "2"]
    environment = {**os.environ, "PYTHONPATH": str(project)}

    def to_render() -> list[str]:
        """The beats a run says it renders (its `beats:` line), the run then stopped."""
        run = subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=environment, start_new_session=True)
        line, output = "", []
        try:
            for output_line in run.stdout:  # (ends where the run ends without the line)
                output.append(output_line)
                if output_line.startswith("beats: "):
                    line = output_line.strip()
                    break
        finally:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        found = re.match(r"beats: \d+ cached.*?(?:; rendering \d+ at tiny \([^)]*\) on [^:]*: (.*)|"
                         r"; nothing to render)$", line)
        assert found, "".join(output)[-3000:]
        return sorted(found.group(1).split(", ")) if found.group(1) else []

    assert to_render() == []  # the cache copied from the suite's tiny film: every beat reused
    formulas = project / "render" / "formulas.py"
    original = formulas.read_bytes()
    formulas.write_bytes(original + b"\n# an edit to the film's formulas\n")
    again = to_render()
    users = run_in(project, USERS)
    assert users and again == sorted(users), (again, users)
    formulas.write_bytes(original)
    # No beat imports another (issue 56, step 3): an edit to the opening's animation renders that beat alone; an edit
    # to the picture it hands over (which prefill starts from), that beat and the next, and no other.
    beat = project / "scenes" / "two_waits.py"
    opening = beat.read_text()
    beat.write_text(opening + "\n# an edit to the opening's animation\n")
    assert to_render() == ["two-waits"]
    beat.write_text(opening)
    assert to_render() == []  # (as it was: its entry in the cache is the one named again)
    handed_over = project / "scenes" / "pictures" / "two_waits.py"
    handed_over.write_text(handed_over.read_text() + "\n# an edit to the picture the opening hands over\n")
    assert to_render() == ["prefill", "two-waits"]
