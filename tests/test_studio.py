"""`make studio` in the real Chromium: a studio started on a copy of the project, its files edited as a user
saves them, and the page watched as it changes."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BEAT_IDS, OTHER_CHOICE, ROOT, copy_project, seeded_cache, start_studio, studio_project
from test_review import chromium

# Bounds set from measurement on two cores (the suite's other process busy beside it): a narration edit's
# still took 6-9 s and its clip 10-16 s at the tests' tiny size, a scene edit's two beats about as long.
STILL_BOUND, CLIP_BOUND = 30.0, 60.0


@pytest.fixture(scope="module")
def project(tmp_path_factory, default_tiny_film) -> Path:
    """A copy of the project, its build cache the session's tiny film's (speech, typesetting, beats: the
    studio's first look draws stills only)."""
    return studio_project(tmp_path_factory.mktemp("project"), default_tiny_film)


def studio_children(pid: int) -> set[int]:
    """Every process descended from `pid` (Manim's drawing processes, the fork server, ffmpeg)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


@pytest.fixture(scope="module")
def studio(project):
    process, address, lines = start_studio(project)
    yield process, address, lines
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="module")
def page(studio):
    _, address, _ = studio
    driver = chromium()
    driver.get(address)
    yield driver
    driver.quit()


def wait_for(driver, script: str, timeout: float, *args):
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: d.execute_script(script, *args))


PICTURES = """return Array.from(document.querySelectorAll('article.beat')).map(function (a) {
  return [a.id.slice(5), a.dataset.status, Array.from(a.querySelectorAll('.stills img')).map(function (i) {
    return i.getAttribute('src'); }), (a.querySelector('video.clip') || {}).getAttribute('src'),
    a.classList.contains('stale')]; });"""


def pictures(driver) -> dict[str, tuple]:
    return {beat: (status, tuple(stills), clip, stale) for beat, status, stills, clip, stale in
            driver.execute_script(PICTURES)}


def all_ready(driver, timeout: float) -> dict[str, tuple]:
    wait_for(driver, "var a = document.querySelectorAll('article.beat'); return a.length == 9 && "
                     "Array.from(a).every(function (x) { return x.dataset.status == 'ready'; });", timeout)
    return pictures(driver)


def stopped(process: subprocess.Popen) -> None:
    """The studio gone after its Ctrl-C (as the first test allows, on a machine busy with the suite's other
    process); one that hangs is killed and said."""
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail("the studio did not stop within 30 s of its Ctrl-C")


def edit(path: Path, old: str, new: str) -> None:
    """A save as an editor makes it, whole (written beside and renamed): write_text's truncate and write could reach
    the watcher as two saves on a busy machine, the second an update that rightly draws nothing."""
    text = path.read_text()
    assert old in text, (path, old)
    temporary = path.with_name(f".{path.name}.saving")
    temporary.write_text(text.replace(old, new, 1))
    temporary.replace(path)


def test_the_studio_draws_what_an_edit_changes_shows_problems_and_stops_cleanly(studio, page, project):
    process, address, lines = studio
    assert address.startswith("http://127.0.0.1:")
    first = all_ready(page, 120)
    assert all(stills and clip and not stale for _, stills, clip, stale in first.values()), first
    deadline = time.monotonic() + 30  # the first update ends (its timeline's waveform made) after its last beat
    while not any("studio: updated in" in line for line in lines) and time.monotonic() < deadline:
        time.sleep(0.1)
    shot = page.get_screenshot_as_png()
    assert len(shot) > 10_000

    # One word of one beat's narration: that beat's stills and clip are drawn again, no other beat's.
    saved, printed_before = time.monotonic(), len(lines)
    edit(project / "script" / "storyboard.yaml", "So treat them as [[budgets]]two budgets:",
         "So treat them as [[budgets]]two separate budgets:")
    wait_for(page, "var a = document.getElementById('beat-two-budgets');"
                   "return a.querySelector('.stills img').getAttribute('src') != arguments[0];", STILL_BOUND,
             first["two-budgets"][1][0])
    still_seconds = time.monotonic() - saved
    wait_for(page, "var a = document.getElementById('beat-two-budgets'); return a.dataset.status == 'ready' && "
                   "a.querySelector('video.clip').getAttribute('src') != arguments[0];", CLIP_BOUND,
             first["two-budgets"][2])
    clip_seconds = time.monotonic() - saved
    after = pictures(page)
    assert [beat for beat in first if after[beat][1:3] != first[beat][1:3]] == ["two-budgets"]
    why = page.find_element("css selector", "#beat-two-budgets .why").text
    assert "its words or their timing changed" in why and "From the save" in why, why
    # What the update drew, as the studio prints it (on a busy machine the save's rename can reach the watcher as a
    # second save, whose own update, drawing nothing, may already be under way in the status line)
    deadline = time.monotonic() + 10
    while not any("drew two-budgets" in line for line in lines[printed_before:]) and time.monotonic() < deadline:
        time.sleep(0.1)
    updates = [line for line in lines[printed_before:] if "studio: updated in" in line]
    assert updates and updates[0].rstrip().endswith("drew two-budgets"), lines[printed_before:]
    print(f"narration edit: still {still_seconds:.1f} s, clip {clip_seconds:.1f} s")

    # A broken storyboard: the page names the file and line; the last good pictures stay, marked stale.
    storyboard = project / "script" / "storyboard.yaml"
    good = storyboard.read_text()
    shown = pictures(page)  # what the page shows as the bad save comes
    storyboard.write_text(good.replace("beats:", "beats: [unclosed", 1))
    wait_for(page, "return !document.getElementById('problem').hidden;", 30)
    where = page.find_element("css selector", "#problem .where").text
    assert re.search(r"storyboard\.yaml:\d+", where), where
    deadline = time.monotonic() + 30  # (the problem, then each beat marked stale, as the studio publishes them)
    while not all((broken := pictures(page))[beat][3] for beat in shown) and time.monotonic() < deadline:
        time.sleep(0.2)
    changed = {beat: (shown[beat][1:3], broken[beat][1:3]) for beat in shown if broken[beat][1:3] != shown[beat][1:3]}
    assert not changed and all(broken[beat][3] for beat in shown), (changed, lines[printed_before:])  # kept, stale

    # Mended: the problem goes, nothing is drawn again (the files are as they were), nothing is stale.
    storyboard.write_text(good)
    wait_for(page, "return document.getElementById('problem').hidden;", 30)
    wait_for(page, "return document.querySelectorAll('article.beat.stale').length == 0;", 30)
    assert {beat: view[1:3] for beat, view in pictures(page).items()} == {beat: view[1:3] for beat,
                                                                          view in after.items()}

    # A picture's colour: the beats whose drawing uses that code are drawn again, and only they (the cache beat, and
    # two budgets, which opens on the cache beat's bars; not the measured beat, whose picture the cache beat imports).
    from render.plan.beat_scene import scene_of
    from render.video.sources import scene_sources

    picture = ROOT / "scenes" / "pictures" / "cache_rides_along.py"
    using = sorted(beat for beat in BEAT_IDS if picture in scene_sources(scene_of(beat).module))
    assert using == ["cache-rides-along", "two-budgets"], using
    saved = time.monotonic()
    edit(project / "scenes" / "pictures" / "cache_rides_along.py", "scale * short_rate, MEMORY, value_inside=True)",
         "scale * short_rate, HIGHLIGHT, value_inside=True)")  # (a colour cache_rides_along.py imports)
    for beat in using:
        wait_for(page, f"var a = document.getElementById('beat-{beat}'); return a.dataset.status == 'ready' && "
                       "a.querySelector('video.clip').getAttribute('src') != arguments[0];", CLIP_BOUND,
                 after[beat][2])
    print(f"scene edit: {len(using)} clips {time.monotonic() - saved:.1f} s")
    scene_edited = pictures(page)
    assert sorted(beat for beat in after if scene_edited[beat][1:3] != after[beat][1:3]) == using
    assert "the scene's code changed" in page.find_element("css selector", "#beat-cache-rides-along .why").text

    # A datasheet's number: the beats that show it (or speak it) are drawn again, for what it changed, and only
    # they: INT8's bytes a weight (the quantisation lever of a BF16 film) is shown by the two budgets' card alone.
    from render.plan.resolve import resolve_plan
    from render.plan.tracking import value_at
    from render.publish.explain import number_row

    def quantised_rate(data: Path) -> str:
        plan = resolve_plan(data_dir=data)
        return number_row(plan, "numbers.quantised.tokens_per_second",
                          value_at(plan, "numbers.quantised.tokens_per_second")).value

    old_rate = quantised_rate(project / "data")
    saved = time.monotonic()
    before_data = pictures(page)
    edit(project / "data" / "dtypes.yaml", "    spoken_name: int eight\n    bytes_per_weight: 1\n",
         "    spoken_name: int eight\n    bytes_per_weight: 1.25\n")
    new_rate = quantised_rate(project / "data")
    assert new_rate != old_rate
    wait_for(page, "var a = document.getElementById('beat-two-budgets'); return a.dataset.status == 'ready' && "
                   "a.querySelector('video.clip').getAttribute('src') != arguments[0];", CLIP_BOUND,
             before_data["two-budgets"][2])
    wait_for(page, "return !document.getElementById('status').classList.contains('busy');", CLIP_BOUND)
    print(f"data edit: two-budgets' clip {time.monotonic() - saved:.1f} s")
    data_edited = pictures(page)
    redrawn = {beat for beat in after if data_edited[beat][1:3] != before_data[beat][1:3]}
    assert redrawn == {"two-budgets"}, redrawn
    assert "the numbers it shows" in page.find_element("css selector", "#beat-two-budgets .why").text
    shown = page.find_element("css selector", "#beat-two-budgets ul.numbers").get_attribute("textContent")
    assert new_rate in shown and old_rate not in shown, (old_rate, new_rate, shown)

    # Ctrl-C while it draws: every process of the studio gone, its port free again.
    edit(project / "script" / "storyboard.yaml", "two separate budgets:", "two budgets:")
    wait_for(page, "return document.getElementById('beat-two-budgets').dataset.status == 'drawing stills';", 30)
    family = studio_children(process.pid)
    assert family  # the fork server at least
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group, drawing processes included
    assert process.wait(20) == 130
    output = "".join(lines)
    assert "leaked" not in output and "Traceback" not in output, output[output.find("Traceback") - 2000:]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and studio_children(process.pid) | {pid for pid in family
                                                                          if Path(f"/proc/{pid}").exists()}:
        time.sleep(0.2)
    alive = [pid for pid in family if Path(f"/proc/{pid}").exists()
             and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"]
    assert not alive, alive
    import tempfile  # nothing of theirs left behind: a drawing stopped mid-task has its typesetting folders removed

    left = [path.name for pid in family | {process.pid}
            for path in Path(tempfile.gettempdir()).glob(f"film-*-{pid}-*")]
    assert not left, left
    port = int(address.rsplit(":", 1)[1].strip("/"))
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass  # nothing listens there
    with socket.socket() as probe:  # and a server may listen there again (the page's closed connections wait
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # out TCP's TIME_WAIT, as after any server)
        probe.bind(("127.0.0.1", port))
        probe.listen()
    assert any("studio: stopped" in line for line in lines), lines


def test_a_problem_names_the_scene_file_and_line_or_the_file_its_message_names():
    """A scene's exception points at the line of the scene that raised it; a storyboard's error at the file and
    line its message gives."""
    from render.errors import FilmError
    from render.studio.drawings import problem_from_error

    scene = ROOT / "scenes" / "two_waits.py"
    code = compile("\n" * 41 + "raise ValueError('no such colour')", str(scene), "exec")
    try:
        exec(code, {})
    except ValueError as error:
        problem = problem_from_error(error, "two-waits")
    assert (problem.file, problem.line, problem.beat) == ("scenes/two_waits.py", 42, "two-waits")
    assert problem.message == "ValueError: no such colour"
    problem = problem_from_error(FilmError("script/storyboard.yaml, line 12: beat 'decode' waits for cue 'tap'"))
    assert (problem.file, problem.line) == ("script/storyboard.yaml", 12)


def test_the_cue_an_edit_touched_first_is_drawn_first():
    from render.studio.session import touched_cue

    before = [{"name": "a", "clause": "one,", "at": 1.0}, {"name": "b", "clause": "two,", "at": 2.0},
              {"name": "c", "clause": "three.", "at": 3.0}]
    moved = [dict(cue) for cue in before]
    moved[1]["clause"], moved[2]["at"] = "two more,", 3.4
    assert touched_cue(before, moved) == "b"
    assert touched_cue(before, before) is None and touched_cue([], before) is None


def test_a_drawing_process_leaves_ctrl_c_to_the_studio_from_its_fork(tmp_path):
    """The fork server hands its preloads' handlers to each child: SIGINT is ignored before the child unpickles its
    task and imports the scenes (set later, a Ctrl-C in that window printed a KeyboardInterrupt traceback). From a
    process with Ctrl-C at its default, as a terminal starts the studio (this suite's workers ignore it)."""
    handler = tmp_path / "handler"
    child = f"import signal; open({str(handler)!r}, 'w').write(repr(signal.getsignal(signal.SIGINT)))"
    script = (f"import sys\nfrom render.studio.drawings import drawing_context\n"
              f"process = drawing_context().Process(target=exec, args=({child!r},))\n"
              f"process.start(); process.join(120); sys.exit(process.exitcode)")
    ran = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert ran.returncode == 0, ran.stderr
    assert handler.read_text() == repr(signal.SIG_IGN)


def test_a_drawing_process_forked_as_the_studio_stops_ends_quietly(tmp_path):
    """The studio killed between the fork server's fork and the task's arrival (Ctrl-C as a drawing starts): the
    child finds the task's pipe closed and ends without a traceback on the studio's terminal."""
    ran_flag = tmp_path / "ran"
    script = (f"import os\nfrom multiprocessing import forkserver\nfrom render.studio.drawings import drawing_context\n"
              f"connect = forkserver.connect_to_new_process\n"
              f"def connect_then_stop(fds):\n    connect(fds)\n    os._exit(0)  # the studio, gone before the task\n"
              f"forkserver.connect_to_new_process = connect_then_stop\n"
              f"drawing_context().Process(target=open, args=({str(ran_flag)!r}, 'w')).start()\n")
    ran = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert ran.returncode == 0 and not ran_flag.exists()
    assert ran.stderr == "", ran.stderr


FRAME_PIXELS = """var done = arguments[arguments.length - 1], video = document.querySelector('#player video');
function grey(source) {  // the picture at 160x90, as grey levels
  var canvas = document.createElement('canvas'); canvas.width = 160; canvas.height = 90;
  var context = canvas.getContext('2d'); context.drawImage(source, 0, 0, 160, 90);
  var data = context.getImageData(0, 0, 160, 90).data, out = [];
  for (var i = 0; i < data.length; i += 4) { out.push((data[i] + data[i + 1] + data[i + 2]) / 3); }
  return out;
}
var image = new Image();
image.onload = function () { done([grey(video), grey(image)]); };
image.onerror = function () { done(null); };
image.src = arguments[0];"""

SETTLED = ("var v = document.querySelector('#player video'); return !v.hidden && v.readyState >= 2 && !v.seeking && "
           "Math.abs(v.currentTime - arguments[0]) < 0.01;")


def test_a_clip_is_served_in_the_parts_a_player_asks_for():
    """The player seeks within a clip: a Range is answered with just those bytes; one that cannot be given is
    refused (416); one this server does not split or cannot read (several ranges, another unit, backwards) gets
    the whole file."""
    from render.studio.server import byte_range

    assert byte_range(None, 1000) is None and byte_range("bytes=0-", 1000) == (0, 999)
    assert byte_range("bytes=100-199", 1000) == (100, 199) and byte_range("bytes=900-5000", 1000) == (900, 999)
    assert byte_range("bytes=-100", 1000) == (900, 999) and byte_range("bytes=-5000", 1000) == (0, 999)
    assert byte_range("bytes=1000-", 1000) == () and byte_range("bytes=1000-1200", 1000) == ()
    assert byte_range("bytes=5-3", 1000) is None  # (a last byte before the first: ignored, as RFC 9110 says)
    assert byte_range("bytes=0-1,5-9", 1000) is None and byte_range("items=0-1", 1000) is None
    assert byte_range("bytes=-", 1000) is None


def test_the_warm_process_imports_again_a_saved_scene_and_every_scene_that_imports_it(tmp_path):
    """The warm process keeps the scenes loaded between drawings: a scene saved since is imported as saved, with every
    scene module that imports it at any depth (each holds names of the old one), and no other."""
    project = copy_project(tmp_path)
    script = """
import importlib, json, sys
from pathlib import Path
from render.studio import warm
loaded = warm.load_scenes(["two-budgets", "prefill", "roofline"])
before = {name for name in sys.modules if name.startswith("scenes")}
nothing = warm.forget_scenes_if_saved(loaded)
text = Path("scenes/figures/text.py")
text.write_text(text.read_text() + "\\nSAVED = 'as saved'\\n")
forgot = warm.forget_scenes_if_saved(loaded)
after = {name for name in sys.modules if name.startswith("scenes")}
print(json.dumps({"nothing": nothing, "forgot": forgot, "gone": sorted(before - after), "kept": sorted(after),
                  "now": importlib.import_module("scenes.figures.text").SAVED}))
"""
    ran = subprocess.run([sys.executable, "-c", script], cwd=project, env={**os.environ, "PYTHONPATH": str(project)},
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    import json

    said = json.loads(ran.stdout.splitlines()[-1])
    assert said["nothing"] is False and said["forgot"] is True and said["now"] == "as saved"
    gone = set(said["gone"])
    # text.py itself, the beats that write words (each imports it, directly or through a figure), the figures that do
    assert {"scenes.figures.text", "scenes.two_budgets", "scenes.prefill", "scenes.roofline",
            "scenes.figures.counters"} <= gone
    assert "scenes.style" in said["kept"] and "scenes" in said["kept"]  # (what text.py imports stays loaded)


def test_a_layout_finding_names_the_scene_line_that_played_it():
    """Problems where they are made: a finding of the layout lint or the safe area is noted with the innermost line
    of scenes/ on the stack when it was first found (the play that made it), and the studio shows it there."""
    from types import SimpleNamespace

    from render.engine.drawing import DrawnScene
    from render.studio.session import findings_of

    scene = SimpleNamespace(places={})
    source = ("def construct(scene, placed):\n"
              "    return placed(scene, {\"Text 'a' overlaps Text 'b'\"})\n")
    code = compile(source, str(ROOT / "scenes" / "a_beat.py"), "exec")
    played: dict = {}
    exec(code, played)  # noqa: S102 - a scene's line, as the lint sees it
    assert played["construct"](scene, DrawnScene.placed) == {"Text 'a' overlaps Text 'b'"}
    assert scene.places == {"Text 'a' overlaps Text 'b'": "scenes/a_beat.py:2"}
    DrawnScene.placed(scene, {"Text 'a' overlaps Text 'b'", "Text 'c' is 20 px tall"})  # (not from scenes/: no line)
    assert scene.places == {"Text 'a' overlaps Text 'b'": "scenes/a_beat.py:2"}  # the first place kept
    render = SimpleNamespace(layout=("Text 'a' overlaps Text 'b'", "Text 'c' is 20 px tall"),
                             safe_area=("Text at x 7.10..7.50",), places=tuple(scene.places.items()))
    assert findings_of(render) == ["scenes/a_beat.py:2: Text 'a' overlaps Text 'b'", "Text 'c' is 20 px tall",
                                   "outside the safe area: Text at x 7.10..7.50"]


def test_a_scene_saved_while_the_warm_process_imports_it_is_imported_again(tmp_path):
    """What the warm process loaded is known by the files as they were before it imported them: a scene saved as it
    imports it, or one it imported only later (warming), is taken for saved, never kept as it was."""
    project = copy_project(tmp_path)
    script = """
import importlib, json, sys
from pathlib import Path
from render.studio import warm
before = warm.scene_files()
Path("scenes/style.py").write_text(Path("scenes/style.py").read_text() + "\\n# saved as the warm process imports\\n")
importlib.import_module("scenes.two_budgets")
loaded = warm.loaded_scenes(before)
importlib.import_module("scenes.prefill")  # (imported later, as a warming does, and not noted)
print(json.dumps({"forgot": warm.forget_scenes_if_saved(loaded),
                  "left": sorted(name for name in sys.modules if name.startswith("scenes."))}))
"""
    ran = subprocess.run([sys.executable, "-c", script], cwd=project, env={**os.environ, "PYTHONPATH": str(project)},
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    import json

    said = json.loads(ran.stdout.splitlines()[-1])
    assert said["forgot"] is True
    assert not {"scenes.style", "scenes.two_budgets", "scenes.prefill"} & set(said["left"]), said["left"]


@pytest.fixture(scope="module")
def prefill_studio(tmp_path_factory, default_tiny_film, other_tiny_film):
    """`film studio --beat prefill` on a copy of the project (its cache the session's tiny film's), started once for
    the tests below, which read it in the order they stand: the timeline, the accessibility audit, the player (which
    edits the narration, breaks the storyboard and mends it), then a deployment chosen on the page. Ctrl-C stops it
    at the end, as from a terminal."""
    project = studio_project(tmp_path_factory.mktemp("prefill-project"), default_tiny_film)
    seeded_cache(project / "build" / "cache", other_tiny_film)  # (the deployment test's choice: its speech, clips)
    process, address, lines = start_studio(project, "--beat", "prefill")
    try:
        yield project, process, address, lines
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        stopped(process)


def test_the_timeline_shows_the_whole_film_and_a_cue_opens_its_still(prefill_studio, default_tiny_film):
    """Issue 45: the film on one timeline (its beats as chapters where the timed plan puts them, each cue a mark, the
    narration's waveform); a cue's mark opens its still at full width; ] and [ move between the beats."""
    import json
    import urllib.request

    project, process, address, lines = prefill_studio
    driver = chromium()
    try:
        driver.set_window_size(1280, 900)
        driver.get(address)
        wait_for(driver, "var a = document.getElementById('beat-prefill'); return a && a.dataset.status == 'ready' "
                         "&& document.querySelector('#timeline path').getAttribute('d').length > 0;", 120)
        state = json.loads(urllib.request.urlopen(address + "state", timeout=10).read())
        timeline, plan = state["timeline"], default_tiny_film.result.plan
        assert [beat["id"] for beat in timeline["beats"]] == [beat.id for beat in plan.beats]
        width = driver.execute_script("return document.querySelector('#timeline .track').clientWidth;")
        for beat in plan.beats:  # each chapter where the timed plan puts it, each cue where it is spoken
            left = driver.execute_script("return document.querySelector('#timeline .chapter[data-beat=\"' + "
                                         "arguments[0] + '\"]').offsetLeft;", beat.id)
            assert abs(left - width * beat.start / plan.duration) <= 1.5, (beat.id, left)
            for name, at in beat.timing.cues.items():
                mark = driver.find_element("css selector", f"#timeline .cue[data-beat='{beat.id}'][data-cue='{name}']")
                centre = driver.execute_script("var r = arguments[0].getBoundingClientRect(), t = document."
                                               "querySelector('#timeline .track').getBoundingClientRect(); "
                                               "return r.left + r.width / 2 - t.left - 1;", mark)
                assert abs(centre - width * at / plan.duration) <= 2, (beat.id, name, centre)
        peaks = timeline["peaks"]
        assert len(peaks) == 1000 and max(peaks) == 1.0
        first_words = plan.beats[0].timing.speech_start
        assert max(peaks[:int(1000 * first_words / plan.duration)] or [0]) < 0.05  # silence before the first words
        assert sum(peak > 0.1 for peak in peaks) > 500  # speech most of the film

        driver.find_element("css selector", "#timeline .cue[data-beat=prefill][data-cue=ops]").click()
        wait_for(driver, "return document.getElementById('still-view').open;", 10)
        shown = driver.execute_script("return document.querySelector('#still-view img').getAttribute('src');")
        stills = driver.execute_script("return Array.from(document.querySelectorAll('#beat-prefill figure')).filter("
                                       "function (f) { return f.dataset.cue == 'ops'; }).map(function (f) { return "
                                       "f.querySelector('img').getAttribute('src'); });")
        assert stills and shown == stills[0]
        assert driver.execute_script("return document.querySelector('#still-view img').naturalWidth;") > 0
        driver.find_element("css selector", "#still-view button").click()
        driver.find_element("css selector", "#timeline .chapter[data-beat=two-waits]").click()
        driver.switch_to.active_element.send_keys("]")
        assert driver.execute_script("return document.activeElement.dataset.beat;") == "prefill"
        top = driver.execute_script("return document.getElementById('beat-prefill').getBoundingClientRect().top;")
        status = driver.execute_script("return document.getElementById('status').getBoundingClientRect().bottom;")
        assert top >= status - 1, (top, status)  # its heading below the sticky status, not covered by it
        driver.switch_to.active_element.send_keys("[")
        assert driver.execute_script("return document.activeElement.dataset.beat;") == "two-waits"
        assert [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"] == []
    finally:
        driver.quit()


def test_the_studio_page_passes_the_accessibility_audit_and_holds_up_on_a_phone(prefill_studio):
    """Issue 45: the studio's page passes the film page's audit (Deque's axe-core, bundled by selenium-axe-python) at
    1280 px and on a phone (375 px), drawn and with a still open; on the phone nothing is wider than the screen, the
    player and the timeline fit it, and a beat gone to is not under the sticky status."""
    from selenium_axe_python import Axe

    project, process, address, lines = prefill_studio
    driver = chromium()
    try:
        driver.get(address)
        wait_for(driver, "var a = document.getElementById('beat-prefill'); return a && a.dataset.status == 'ready' "
                         "&& document.querySelector('#timeline path').getAttribute('d').length > 0;", 120)
        for width, height, mobile in ((1280, 800, False), (375, 812, True)):
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
            for view in ("drawn", "a still open"):
                if view == "a still open":
                    driver.find_element("css selector", "#timeline .cue[data-beat=prefill][data-cue=ops]").click()
                    wait_for(driver, "return document.getElementById('still-view').open;", 10)
                axe = Axe(driver)
                axe.inject()
                results = axe.run()
                violations = [(rule["id"], rule["help"], [node["target"] for node in rule["nodes"]][:3])
                              for rule in results["violations"]]
                assert violations == [], (width, view, violations)
                assert len(results["passes"]) > 10  # (it ran its rules)
            driver.find_element("css selector", "#still-view button").click()
            sizes = driver.execute_script(
                "function right(s) { return document.querySelector(s).getBoundingClientRect().right; }"
                "return [document.documentElement.scrollWidth, window.innerWidth, right('#player .screen'), "
                "right('#timeline .track'), right('#deployment')];")
            assert max(sizes[0], *sizes[2:]) <= sizes[1] + 0.5, (width, sizes)  # nothing wider than the screen
            driver.find_element("css selector", "#timeline .chapter[data-beat=prefill]").click()
            top = driver.execute_script("return document.querySelector('#beat-prefill h2')"
                                        ".getBoundingClientRect().top;")
            status = driver.execute_script("return document.getElementById('status').getBoundingClientRect().bottom;")
            assert top >= status - 1, (width, top, status)  # its heading below the sticky status, not covered by it
    finally:
        driver.quit()


def test_the_player_plays_the_whole_film_scrubs_frame_by_frame_and_marks_what_is_stale(prefill_studio,
                                                                                        default_tiny_film):
    """Issue 45: the player shows the whole film on the film's clock, each beat's newest clip in place: a frame
    sought there is the still drawn at that moment (real pixels); the arrows step exactly a frame (with Shift, to the
    next cue), space plays and pauses, playing runs on into the next beat, the track scrubs; a narration edit is seen
    on the timeline and its new clip takes the old one's place; a stale beat is marked where it plays."""
    import json
    import urllib.request

    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    project, process, address, lines = prefill_studio
    storyboard = project / "script" / "storyboard.yaml"
    original = storyboard.read_text()
    driver = chromium()
    plan = default_tiny_film.result.plan
    prefill, after = plan.beat("prefill"), plan.beats[[beat.id for beat in plan.beats].index("prefill") + 1]
    fps = 3  # the tests' quality, `tiny`

    def player_time() -> float:
        return float(driver.execute_script("return document.getElementById('player').dataset.time;"))

    def keys(*sent) -> None:
        ActionChains(driver).send_keys(*sent).perform()

    try:
        driver.set_window_size(1280, 900)
        driver.get(address)
        wait_for(driver, "var a = document.getElementById('beat-prefill'); return a && a.dataset.status == 'ready' "
                         "&& document.querySelector('#timeline path').getAttribute('d').length > 0;", 120)
        clip = driver.execute_script("return document.querySelector('#beat-prefill video.clip').getAttribute('src');")
        driver.find_element("css selector", "#timeline .chapter[data-beat=prefill]").click()
        assert player_time() == pytest.approx(prefill.start, abs=1e-3)
        assert driver.execute_script("var p = document.getElementById('player'); return [p.dataset.beat, "
                                     "p.dataset.showing, p.querySelector('video').getAttribute('src')];") == \
            ["prefill", "clip", clip]

        # A frame sought on the player is the still drawn at that moment: stepped to from the beat's start.
        state = json.loads(urllib.request.urlopen(address + "state", timeout=10).read())
        panel = next(beat for beat in state["beats"] if beat["id"] == "prefill")
        cue = next(cue for cue in panel["cues"] if cue["name"] == "ops")
        still = next(still["url"] for still in panel["stills"] if still["cue"] == "ops")
        frames = round((prefill.start + cue["at"]) * fps) - round(prefill.start * fps)
        keys(Keys.ARROW_RIGHT * frames)
        wanted = round((prefill.start + cue["at"]) * fps) / fps
        assert player_time() == pytest.approx(wanted, abs=1e-3)
        wait_for(driver, SETTLED, 20, wanted - prefill.start + 1e-3)
        shown, drawn = driver.execute_async_script(FRAME_PIXELS, still)
        difference = sum(abs(a - b) for a, b in zip(shown, drawn)) / len(shown)
        keys(Keys.ARROW_LEFT * frames)
        wait_for(driver, SETTLED, 20, 1e-3)
        first, _ = driver.execute_async_script(FRAME_PIXELS, still)
        elsewhere = sum(abs(a - b) for a, b in zip(first, drawn)) / len(first)
        print(f"player frame against its still: {difference:.2f} grey levels; the beat's first frame: {elsewhere:.2f}")
        assert difference < 4 and elsewhere > 3 * difference, (difference, elsewhere)

        # Shift+arrow: the next cue, as the timeline marks it; space plays and pauses.
        ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.ARROW_RIGHT).key_up(Keys.SHIFT).perform()
        start_frame = round(prefill.start * fps) / fps  # (the beat's start, to the frame: maybe the one before's end)
        first_cue = min(at for beat in plan.beats for at in beat.timing.cues.values() if at > start_frame)
        assert player_time() == pytest.approx(first_cue, abs=1e-3)
        keys(" ")
        wait_for(driver, "return parseFloat(document.getElementById('player').dataset.time) > arguments[0] + 1 && "
                         "!document.querySelector('#player video').paused;", 30, first_cue)
        keys(" ")
        paused = player_time()
        time.sleep(0.5)
        assert player_time() == paused and driver.execute_script("return document.querySelector('#player video')"
                                                                  ".paused;")
        # Playing runs on into the next beat (not drawn by this studio: its title, the clock going on).
        driver.find_element("css selector", f"#timeline .chapter[data-beat={after.id}]").click()
        keys(Keys.ARROW_LEFT * 2, " ")
        wait_for(driver, "var p = document.getElementById('player'); return p.dataset.beat == arguments[0] && "
                         "parseFloat(p.dataset.time) > arguments[1] + 0.3;", 30, after.id, after.start)
        assert driver.execute_script("var p = document.getElementById('player'); return [p.dataset.showing, "
                                     "p.querySelector('.mark').textContent];")[0] == "still"
        keys(" ")

        # Scrubbing: a press on the track, then a drag, seeks the player there.
        track = driver.find_element("css selector", "#timeline .track")
        width = track.size["width"]
        middle = (prefill.start + prefill.end) / 2
        ActionChains(driver).move_to_element_with_offset(track, int(width * middle / plan.duration - width / 2), -10) \
            .click_and_hold().perform()
        assert player_time() == pytest.approx(middle, abs=plan.duration / width * 1.5)
        ActionChains(driver).move_by_offset(-20, 0).release().perform()
        assert player_time() == pytest.approx(middle - 20 * plan.duration / width, abs=plan.duration / width * 1.5)
        assert driver.execute_script("return document.getElementById('player').dataset.beat;") == "prefill"
        head = driver.execute_script("var h = document.querySelector('#timeline .playhead').getBoundingClientRect(), "
                                     "t = document.querySelector('#timeline .track').getBoundingClientRect(); "
                                     "return h.left + h.width / 2 - t.left;")
        assert abs(head - width * player_time() / plan.duration) <= 2

        # A narration edit: its words on the timeline, its new clip in the old one's place on the player.
        edit(project / "script" / "storyboard.yaml", "Prefill pushes the whole prompt",
             "Prefill pushes the entire prompt")
        wait_for(driver, "var a = document.getElementById('beat-prefill'); return a.dataset.status == 'ready' && "
                         "a.querySelector('video.clip').getAttribute('src') != arguments[0];", CLIP_BOUND * 2, clip)
        subtitles = json.loads(urllib.request.urlopen(address + "state", timeout=10).read())["timeline"]["subtitles"]
        assert any("entire prompt" in line["text"] for line in subtitles)
        assert not any("whole prompt" in line["text"] for line in subtitles)
        new_clip = driver.execute_script("return document.querySelector('#beat-prefill video.clip')"
                                         ".getAttribute('src');")
        assert driver.execute_script("return document.querySelector('#player video').getAttribute('src');") \
            == new_clip

        # A stale beat is marked where it plays: a storyboard that cannot be read leaves the last pictures, stale.
        edit(project / "script" / "storyboard.yaml", "  - id: prefill", "  - id: prefill\n   bad: [")
        wait_for(driver, "return document.getElementById('player').classList.contains('stale');", 30)
        assert driver.execute_script("return document.querySelector('#player .mark').textContent;").startswith("Stale")
        assert driver.execute_script("return document.querySelector('#timeline .chapter[data-beat=prefill]')"
                                     ".classList.contains('stale');")
        assert [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"] == []
    finally:
        # Mended for the next test: the storyboard as it was, prefill drawn again from it, nothing stale.
        if storyboard.read_text() != original:
            temporary = storyboard.with_name(".storyboard.yaml.saving")
            temporary.write_text(original)
            temporary.replace(storyboard)
            wait_for(driver, "var a = document.getElementById('beat-prefill'); return a.dataset.status == 'ready' && "
                             "!a.classList.contains('stale') && a.querySelector('.narration').textContent == "
                             "arguments[0];", CLIP_BOUND * 2, prefill.narration)
        driver.quit()


def test_a_deployment_chosen_on_the_page_is_drawn_without_a_restart(prefill_studio, default_tiny_film):
    """Issue 45: GPU, model, data type, GPU count, KV format and EFFICIENCY= chosen on the page; the studio draws
    what that changes (prefill's words and pictures name the new GPU), a choice that does not fit is a problem on
    the page with the last pictures kept, a bad value is refused with one message, and another page cannot choose."""
    import json
    import urllib.error
    import urllib.request

    from selenium.webdriver.support.ui import Select

    from render.plan.resolve import resolve_plan

    project, process, address, lines = prefill_studio
    driver = chromium()
    try:
        driver.get(address)
        ready = ("var a = document.getElementById('beat-prefill'); return a && a.dataset.status == 'ready' && "
                 "a.querySelectorAll('.stills img').length > 0")
        wait_for(driver, ready, 120)
        assert "H100 SXM · Llama 3.1 8B · BF16" in driver.find_element("css selector", "header .deployment").text
        assert Select(driver.find_element("name", "gpu")).first_selected_option.get_attribute("value") == "h100-sxm"
        before = pictures(driver)["prefill"][1]

        # The suite's other tiny film's choice (its speech and clips are in the studio's cache: the studio draws the
        # new stills, and its clip is the cached one).
        a100 = resolve_plan(**OTHER_CHOICE)
        Select(driver.find_element("name", "gpu")).select_by_value(OTHER_CHOICE["gpu"])
        Select(driver.find_element("name", "model")).select_by_value(OTHER_CHOICE["model"])
        Select(driver.find_element("name", "dtype")).select_by_value(OTHER_CHOICE["dtype"])
        driver.find_element("css selector", "#deployment button").click()
        wait_for(driver, "return document.querySelector('#beat-prefill .narration').textContent == arguments[0];", 60,
                 a100.beat("prefill").narration)
        assert "A100 80GB SXM · Llama 3.1 70B · INT8" in driver.find_element("css selector", "header .deployment").text
        wait_for(driver, ready + " && !a.classList.contains('stale')", 120)
        after = pictures(driver)["prefill"][1]
        assert after and set(after).isdisjoint(before), (before, after)  # drawn again, for the new GPU
        # Before and after: each new still keeps the one it replaced, shown in its place by its figure's button.
        befores = driver.execute_script("return Array.from(document.querySelectorAll('#beat-prefill figure')).map("
                                        "function (f) { return f.dataset.before; });")
        assert sorted(befores) == sorted(before), (befores, before)
        toggle = driver.find_element("css selector", "#beat-prefill figure button.before")
        toggle.click()
        wait_for(driver, "var i = document.querySelector('#beat-prefill figure img'); return i.complete && "
                         "i.naturalWidth > 0 && i.getAttribute('src') == arguments[0];", 10, befores[0])
        assert toggle.get_attribute("aria-pressed") == "true"
        toggle.click()
        assert pictures(driver)["prefill"][1] == after

        Select(driver.find_element("name", "gpu")).select_by_value("rtx-4090")
        gpus = driver.find_element("name", "gpus")
        gpus.clear()
        gpus.send_keys("1")
        Select(driver.find_element("name", "model")).select_by_value("llama-3.1-70b")
        driver.find_element("css selector", "#deployment button").click()
        wait_for(driver, "return !document.getElementById('problem').hidden;", 60)
        assert "does not fit" in driver.find_element("css selector", "#problem .message").text
        assert pictures(driver)["prefill"][1] == after and pictures(driver)["prefill"][3]  # kept, marked stale

        refused = driver.execute_async_script(
            "var done = arguments[arguments.length - 1]; fetch('choose', {method: 'POST', headers: {'Content-Type': "
            "'application/json'}, body: JSON.stringify({gpu: 'h100-sxm', gpus: 99})}).then(function (r) { return "
            "r.json().then(function (b) { done([r.status, b.error]); }); });")
        assert refused == [400, "GPUs 99: give a whole number from 1 to 8"], refused
        for body, why in ((b'{"model": "/etc/passwd"}', "model '/etc/passwd': give an id from the catalog"),
                          (b'{"colour": "red"}', "a choice is an object of gpu, model")):
            request = urllib.request.Request(address + "choose", body, {"Content-Type": "application/json"})
            with pytest.raises(urllib.error.HTTPError) as answer:
                urllib.request.urlopen(request, timeout=10)
            assert answer.value.code == 400 and why in json.loads(answer.value.read())["error"]
        other = urllib.request.Request(address + "choose", b'{"gpu": "b200"}', {"Content-Type": "application/json",
                                                                                 "Origin": "http://example.com"})
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(other, timeout=10)
        assert answer.value.code == 403
        assert not any("Traceback" in line for line in lines), "".join(lines)
    finally:
        driver.quit()
