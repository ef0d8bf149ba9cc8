"""Every choice that fits in memory makes a film: a sample of the GPU × model × data type × GPU count
matrix narrated with the real voice (`make check-choices` narrates all of it)."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

from render import formatting as fmt
from render.plan.resolve import resolve_plan
from render.tools import check_choices as cc
from render.plan.types import FilmRequest
from render.voice.speech import get_engine

DEFAULT = FilmRequest("h100-sxm", "llama-3.1-8b", "bf16", 1)


@pytest.fixture(scope="module")
def sample():
    return cc.sample_choices()


@pytest.fixture(scope="module")
def checked(sample, tmp_path_factory, seed_speech):
    """Each sampled choice narrated, two at a time in spawned processes (as `make check-choices` does), from a
    speech cache holding the default film's clips (the session film's: the default is in the sample, and every
    choice shares its sentences without numbers)."""
    cache = seed_speech(tmp_path_factory.mktemp("choices-cache"))
    choices = [choice for choice, _ in sample]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(cc.check_choice, choices, [cache] * len(choices)))
    return dict(zip(choices, results))


def test_the_sample_is_the_tightest_ten_by_estimate_and_the_ends_of_every_axis(sample):
    choices = [choice for choice, _ in sample]
    tightest = [load.load for _, load in sample[:10]]
    assert tightest == sorted(tightest, reverse=True)
    # Chosen from the whole matrix: every GPU, model and data type at 1, 2, 4 and 8 GPUs.
    assert len(cc.all_choices(cc.load_catalog(cc.DATA_DIR))) == 7 * 10 * 5 * 4
    assert all(isinstance(choice, FilmRequest) and choice.gpus for choice in choices)
    ends = {
        FilmRequest("l40s", "llama-3.1-8b", "bf16", 1),  # 0.864 TB/s
        FilmRequest("b200", "llama-3.1-8b", "bf16", 1),  # 7.7 TB/s
        FilmRequest("h100-sxm", "llama-3.2-1b", "bf16", 1),  # 1.2B
        FilmRequest("h100-sxm", "deepseek-v3", "bf16", 1),  # 671B
        FilmRequest("h100-sxm", "llama-3.1-8b", "int4", 1), DEFAULT,  # half a byte a weight, and two (the default's)
        FilmRequest("h100-sxm", "llama-3.1-8b", "bf16", 8),
    }
    assert ends <= set(choices[10:]) | set(choices[:10])
    # A mixture of experts over several GPUs says the most: the estimate puts them among the tightest.
    assert any(choice.gpus > 1 for choice in choices[:10])


def test_every_sampled_choice_makes_a_film_or_is_refused_for_memory(sample, checked):
    max_tempo = resolve_plan().narration.max_tempo
    for choice, load in sample:
        result = checked[choice]
        if load is None:
            assert result.outcome == "refused", result.note
            assert "does not fit on" in result.note or "does not divide" in result.note
            continue
        assert result.outcome == "fits", f"{result.label}: {result.beat} {result.note}"
        assert 1.0 <= result.tempo <= max_tempo and result.headroom >= 0, result.row()
        # The tempo is the true speed-up: the speech at its own pace over the fitted speech.
        assert result.natural / result.seconds == pytest.approx(result.tempo, rel=1e-6)
    assert checked[FilmRequest("h100-sxm", "deepseek-v3", "bf16", 1)].outcome == "refused"
    default = checked[DEFAULT]
    assert default.tempo == 1.0 and default.load < 1  # the transcript's own film needs no speeding up


def test_the_estimate_follows_the_voice(sample, checked):
    """The words-and-digits estimate of each sampled choice's tightest beat is close to its real speech."""
    compared = 0
    for choice, _ in sample:
        result = checked[choice]
        if result.outcome != "fits":
            continue
        estimate = {load.beat: load for load in cc.speech_loads(resolve_plan(choice))}[result.beat]
        assert estimate.seconds == pytest.approx(result.natural, rel=0.15), result.label
        compared += 1
    assert compared >= 10


@pytest.mark.parametrize("written, words", [
    ("209", 3), ("2,711", 5), ("12,000", 2), ("120,000", 4), ("0.37", 4), ("4.8", 3), ("64", 2), ("1,100", 4),
])
def test_numbers_are_counted_as_the_words_they_are_read_as(written, words):
    assert cc.number_words(written) == words


def test_the_engines_speed_setting_is_not_the_speed_up():
    """Why the tempo is measured: hibari's speed 1.10 shortens a clause by far less than 10%."""
    engine = get_engine("hibari")
    text = "so even at 21 terabytes a second four M I three hundred Xs need 0.93 milliseconds a token,"
    natural, faster = (len(engine.synthesize(text, speed)) for speed in (1.0, 1.10))
    assert natural / faster < 1.06


def test_a_narrator_rounds_what_the_screen_shows_exactly():
    plan = resolve_plan(gpu="h100-sxm", model="llama-3.2-1b", dtype="fp8")
    rate = plan.numbers.decode.tokens_per_second
    assert fmt.tokens_per_second(rate, short=True) == "2,711 tokens/s"  # the decode beat's screen
    assert "about 2,700 a second" in plan.beat("decode").narration
    assert plan.beat("batching").narration.endswith("tokens a second instead of 2,700.")
    four = resolve_plan(gpu="mi300x", model="deepseek-v3", dtype="fp8", gpus=4)
    decode = four.beat("decode").narration
    assert ("even at 21 terabytes a second four MI300Xs need 2.8 milliseconds a token, "
            "36 percent of it between GPUs") in decode
    assert fmt.bandwidth(four.spec.total_bandwidth, short=True) == "21.2 TB/s"
    assert "at four MI300Xs' 10,500 teraflops" in four.beat("prefill").narration


EFFICIENCY = "openrouter-coreweave-llama-3.1-8b-bf16"  # the seed dataset's fit: every film of expected numbers


@pytest.fixture(scope="module")
def expected_sample():
    return cc.sample_choices(efficiency=EFFICIENCY)


def test_the_expected_films_of_the_sample_narrate_within_their_slots(expected_sample, tmp_path_factory, seed_speech):
    """EFFICIENCY= adds 'here' and 'at best' to four beats: by the estimate every sampled choice still fits, and the
    three fullest by it are narrated with the real voice, each within its slot (the default's film of expected numbers
    is narrated, and its layout linted, in tests/test_layout.py)."""
    max_tempo = resolve_plan().narration.max_tempo
    loads = [load for _, load in expected_sample if load]
    assert max(load.load for load in loads) < max_tempo, max(loads, key=lambda load: load.load)
    assert [choice for choice, load in expected_sample if load is None] == [
        FilmRequest("h100-sxm", "deepseek-v3", "bf16", 1, efficiency=EFFICIENCY)]
    narrated = [choice for choice, _ in expected_sample[:3]]
    cache = seed_speech(tmp_path_factory.mktemp("expected-cache"))
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(cc.check_choice, narrated, [cache] * len(narrated)))
    loads = {choice: load for choice, load in expected_sample}
    for choice, result in zip(narrated, results):
        assert result.outcome == "fits", f"{result.label}: {result.beat} {result.note}"
        assert 1.0 <= result.tempo <= max_tempo and result.headroom >= 0, result.row()
        plan = resolve_plan(choice)
        assert plan.choice.efficiency is not None
        estimate = {load.beat: load for load in cc.speech_loads(plan)}[result.beat]
        assert estimate.seconds == pytest.approx(result.natural, rel=0.15), result.label
        assert loads[choice].load == pytest.approx(max(load.load for load in cc.speech_loads(plan)))


def test_check_choices_stress_lints_the_layouts_stress_set_with_each_captions_check(tmp_path, monkeypatch, capsys):
    """`make check-choices STRESS=1` (film check-choices --stress --layout): exactly the choices that stress the
    layout, of which the suite lints four; each beat's layout and captions checked."""
    from render.cli import main

    asked = []
    monkeypatch.setattr(cc, "check_choice", lambda choice, cache, layout: asked.append((choice, layout)) or
                        cc.ChoiceCheck(choice, "fails", note="a caption stands 0.4 s"))
    assert main(["check-choices", "--stress", "--layout", "--jobs", "1", "--cache", str(tmp_path),
                 "--out", str(tmp_path / "out.tsv")]) == 1
    assert asked == [(choice, True) for choice in cc.STRESS_CHOICES] and len(asked) == 11
    assert set(cc.SUITE_STRESS) < set(cc.STRESS_CHOICES) and len(set(cc.SUITE_STRESS)) == 4
    assert "a caption stands 0.4 s" in (tmp_path / "out.tsv").read_text()
    capsys.readouterr()
