"""The extended cut (CUT=extended): the film goes on, after "The cache rides along", to a server under load, every
number from the serving simulator as `film load` gives it; and the film as the transcript times it is untouched."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from render import formatting as fmt
from render.errors import FilmError
from render.files import STORYBOARD_PATH
from render.plan.resolve import resolve_plan
from conftest import ROOT, run_film
from test_layout import SUITE_LINT_CHOICES

NEW_BEATS = ("queue", "long-prompt", "capacity")


@pytest.fixture(scope="module")
def extended():
    return resolve_plan(cut="extended")


@pytest.fixture(scope="module")
def default():
    return resolve_plan()


def without_cuts(folder: Path) -> Path:
    """The storyboard as it was before it had cuts: everything above `cuts:`."""
    text = STORYBOARD_PATH.read_text()
    path = folder / "storyboard.yaml"
    path.write_text(text[:text.index("\n# Other cuts of the film")] + "\n")
    return path


def test_the_cut_goes_after_the_cache_rides_along_and_moves_the_end_on(extended, default):
    ids = [beat.id for beat in extended.beats]
    assert ids == [beat.id for beat in default.beats][:8] + list(NEW_BEATS) + ["two-budgets"]
    added = sum(extended.beat(beat_id).duration for beat_id in NEW_BEATS)
    assert 45 <= added <= 75
    assert extended.beat("queue").start == default.beat("cache-rides-along").end
    assert extended.beat("two-budgets").start == default.beat("two-budgets").start + added
    assert extended.duration == default.duration + added
    for before, after in zip(extended.beats, extended.beats[1:]):
        assert before.end == after.start
    # The beats before it are the film's, word for word and to the second.
    for beat in default.beats[:8]:
        assert extended.beat(beat.id) == beat
    assert extended.choice.name == "h100-sxm-llama-3.1-8b-bf16-extended" and not extended.choice.is_default


def test_the_default_plan_is_as_it_was_before_the_storyboard_had_cuts(default, tmp_path):
    copy = without_cuts(tmp_path)
    before = resolve_plan(storyboard_path=copy)
    assert default.to_json() == before.to_json().replace(str(copy), "script/storyboard.yaml")
    assert '"load"' not in default.to_json() and '"cut"' not in default.to_json()


def test_every_number_the_cut_speaks_is_what_film_load_prints(extended):
    """The plan's load group against `film load --json` at the same settings, a separate process: the film's rate
    under every scheduler, and the sweep's capacities and curves."""
    load = extended.load
    p = load.parameters
    settings = ["--prompt-tokens", str(load.prompt_tokens), "--answer-tokens", str(p.answer_tokens),
                "--requests", str(p.requests), "--seed", str(p.seed),
                "--slo", f"ttft={p.slo_ttft_seconds},tpot={p.slo_tpot_seconds}", "--batch", str(p.static_batch),
                "--max-wait", str(p.static_wait_seconds),
                "--max-num-batched-tokens", str(p.max_num_batched_tokens),
                "--scheduler", "static,continuous,chunked,disaggregated",
                "--json"]
    at_rate = run_film("load", "--rate", str(load.rate), *settings)
    assert at_rate.returncode == 0, at_rate.stderr
    reports = {report["scheduler"]: report for report in json.loads(at_rate.stdout)}
    for found in load.schedulers:
        report = reports[found.name]
        assert found.ttft_p90_seconds == pytest.approx(report["ttft_seconds"]["p90"], rel=1e-9)
        assert found.ttft_p50_seconds == pytest.approx(report["ttft_seconds"]["p50"], rel=1e-9)
        assert found.tpot_p90_seconds == pytest.approx(report["tpot_seconds"]["p90"], rel=1e-9)
        assert found.goodput == pytest.approx(report["goodput_requests_per_second"], rel=1e-9)
    swept = run_film("load", "--sweep", ",".join(f"{rate:g}" for rate in load.rates), *settings)
    assert swept.returncode == 0, swept.stderr
    sweep = json.loads(swept.stdout)
    assert list(load.rates) == sweep["rates"]
    # film load's own sweep, taken on past the highest knee where it ends short of it, and the film's rate among them
    auto = json.loads(run_film("load", "--sweep", "auto", *settings).stdout)
    assert load.rate in load.rates
    others = [rate for rate in load.rates if rate != load.rate]
    # (each a round step apart: 2, 4, 6 … requests a second; past film load's where a knee lies beyond its end)
    step = others[0]
    assert others == pytest.approx([step * index for index in range(1, len(others) + 1)], rel=1e-9)
    assert step / 10 ** math.floor(math.log10(step)) in (1, 2, 2.5, 5) and 10 <= len(others) <= 20
    highest = max(found.capacity for found in load.schedulers if found.capacity is not None)
    assert others == auto["rates"] or (others[-1] > auto["rates"][-1] and others[-1] >= 1.25 * highest)
    for found in load.schedulers:
        assert found.capacity == sweep["capacity_requests_per_second"][found.name]
        assert list(found.p90_ttft_curve) == pytest.approx(
            [report["ttft_seconds"]["p90"] for report in sweep["reports"][found.name]], rel=1e-9)
    # The film's rate is film load's own when none is given: half the deployment's saturation.
    alone = run_film("load", *settings[:-3], "--json")
    assert json.loads(alone.stdout)["rate"] == load.rate


def test_the_narration_says_the_simulations_numbers(extended):
    load = extended.load
    queue, long, capacity = (extended.beat(beat_id).narration for beat_id in NEW_BEATS)
    assert f"here {fmt.approx(load.rate)} requests a second" in queue
    assert fmt.duration(load.continuous.ttft_p90_seconds) in queue
    assert fmt.duration(load.static.ttft_p90_seconds) in queue
    assert f"{fmt.count(load.long_prompt_tokens)}-token prompt" in long
    assert fmt.duration(load.stall_seconds) in long and f"{load.chunks} pieces" in long
    assert fmt.milliseconds(load.chunked_step_seconds) in long
    assert f"{fmt.approx(load.continuous.capacity)} requests a second with continuous batching" in capacity
    assert f"{fmt.approx(load.chunked.capacity)} chunked" in capacity
    assert load.static.capacity is None and f"static fewer than {fmt.approx(load.rates[0])}" in capacity
    assert f"two H100s take {fmt.approx(load.disaggregated.capacity)}" in capacity
    # A knee: the continuous curve is flat well below its capacity and past the objective above it.
    curve = dict(zip(load.rates, load.continuous.p90_ttft_curve))
    assert max(value for rate, value in curve.items() if rate < load.continuous.capacity / 2) < 0.5
    assert max(curve.values()) > 2 * 0.5


def test_a_deployment_that_meets_no_objective_says_so(extended):
    """Under an objective no scheduler can meet (a token in a microsecond), the capacity beat says so rather than
    naming a number."""
    from render.plan.load import load_numbers
    from render.plan.phrases import capacities, disaggregation

    impossible = load_numbers(extended.choice, 2000, 32000, type(extended.load.parameters)(
        **{**extended.load.parameters.__dict__, "slo_tpot_seconds": 0.001}))
    assert not impossible.serves
    assert capacities(impossible, extended.choice.hardware) == \
        f"meets them under no scheduler, not even at {fmt.approx(impossible.rates[0])} requests a second"
    assert disaggregation(impossible, extended.choice.hardware).endswith("two H100s miss them too")


@pytest.mark.parametrize("old, new, message", [
    ("        length: 24\n", "        length: 2\n",
     r"storyboard\.yaml:\d+: cut 'extended' beat 'queue': length 2 is 2 seconds; give a beat from 5 to 120 seconds"),
    ("    after: cache-rides-along\n", "    after: cache-rides\n",
     r"storyboard\.yaml:\d+: cut 'extended': after must name one of the film's beats but its last .*not 'cache-rides'"),
    ("      - id: long-prompt\n", "      - id: prefill\n",
     r"storyboard\.yaml:\d+: cut 'extended' beat 'prefill': the film already has a beat 'prefill'"),
    ("      max_num_batched_tokens: 512 ", "      max_num_batched_tokens: 5 ",
     r"storyboard\.yaml:\d+: cut 'extended' load: max_num_batched_tokens must be from 16 to 65,536 tokens, not 5"),
])
def test_a_bad_cut_is_named_where_it_is_written(storyboard_copy, old, new, message):
    with pytest.raises(FilmError, match=message):
        resolve_plan(storyboard_path=storyboard_copy(old, new))


def test_an_unknown_cut_names_the_cuts_there_are():
    made = run_film("plan", "--cut", "director's")
    assert made.returncode != 0 and "Traceback" not in made.stderr
    assert ("--cut \"director's\": script/storyboard.yaml defines the cuts default, extended (CUT=extended)"
            in made.stderr)


def test_make_passes_cut_on_as_text(tmp_path):
    made = subprocess.run(["make", "-s", "plan", "CUT=extended; touch pwned"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert made.returncode != 0 and "--cut 'extended; touch pwned':" in made.stderr
    assert not (ROOT / "pwned").exists()


def cut_choice_check(choice: tuple, cache: Path, lint: bool) -> tuple:
    """One choice's extended cut narrated (check-choices' own check: its speech within every slot), and with `lint`,
    the new beats' layout and captions linted (as tests/test_layout.py lints the film's)."""
    from render.plan.types import FilmRequest
    from render.tools import check_choices as cc
    from render.video.beats import lint_beat
    from render.voice.narration import Narrator
    from render.voice.subtitles import caption_problems

    gpu, gpus, model, dtype, *efficiency = choice
    request = FilmRequest(gpu, model, dtype, gpus, efficiency=efficiency[0] if efficiency else None, cut="extended")
    checked = cc.check_choice(request, cache)
    problems = []
    if lint and checked.outcome == "fits":
        plan = Narrator(resolve_plan(request, recordings=cache / "none"), cache).narrate().plan
        for beat_id in NEW_BEATS:
            beat = plan.beat(beat_id)
            problems += [f"{beat_id}: {problem}" for problem in lint_beat(plan, beat_id, cache)]
            problems += [f"{beat_id}: caption {problem}"
                         for problem in caption_problems(list(beat.timing.subtitles), beat.end)]
    return checked, problems


# The choices that stress the cut's own pictures are the suite's four of the layout's stress set (test_layout.py's
# SUITE_LINT_CHOICES): the slowest GPU (the longest numbers), 256 experts on eight GPUs, two L40S that miss the
# objectives, and a film of expected numbers; each costs some 25 s of simulation, so the stress set's other choices
# are the cut's in `film check-choices --stress --layout --cut extended` (docs/tests.md).
CUT_LINT_CHOICES = SUITE_LINT_CHOICES


def test_the_extended_cut_narrates_and_lays_out_for_every_choice_that_stresses_it(lint_cache):
    """For the lint set's choices that stress the cut (CUT_LINT_CHOICES), each linted (no text over text or an edge,
    nothing in the margin, every caption readable), and check-choices' sample's widest deployment (eight GPUs): the
    cut's speech fits every slot."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from render.plan.types import FilmRequest
    from render.tools import check_choices as cc
    from test_layout import LINT_CHOICES

    assert set(CUT_LINT_CHOICES) < set(LINT_CHOICES)
    cache = lint_cache  # (the suite's one speech cache and lint memo for these choices: tests/test_layout.py's too)
    ends = cc.axis_ends(cc.load_catalog(cc.DATA_DIR), FilmRequest("h100-sxm", "llama-3.1-8b", "bf16", 1))
    widest = max(ends, key=lambda end: end.gpus)
    choices = list(dict.fromkeys([*CUT_LINT_CHOICES, (widest.gpu, widest.gpus, widest.model, widest.dtype)]))
    lint = [choice in CUT_LINT_CHOICES for choice in choices]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = dict(zip(choices, pool.map(cut_choice_check, choices, [cache] * len(choices), lint)))
    assert all(checked.outcome != "refused" for checked, _ in found.values())
    assert {choice: f"{checked.beat} {checked.note}" for choice, (checked, _) in found.items()
            if checked.outcome == "fails"} == {}
    assert {choice: problems for choice, (_, problems) in found.items() if problems} == {}


def test_a_stream_left_unsaid_is_film_loads_own():
    """The page of a film without the cut simulates film load's defaults: each of the storyboard's load fields left
    out is film load's."""
    from render.plan.types import LoadParameters
    from render.serving.load import DEFAULT_SLO, LoadRequest, SchedulerSettings

    given, scheduler = LoadParameters(), SchedulerSettings()
    request = LoadRequest.__dataclass_fields__
    assert (given.answer_tokens, given.requests, given.seed) == (
        request["answer"].default.mean, request["requests"].default, request["seed"].default)
    assert (given.slo_ttft_seconds, given.slo_tpot_seconds) == (DEFAULT_SLO.ttft_seconds, DEFAULT_SLO.tpot_seconds)
    assert (given.static_batch, given.static_wait_seconds, given.max_num_batched_tokens) == (
        scheduler.batch, scheduler.max_wait, scheduler.max_num_batched_tokens)  # (None: vLLM's own on the GPU)
