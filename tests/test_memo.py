"""What commands keep between processes (render/memo.py): each entry named by what made it, checked before use, made
again when damaged; a template's kept code renders as Jinja's own compile does, and a syntax error is still found."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from render import memo


def test_an_entry_is_made_once_kept_checked_and_made_again_when_damaged(tmp_path, monkeypatch):
    made: list[bytes] = []

    def make(payload: bytes):
        return lambda: made.append(payload) or payload

    monkeypatch.setattr(memo, "_SEEN", {})
    key = memo.key_of("kind", b"source bytes")
    assert memo.remembered("kind", key, make(b"one"), tmp_path) == b"one" and made == [b"one"]
    monkeypatch.setattr(memo, "_SEEN", {})  # (another process: only the file is left)
    assert memo.remembered("kind", key, make(b"two"), tmp_path) == b"one" and made == [b"one"]  # kept
    entry = tmp_path / "kind" / f"{key}.bin"
    for damage in (entry.read_bytes()[:-1] + b"X", entry.read_bytes()[:20], b""):
        entry.write_bytes(damage)
        monkeypatch.setattr(memo, "_SEEN", {})
        assert memo.remembered("kind", key, make(b"three"), tmp_path) == b"three"  # checked, made again
    assert memo.key_of("kind", b"source bytes") == key and memo.key_of("kind", b"source bytez") != key
    assert memo.key_of("a", "bc") != memo.key_of("ab", "c")  # (each part's length is in the digest)


def test_a_read_only_memo_is_used_not_kept(tmp_path, monkeypatch):
    folder = tmp_path / "memo"
    folder.write_text("a file where the folder would be")
    monkeypatch.setattr(memo, "_SEEN", {})
    assert memo.remembered("kind", memo.key_of("x"), lambda: b"made", folder) == b"made"


def test_a_kept_template_renders_as_jinjas_own_and_a_syntax_error_is_still_found(monkeypatch, tmp_path):
    from render.errors import FilmError
    from render.plan import templating

    monkeypatch.setattr(memo, "MEMO_DIR", tmp_path)
    source = "{{ a }} and {% if b %}yes{% else %}no{% endif %} {{ c | upper }}"
    for _ in range(2):  # made, then read back
        monkeypatch.setattr(memo, "_SEEN", {})
        templating.compiled.cache_clear()
        templating.names_used.cache_clear()
        assert templating.fill(source, {"a": "2.3", "b": True, "c": "x"}, "here", "a template") == "2.3 and yes X"
        assert templating.names_used(source) == {"a", "b", "c"}
    assert list((tmp_path / "templates").iterdir())
    with pytest.raises(FilmError, match="template error on its line 1"):
        templating.compile_template("{{ a ", "here", "a template")


def test_a_files_imports_are_kept_and_a_new_module_beside_it_is_seen(tmp_path, monkeypatch):
    """The names a file imports are kept by its bytes; which are project modules is looked up each time."""
    from render import code as sources

    monkeypatch.setattr(memo, "MEMO_DIR", tmp_path)
    monkeypatch.setattr(memo, "_SEEN", {})  # (this process's memory of an earlier test's lookups, set aside)
    monkeypatch.setattr(sources, "_IMPORTS", {})
    path = sources.PROJECT_ROOT / "scenes" / "prefill.py"
    first = sources.scene_imports(path)
    assert "scenes" in first and any(name.startswith("render.") for name in first)
    names = sources.import_names(sources.parsed(path)[1], path)
    newcomer = next(name for name in names if name not in first and name.split(".")[0] in ("scenes", "render"))
    monkeypatch.setattr(memo, "_SEEN", {})
    monkeypatch.setattr(sources, "_IMPORTS", {})
    monkeypatch.setattr(sources, "parsed", lambda path: pytest.fail("parsed again"))
    assert sources.scene_imports(path) == first  # read back, not parsed
    # A module made since under a name the file imports (`from scenes.figures import chip` where chip.py is new):
    # seen, though the file's bytes, and so its kept names, are the same.
    found = sources.module_path
    monkeypatch.setattr(sources, "module_path", lambda name: path if name == newcomer else found(name))
    assert newcomer in sources.scene_imports(path) and newcomer not in first


def test_a_walk_is_kept_by_its_files_states_and_walked_again_when_one_changes(tmp_path, monkeypatch):
    """A command's walk of the sources (the cue check, a beat's key) is kept with the state of every file and folder
    it found; another process uses it only while each is as it was, and a file changed in the last two seconds is
    not kept at all."""
    import json
    import time

    from render import code as sources

    monkeypatch.setattr(memo, "MEMO_DIR", tmp_path)
    roots = ("scenes.prefill",)
    for table in ("_WALKED", "_DIGESTS", "_IMPORTS"):
        monkeypatch.setattr(sources, table, {})
    states, files, digest = sources.walked(roots)
    assert sources.PROJECT_ROOT / "scenes" / "prefill.py" in files and len(states) > len(files)  # (and folders)
    record = sources.walk_record(roots)
    assert json.loads(record.read_text())["digest"] == digest

    walks = []
    real = sources.walk
    monkeypatch.setattr(sources, "walk", lambda roots: walks.append(roots) or real(roots))
    for table in ("_WALKED", "_DIGESTS"):  # (another process: only the record is left)
        monkeypatch.setattr(sources, table, {})
    assert sources.walked(roots) == (states, files, digest) and walks == []

    kept = json.loads(record.read_text())
    kept["states"][0][2] += 1  # (as if the first file had been written since: its modification time moved)
    record.write_text(json.dumps(kept))
    for table in ("_WALKED", "_DIGESTS"):
        monkeypatch.setattr(sources, table, {})
    assert sources.walked(roots) == (states, files, digest) and walks == [roots]

    record.unlink()
    just_now = ((1, 2, time.time_ns(), time.time_ns()),)  # (a file saved this moment may be saved again unseen)
    sources.keep_walk(roots, just_now, files[:1], None)
    assert not record.exists()


def test_a_copy_of_the_project_walks_its_own_files_with_the_projects_memo(tmp_path):
    """A copy of the project carries the project's memo (render/files.py's copy_project, as the studio's bench and the
    tests make one to edit): the walk the project kept names the project's files, so the copy walks its own."""
    import json
    import subprocess
    import sys
    import time

    from render import code as sources
    from render.files import copy_project

    roots = ("scenes.prefill",)
    states, files, digest = sources.walked(roots)
    newest = max(max(state[2], state[3]) for state in states)  # (a file saved in the last two seconds is not kept)
    time.sleep(max(0.0, (newest + sources.RACY_NS - time.time_ns()) / 1e9 + 0.1))
    sources.keep_walk(roots, states, files, digest)  # (the project's walk kept, as any command keeps it)
    assert sources.kept_walk(roots) is not None
    copy = copy_project(tmp_path / "project")
    assert (copy / "build" / "cache" / "memo" / "walks").is_dir()
    shown = subprocess.run([sys.executable, "-c", "import json; from render import code; "
                            "print(json.dumps([str(path) for path in code.walked(('scenes.prefill',))[1]]))"],
                           cwd=copy, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(copy)})
    assert shown.returncode == 0, shown.stderr
    files = json.loads(shown.stdout)
    assert str(copy / "scenes" / "prefill.py") in files
    assert all(path.startswith(str(copy) + os.sep) for path in files), files


def test_the_libraries_versions_are_kept_by_the_files_they_were_read_from(tmp_path, monkeypatch):
    """A beat's key names the releases of Manim, Cairo, Pango, PyAV and ffmpeg; asking them imports PyAV and runs
    ffmpeg, so they are kept with the state of each library the process loaded, the folders packages are installed
    in and the ffmpeg command, and asked again when one of those changes."""
    import json

    from render.video import sources

    monkeypatch.setattr(memo, "MEMO_DIR", tmp_path)
    sources.library_versions.cache_clear()
    first = sources.library_versions()
    assert {"manim", "cairo library", "ffmpeg command"} <= set(json.loads(first))
    (record,) = (tmp_path / "libraries").iterdir()
    kept = json.loads(record.read_text())
    assert any("site-packages" == Path(name).name for name in kept["files"])  # (an install changes it)
    assert any(Path(name).name.startswith("libcairo") for name in kept["files"])

    asked = []
    monkeypatch.setattr(sources, "asked_versions", lambda: asked.append(1) or '{"asked": "again"}')
    sources.library_versions.cache_clear()
    assert sources.library_versions() == first and asked == []
    kept["states"][-1][1] += 1  # (as if a library had been replaced: its size changed)
    record.write_text(json.dumps(kept))
    sources.library_versions.cache_clear()
    assert sources.library_versions() == '{"asked": "again"}' and asked == [1]
    sources.library_versions.cache_clear()


def test_a_fonts_cut_is_kept_and_the_same_as_made(tmp_path, monkeypatch):
    """A page's faces cut to its characters: made once, then read back the same (fontTools' cut is deterministic),
    another set of characters another entry."""
    from render.publish import mathfont

    monkeypatch.setattr(memo, "MEMO_DIR", tmp_path)
    monkeypatch.setattr(memo, "_SEEN", {})
    made = mathfont.font_face("Maths", mathfont.FONT_FILE, "0123456789×≈")
    monkeypatch.setattr(memo, "_SEEN", {})
    cut = mathfont.font_subset
    monkeypatch.setattr(mathfont, "font_subset", lambda *args: pytest.fail("cut again"))
    assert mathfont.font_face("Maths", mathfont.FONT_FILE, "≈×9876543210") == made  # (the same characters)
    monkeypatch.setattr(mathfont, "font_subset", cut)
    assert mathfont.font_face("Maths", mathfont.FONT_FILE, "0123456789×≈∑") != made
    assert len(list((tmp_path / "fonts").iterdir())) == 2


def test_a_kept_templates_code_holds_no_filters_output(tmp_path, monkeypatch):
    """Compiled outside any budget, whoever asks: Jinja folds no filter call on a literal into the kept code, so a
    change to the formatter is seen by a template kept before it."""
    from render.plan import templating

    monkeypatch.setattr(memo, "MEMO_DIR", tmp_path)
    monkeypatch.setattr(memo, "_SEEN", {})
    templating.compiled.cache_clear()
    source = "{{ 1234567 | count }} tokens"
    with templating.one_budget():
        assert templating.fill(source, {}, "here", "a template") == "1,234,567 tokens"
    (entry,) = (tmp_path / "templates").iterdir()
    assert b"1,234,567" not in entry.read_bytes()


def test_a_computed_result_is_named_by_its_code_and_inputs_and_an_error_is_not_kept(tmp_path, monkeypatch):
    """render/code.py's computed: the extended cut's simulations and the page's Under load grid, kept between
    processes by the bytes of the code that computes them (the module and every project module it imports) and
    their inputs."""
    from render.errors import FilmError
    from render.plan import load
    from render import code as sources

    monkeypatch.setattr(memo, "MEMO_DIR", tmp_path)
    walked = {path.relative_to(sources.PROJECT_ROOT).as_posix() for path in sources.walk(("render.plan.load",))}
    assert {"render/serving/simulate.py", "render/serving/costs.py", "render/specs/roofline.py"} <= walked
    assert not any(path.startswith("scenes/") for path in walked)  # (nothing the film draws with)

    made: list[tuple] = []

    def simulated(*inputs):
        made.append(inputs)
        return {"inputs": inputs}

    monkeypatch.setattr(load, "simulated", simulated)
    for _ in range(2):  # made, then read back (another process: only the file is left)
        monkeypatch.setattr(memo, "_SEEN", {})
        load.load_numbers.cache_clear()
        assert load.load_numbers("choice", 2000, 8000, "load") == {"inputs": ("choice", 2000, 8000, "load")}
    assert len(made) == 1
    load.load_numbers.cache_clear()
    load.load_numbers("choice", 2001, 8000, "load")  # another input: another entry
    assert len(made) == 2 and len(list((tmp_path / "load-numbers").iterdir())) == 2

    # An edit to a module the simulation imports (not load.py itself) names another entry.
    deep = sources.PROJECT_ROOT / "render" / "serving" / "engine.py"  # (imported by what load.py imports)
    read = sources.source_bytes
    monkeypatch.setattr(sources, "source_bytes", lambda path: read(path) + (b"\n# edited" if path == deep else b""))
    monkeypatch.setattr(sources, "_WALKED", {})
    monkeypatch.setattr(sources, "_DIGESTS", {})
    monkeypatch.setattr(sources, "kept_walk", lambda roots: None)  # (the edit is pretended: no file's state changed)
    monkeypatch.setattr(memo, "_SEEN", {})
    load.load_numbers.cache_clear()
    load.load_numbers("choice", 2000, 8000, "load")
    assert len(made) == 3

    def refused(*inputs):
        raise FilmError("no room")

    monkeypatch.setattr(load, "simulated", refused)
    for _ in range(2):
        load.load_numbers.cache_clear()
        with pytest.raises(FilmError, match="the extended cut's stream: no room"):
            load.load_numbers("choice", 1, 1, "load")
    assert len(list((tmp_path / "load-numbers").iterdir())) == 3
    load.load_numbers.cache_clear()


def test_a_memo_copied_while_another_process_writes_it_leaves_out_what_went(tmp_path, monkeypatch):
    """copy_project copies the project's memo while the suite's other process may be writing to it: a half-written
    temporary is not copied, and an entry removed between the listing and its copy is left out, not an error (each
    entry is checked before use); a file that is there and cannot be copied is still an error."""
    import shutil

    from render.files import copy_memo

    source = tmp_path / "memo"
    (source / "walks").mkdir(parents=True)
    (source / "walks" / "kept.bin").write_bytes(b"kept")
    (source / "walks" / ".entry.abc123.tmp.json").write_bytes(b"half")
    (source / "walks" / "going.bin").write_bytes(b"going")
    copy = shutil.copy2

    def racing(src, dst, **options):
        if Path(src).name == "going.bin":
            Path(src).unlink()  # (another process replaced it as the copy reached it)
        return copy(src, dst, **options)

    monkeypatch.setattr(shutil, "copy2", racing)
    copy_memo(source, tmp_path / "copy")
    assert sorted(path.name for path in (tmp_path / "copy" / "walks").iterdir()) == ["kept.bin"]

    import socket

    with socket.socket(socket.AF_UNIX) as listening:  # (a file that is there and that no one can open to copy)
        listening.bind(str(source / "walks" / "socket.bin"))
        with pytest.raises(shutil.Error, match="socket.bin"):
            copy_memo(source, tmp_path / "again")
