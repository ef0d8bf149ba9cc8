"""Hostile input, third pass (issue 42), outside the studio: what a save in the middle of editing can leave (a
half-typed scene, a link loop, a FIFO), YAML that expands, templates that spend without being metered, numbers that
leave every range. Each case ends in one message naming the file and place, within a bound measured here."""

from __future__ import annotations

import os
import re
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

from conftest import ROOT, copy_project

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
    return copy_project(tmp_path / "project")


# -- 1. a scene saved with a syntax error -----------------------------------------------------------------------


@pytest.mark.parametrize("module, beat", [("two_waits.py", "two-waits"), ("figures/counters.py", "prefill")])
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
    from render.plan.beat_scene import scene_of
    from render.video import cues

    monkeypatch.setattr(cues, "PROJECT_ROOT", project)
    entry = scene_of("two-waits")
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
    # (VmHWM, this process's own peak: ru_maxrss starts from the forking worker's, which may be far larger)
    probe = ("import re, sys\nfrom render.errors import FilmError\nfrom render.plan.resolve import resolve_plan\n"
             "try:\n    resolve_plan()\nexcept FilmError as error:\n    print(error)\n"
             "print(int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) // 1024)\n")
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
    started = time.process_time()  # CPU seconds: a busy machine does not stretch them
    try:
        with pytest.raises(FilmError, match=r"bomb\.yaml:2: the value anchored here"):
            load_yaml(path)
        seconds, peak = time.process_time() - started, tracemalloc.get_traced_memory()[1]
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
    started = time.process_time()  # CPU seconds: a busy machine does not stretch them
    try:
        with pytest.raises(FilmError, match="the template sandbox refuses more than 100,000 steps of work"):
            fill(WORK[name], {}, "script/storyboard.yaml:40", "beat 'prefill' narration")
        seconds, peak = time.process_time() - started, tracemalloc.get_traced_memory()[1]
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


# -- 13. redaction compares what a reader would see ---------------------------------------------------------------


SECRET = "sk-SE5ecret-0123456789abcdef"
SPELLINGS = {
    "decimal entities with leading zeros": lambda key: "".join(f"&#0{ord(char)};" for char in key),
    "hex entities, upper-case X": lambda key: "".join(f"&#X{ord(char):X};" for char in key),
    "entities without semicolons": lambda key: "".join(f"&#{ord(char)}" for char in key),
    "an escaped entity": lambda key: "".join(f"&amp;#{ord(char)};" for char in key),
    "JSON escapes, upper-case": lambda key: "".join(f"\\u{ord(char):04X}" for char in key),
    "percent, twice over": lambda key: "".join(f"%25{ord(char):02x}" for char in key),
    "zero-width spaces between": lambda key: "\u200b".join(key),
    "soft hyphens between": lambda key: "\u00ad".join(key),
    "word joiners and a BOM": lambda key: "\u2060".join(key[:10]) + "\ufeff" + key[10:],
    "split by a line break": lambda key: key[:12] + "\r\n" + key[12:],
    "variation selectors between": lambda key: "\ufe0f".join(key),
    "split by a space": lambda key: key[:7] + " " + key[7:],
    "named entities": lambda key: key.replace("-", "&hyphen;").replace("-", "&#45;").replace("s", "&#x73"),
}


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_redaction_finds_the_key_however_it_is_spelt(spelling):
    from render.measure.redact import Redactor, readable

    spelt = SPELLINGS[spelling](SECRET)
    redact = Redactor(SECRET)
    if spelling == "named entities":  # &hyphen; is U+2010, not the key's "-": that reads as another text
        assert readable(spelt)[0] != SECRET and redact(f"key {spelt} here") == f"key {spelt} here"
        return
    assert "".join(readable(spelt)[0].split()) == SECRET  # (spaces: the redactor reads past them too)
    assert redact(f"invalid key: {spelt}, try again") == "invalid key: ***, try again"
    assert redact(f"x{spelt}y") == "x***y"  # glued to letters: still the key's characters


def test_redaction_leaves_ordinary_text_and_escapes_alone():
    from render.measure.redact import Redactor

    redact = Redactor(SECRET)
    text = "HTTP 400 &amp; &#60;b&#62; 50% off \\u00e9t\\u00e9 sk-other-0123456789abcdef \u200bzero width"
    assert redact(text) == text


@pytest.mark.parametrize("spelling", ["decimal entities with leading zeros", "hex entities, upper-case X",
                                      "zero-width spaces between", "split by a line break",
                                      "variation selectors between"])
def test_a_server_echoing_the_key_in_any_spelling_leaks_none_of_it(tmp_path, spelling):
    import yaml

    from fake_endpoint import FakeEndpoint

    out = tmp_path / "rig.yaml"
    with FakeEndpoint(mode="echo-model", first_delay=0.02, token_delay=0.002, tokens=8,
                      spell=SPELLINGS[spelling]) as server:
        result = subprocess.run([sys.executable, "-m", "render.cli", "measure", "--base-url", server.url, "--model",
                                 "m", "--prompt-tokens", "34,200", "--runs", "1", "--max-tokens", "8", "--api-key-env",
                                 "RIG_KEY", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                                env={**os.environ, "RIG_KEY": SECRET}, timeout=120)
    assert result.returncode == 0, result.stderr
    written = yaml.safe_load(out.read_text())
    assert written["model_reported"] == "served/model for Bearer ***", written["model_reported"]
    everything = out.read_text() + result.stdout + result.stderr
    for piece in (SECRET[3:9], SECRET[-8:], "&#0115", "&#X73"):
        assert piece not in everything, piece


def test_a_server_echoing_the_key_in_an_error_leaks_none_of_it():
    from fake_endpoint import FakeEndpoint

    for spelling in ("decimal entities with leading zeros", "soft hyphens between", "variation selectors between"):
        with FakeEndpoint(mode="echo-401", spell=SPELLINGS[spelling]) as server:
            result = subprocess.run([sys.executable, "-m", "render.cli", "measure", "--base-url", server.url,
                                     "--model", "m", "--prompt-tokens", "34,200", "--runs", "1", "--api-key-env",
                                     "RIG_KEY", "--out", "/nonexistent/never.yaml"], cwd=ROOT, capture_output=True,
                                    text=True, env={**os.environ, "RIG_KEY": SECRET}, timeout=120)
        assert result.returncode == 1 and "invalid credentials: Bearer ***" in result.stderr, result.stderr
        assert SECRET[3:9] not in result.stderr and "&#0" not in result.stderr and "\u00ad" not in result.stderr
        assert "\ufe0f" not in result.stderr


# -- 14. nothing a server says moves the terminal -----------------------------------------------------------------


def test_escape_sequences_in_a_servers_error_never_reach_the_terminal():
    from fake_endpoint import FakeEndpoint

    with FakeEndpoint(mode="escape-400") as server:
        result = subprocess.run([sys.executable, "-m", "render.cli", "measure", "--base-url", server.url, "--model",
                                 "m", "--prompt-tokens", "34,200", "--runs", "1", "--out", "/nonexistent/never.yaml"],
                                cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "HTTP 400" in result.stderr and "bad" in result.stderr and "request" in result.stderr, result.stderr
    said = result.stdout + result.stderr
    assert not [char for char in said if ord(char) < 32 and char not in "\n\t" or 0x7f <= ord(char) <= 0x9f], \
        repr(said)


def test_terminal_text_keeps_lines_and_drops_everything_a_terminal_obeys():
    from render.text import terminal_text

    assert terminal_text("one\n\x1b]0;TITLE\x07two\x1b[2J\tthree\x1b[31m\r\x00\u202e") == "one\ntwo\tthree"


# -- 15. numbers with a floor -------------------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["compute=5e-324,memory=0.5", "compute=1e-300,memory=1e-300",
                                   "compute=0.6,memory=0.009"])
def test_efficiency_below_one_percent_is_refused_with_one_message(given):
    message, seconds = refused("plan", "--efficiency", given)
    assert f"EFFICIENCY={given}:" in message and "must be a share of the ceiling from 0.01 to 1" in message
    assert seconds < 30


def test_a_fit_below_the_floor_is_refused_with_its_reason(project):
    dataset = project / "data" / "measured" / "openrouter-coreweave-llama-3.1-8b-bf16.yaml"
    slow = dataset.with_name("slow.yaml")
    slow.write_text(dataset.read_text().replace("id: openrouter-coreweave-llama-3.1-8b-bf16", "id: slow")
                    .replace("decode_tokens_per_second: 156 ", "decode_tokens_per_second: 0.011 ")
                    .replace("decode_tokens_per_second: 136 ", "decode_tokens_per_second: 0.01 "))
    message, _ = refused("plan", "--efficiency", "slow", cwd=project)
    assert message.startswith("error: EFFICIENCY=slow: its fit reaches only 0.00") and \
        "of bandwidth of H100 SXM, under the 1% a film's numbers are worth speaking at" in message, message


def test_a_number_the_narration_cannot_say_is_refused_before_it_is_spoken():
    for source, says in (("{{ 1e300|count }}", "out of the range a film speaks"),
                         ("{{ 0.004|tokens_per_second }}", "would say 0.004 as '0 tokens a second'"),
                         ("{{ 0.3|count }} users", "would say 0.3 as '0'")):
        with pytest.raises(FilmError, match=re.escape(says)):
            fill(source, {}, "script/storyboard.yaml:40", "beat 'decode' narration")
    assert fill("{{ 0|count }} {{ 1|quantity('operation') }} {{ 0.0000003|milliseconds }}", {}, "here", "a test") \
        == "0 one operation 0.0003 milliseconds"


@pytest.mark.parametrize("ttfts, says", [
    ((599.99, 600, 600), "prefill's arithmetic comes out at more than 10 times"),
    ((300, 300.0001, 300.0002), "prefill's arithmetic comes out at more than 10 times"),
    ((599, 599.5, 600), "prefill's arithmetic is undetermined (its uncertainty is larger than the share itself)"),
])
def test_calibrate_never_prints_an_absurd_percentage(project, ttfts, says):
    dataset = project / "data" / "measured" / "openrouter-coreweave-llama-3.1-8b-bf16.yaml"
    text = dataset.read_text().replace("id: openrouter-coreweave-llama-3.1-8b-bf16", "id: flat")
    for old, new in zip(("ttft_seconds: 0.3\n", "ttft_seconds: 0.3\n", "ttft_seconds: 0.74\n"), ttfts):
        text = text.replace(old, f"ttft_seconds: {new}\n", 1)
    dataset.with_name("flat.yaml").write_text(text)
    result, _ = film("calibrate", "--measured", "flat", cwd=project)
    assert result.returncode == 0, result.stderr
    assert says in result.stdout, result.stdout
    percentages = [float(found.replace(",", "")) for found in re.findall(r"([\d,.]+)%", result.stdout)]
    assert percentages and max(percentages) <= 1000, result.stdout
    assert "prefill arithmetic" not in result.stdout  # no share printed for what the timings cannot tell
