"""Hostile input, third pass (issue 42), outside the studio: what a save in the middle of editing can leave (a
half-typed scene, a link loop, a FIFO), YAML that expands, templates that spend without being metered, numbers that
leave every range. Each case ends in one message naming the file and place, within a bound measured here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import pytest

from render.errors import FilmError
from render.plan.resolve import resolve_plan
from render.plan.templating import fill, one_budget

from conftest import ROOT

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def film(*args: str, cwd: Path = ROOT, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    """A `film` command run as a user runs it (killed if it outlives `timeout`), and its seconds."""
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "render.cli", *args], cwd=cwd, capture_output=True, text=True,
                            timeout=timeout, env={**os.environ, "PYTHONPATH": str(cwd)})
    return result, time.monotonic() - started


def refused(*args: str, cwd: Path = ROOT, timeout: float = 60) -> tuple[str, float]:
    """`film …` refused with one line and no traceback: that line, and the seconds it took."""
    result, seconds = film(*args, cwd=cwd, timeout=timeout)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr.strip(), seconds


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the project's code and files (not its build), for edits a user might save."""
    copy = tmp_path / "project"
    for part in ("render", "scenes", "script", "data", "pyproject.toml"):
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, copy / part, ignore=shutil.ignore_patterns("__pycache__"), symlinks=True)
        else:
            shutil.copy2(source, copy / part)
    return copy


# -- 1. a scene saved with a syntax error -----------------------------------------------------------------------


@pytest.mark.parametrize("module, beat", [("two_waits.py", "two-waits"), ("helpers.py", "prefill")])
def test_a_half_typed_scene_is_named_with_its_line_not_a_traceback(project, module, beat):
    scene = project / "scenes" / module
    lines = scene.read_text().count("\n")
    with open(scene, "a") as handle:
        handle.write("def broken(:\n")
    message, _ = refused("plan", cwd=project)
    assert f"scenes/{module}:{lines + 1}:12: invalid syntax (a Python syntax error); fix it and save the file again" \
        in message, message
    assert "<unknown>" not in message


def test_an_edited_scene_has_its_cues_checked_again(project, monkeypatch):
    """The cue check reads the scene as it is now (it was cached for the process's life): a scene that stops
    waiting for a cue it marks is refused after the edit, in the same process, as in the studio."""
    from render.plan.registry import scene_entry
    from render.video import cues

    monkeypatch.setattr(cues, "PROJECT_ROOT", project)
    entry = scene_entry("two-waits")
    assert "paste" in cues.cues_waited_for(entry)
    scene = project / entry.path
    scene.write_text(scene.read_text().replace('self.at("paste"', 'self.at("pasted"'))
    waited = cues.cues_waited_for(entry)
    assert "pasted" in waited and "paste" not in waited


# -- 2. a number a float cannot hold, in a narration -------------------------------------------------------------


@pytest.mark.parametrize("source", ["{{ 1e309 }}", "{% if 1e999 %}yes{% endif %}", "{{ -1e309 }}",
                                    "{{ 1e308 * 10 }}", "{{ (1e308 + 1e308)|round }}"])
def test_an_infinite_number_in_a_narration_is_one_message(source):
    with pytest.raises(FilmError) as raised:
        fill(source, {}, "script/storyboard.yaml:40", "beat 'prefill' narration")
    message = str(raised.value)
    assert message.startswith("script/storyboard.yaml:40: beat 'prefill' narration: ")
    assert "infinite" in message or "not finite" in message, message
    assert "NameError" not in message


def test_the_command_line_names_an_infinite_number_in_the_storyboard(project):
    storyboard = project / "script" / "storyboard.yaml"
    storyboard.write_text(storyboard.read_text().replace("So treat them as", "So {{ 1e309 }} treat them as", 1))
    message, seconds = refused("plan", cwd=project)
    assert "script/storyboard.yaml:" in message and "beat 'two-budgets' narration" in message, message
    assert "infinite" in message and seconds < 30


# -- 3, 7, 8. link loops, FIFOs and devices where a file should be ---------------------------------------------


def test_a_link_loop_is_named_wherever_a_file_is_given(tmp_path):
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop.name)
    for option, what in (("--storyboard", "a storyboard"), ("--model", "a Hugging Face config.json")):
        message, seconds = refused("plan", option, str(loop))
        assert f"{loop}: is a link that loops (a link to itself, or a circle of links), not a file; give the path " \
               f"of {what}" in message, message
        assert seconds < 15


@needs_fifo
def test_a_storyboard_or_catalog_file_that_is_a_fifo_or_dev_zero_is_refused_at_once(project):
    """The files were hashed with a whole read before the capped reader saw them: a FIFO hung, /dev/zero read until
    memory ran out. Now refused at once, without reading (peak memory measured in the refusing process)."""
    fifo = project / "script" / "fifo.yaml"
    os.mkfifo(fifo)
    message, seconds = refused("plan", "--storyboard", str(fifo), timeout=20)
    assert "script/fifo.yaml: is a FIFO (named pipe), not a file; give the path of a storyboard" in message
    assert seconds < 15
    gpus = project / "data" / "gpus.yaml"
    gpus.unlink()
    gpus.symlink_to("/dev/zero")
    probe = ("import resource, sys\nfrom render.errors import FilmError\nfrom render.plan.resolve import resolve_plan\n"
             "try:\n    resolve_plan()\nexcept FilmError as error:\n    print(error)\n"
             "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)\n")
    started = time.monotonic()
    ran = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, timeout=30,
                         env={**os.environ, "PYTHONPATH": str(project)})
    seconds = time.monotonic() - started
    message, peak_mib = ran.stdout.strip().splitlines()
    assert message == "data/gpus.yaml: is a device, not a file; give the path of the catalog's gpus (data/gpus.yaml)"
    assert int(peak_mib) < 500 and seconds < 15, (peak_mib, seconds)


@needs_fifo
@pytest.mark.parametrize("kind", ["fifo", "device", "loop"])
def test_a_measured_dataset_that_is_not_a_file_is_named_as_such(project, kind):
    measured = project / "data" / "measured"
    path = measured / "odd.yaml"
    if kind == "fifo":
        os.mkfifo(path)
        says = "is a FIFO (named pipe)"
    elif kind == "device":
        path.symlink_to("/dev/zero")
        says = "is a device"
    else:
        path.symlink_to(path.name)
        says = "is a link that loops"
    message, seconds = refused("plan", "--measured", "odd", cwd=project, timeout=20)
    assert f"data/measured/odd.yaml: {says}" in message and "did you mean" not in message, message
    assert seconds < 15
    listed, _ = film("list", "measured", cwd=project, timeout=20)
    assert listed.returncode == 0, listed.stderr
    assert "openrouter-coreweave-llama-3.1-8b-bf16" in listed.stdout and "odd" not in listed.stdout
    assert f"left out: data/measured/odd.yaml: {says}" in listed.stderr and "Traceback" not in listed.stderr


# -- 9. YAML aliases --------------------------------------------------------------------------------------------


BILLION_LAUGHS = textwrap.dedent("""\
    calibration:
      a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
      b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
      d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
      e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
      f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
      g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
      h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
      i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
    """)


def test_yaml_aliases_are_refused_in_free_form_records_too(project):
    dataset = project / "data" / "measured" / "openrouter-coreweave-llama-3.1-8b-bf16.yaml"
    text = dataset.read_text()
    assert "\ncalibration:" not in text
    dataset.write_text(text + BILLION_LAUGHS)
    line = text.count("\n") + 2
    for command in (("plan", "--json"), ("narration", "--voice", "hibari")):
        started = time.monotonic()
        result, seconds = film(*command, cwd=project, timeout=60)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert f"data/measured/openrouter-coreweave-llama-3.1-8b-bf16.yaml:{line}: the value anchored here (&name) " \
               f"is used again by an alias (*name)" in result.stderr, result.stderr
        assert time.monotonic() - started < 30


def test_an_alias_bomb_costs_what_the_file_holds(tmp_path):
    from render.specs.yamlio import load_yaml

    path = tmp_path / "bomb.yaml"
    path.write_text(BILLION_LAUGHS)
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(FilmError, match=r"bomb\.yaml:2: the value anchored here"):
            load_yaml(path)
        seconds, peak = time.monotonic() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seconds < 2 and peak < 5 * 2**20, (seconds, peak)


# -- 10. the template budget counts work ------------------------------------------------------------------------


BIG = '{% set s = "ab" * 4999 %}'
WORK = {
    "max over a long list": BIG + '{% for i in "x" * 1000 %}{{ s|max }}{% endfor %}',
    "min, nested": BIG + '{% for i in "x" * 100 %}{% for j in "x" * 100 %}{{ s|min }}{% endfor %}{% endfor %}',
    "length and title": BIG + '{% for i in "x" * 1000 %}{{ (s|title)|length }}{% endfor %}',
    "a membership chain": BIG + '{% for i in "y" * 1000 %}{{ "z" in s' + " in s" * 49 + ' }}{% endfor %}',
    "equality chains": BIG + '{% set t = "ab" * 4999 %}{% for i in "y" * 1000 %}{% if s == t' + " == s == t" * 24
                       + ' %}{% endif %}{% endfor %}',
}


@pytest.mark.parametrize("name", WORK)
def test_the_template_budget_counts_work_not_calls(name):
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(FilmError, match="the template sandbox refuses more than 100,000 steps of work"):
            fill(WORK[name], {}, "script/storyboard.yaml:40", "beat 'prefill' narration")
        seconds, peak = time.monotonic() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seconds < 2 and peak < 50 * 2**20, f"{name}: {seconds:.2f} s, {peak / 2**20:.0f} MiB"


def test_a_storyboard_shares_one_budget_across_its_templates():
    """Nine narrations each just under the budget were nine budgets; now they draw on one."""
    almost = '{% for i in "x" * 200 %}{% for j in "x" * 200 %}{% endfor %}{% endfor %}'  # about 40,000 steps
    assert fill(almost, {}, "here", "one") == ""
    with one_budget(), pytest.raises(FilmError, match="more than 100,000 steps of work"):
        for beat in range(9):
            fill(almost, {}, f"script/storyboard.yaml:{40 + beat}", f"beat {beat} narration")
    beats = resolve_plan().beats  # and the film's own templates are far inside it
    assert len(beats) == 9


def test_comparisons_still_read_as_python_chains_them():
    text = fill("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' in 'cat' }} {{ 'z' not in 'cat' }} {{ 2 == 2.0 != 3 }} "
                "{% if 'b' in ['a', 'b'] %}yes{% endif %}", {}, "here", "a test")
    assert text == "True False True True True yes"
