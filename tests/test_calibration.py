"""The fit of a measured endpoint against its ceilings (render/specs/calibration.py, `film calibrate`):
the source page's own figures, timings made from known fractions, and what the data cannot say."""

from __future__ import annotations

import dataclasses

import pytest

from render.specs import roofline as rl
from render.specs.calibration import (calibrate, decode_memory_seconds, deployment_of, prefill_compute_seconds,
                                      written_precision)
from render.specs.catalog import ConcurrencyLevel, MeasuredPrompt, load_catalog
from render.specs.types import Deployment
from render.tools.calibrate import as_data

from conftest import run_film

SEED = "openrouter-coreweave-llama-3.1-8b-bf16"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def seed(catalog):
    dataset = catalog.measured(SEED)
    return dataset, deployment_of(dataset, catalog)


def test_the_seed_reproduces_what_the_source_page_says(seed):
    dataset, h100 = seed
    fit = calibrate(dataset, h100)
    ceiling = rl.decode_tokens_per_second(h100)
    assert round(ceiling) == 209
    # "decode at about three quarters of an H100's ceiling (156 of 209 tokens a second)"
    assert fit.memory_efficiency.value == pytest.approx(156 / ceiling, abs=0.01)
    assert 0.70 < fit.memory_efficiency.value < 0.78 and fit.memory_efficiency.uncertainty < 0.02
    # "13 percent slower with the 16,361-token prompt because of 13 percent more bytes": the decode line's slope
    # is what the cache's bytes at the fitted bandwidth predict, within its uncertainty.
    extra_bytes = rl.kv_cache_bytes(h100.model, h100.dtype, 16361 - 34) / rl.weight_bytes(h100.model, h100.dtype)
    assert extra_bytes == pytest.approx(0.13, abs=0.01) and 1 - 136 / 156 == pytest.approx(0.13, abs=0.005)
    slope = fit.kv_slope
    assert abs(slope.ratio - 1) < 2 * slope.seconds_per_token.relative
    assert abs(slope.efficiency.value - fit.memory_efficiency.value) < 2 * slope.efficiency.uncertainty
    assert any("as reading their KV bytes explains" in note for note in fit.notes)
    # "most of a short prompt's 0.3 s wait outside prefill"
    assert 0.2 < fit.overhead_seconds.value < 0.3 and fit.overhead_share(34) > 0.95 and fit.overhead_share(2081) > 0.7
    # the source's "40 to 70 percent of peak arithmetic", within the fit's uncertainty
    assert 0.4 <= fit.compute_efficiency.value - fit.compute_efficiency.uncertainty < 0.7
    decode = [point for point in fit.points if point.kind == "decode"]
    assert len(fit.points) == 5 and all(abs(point.relative_residual) < 0.01 for point in decode)
    assert any("assumed H100 SXM" in note for note in fit.notes)
    assert not fit.prefill_exactly_determined and not fit.decode_exactly_determined


def timings_from(deployment: Deployment, overhead: float, compute: float, memory: float,
                 lengths=(64, 512, 4096, 16384), streams=(1, 4), noise=None) -> tuple[MeasuredPrompt, ...]:
    """What an endpoint with these fractions of its ceilings would measure, to four significant figures (each
    figure off by a random relative error where `noise` draws them)."""
    def figure(value: float) -> float:
        return float(f"{value * (1 + (noise() if noise else 0)):.4g}")

    prompts = []
    for tokens in lengths:
        ttft = overhead + prefill_compute_seconds(deployment, tokens) / compute
        levels = tuple(ConcurrencyLevel(streams=count, aggregate_tokens_per_second=0.0, decode_tokens_per_second=figure(
            memory / decode_memory_seconds(deployment, tokens, count))) for count in streams)
        prompts.append(MeasuredPrompt(prompt_tokens=tokens, ttft_seconds=figure(ttft),
                                      decode_tokens_per_second=levels[0].decode_tokens_per_second,
                                      concurrency=levels if len(streams) > 1 else ()))
    return tuple(prompts)


def test_the_fit_recovers_the_fractions_that_made_the_timings(seed):
    dataset, h100 = seed
    made = dataclasses.replace(dataset, prompts=timings_from(h100, 0.045, 0.55, 0.82),
                               compared_gpu_is_assumption=False)
    fit = calibrate(made, h100)
    assert fit.overhead_seconds.value == pytest.approx(0.045, rel=1e-3)
    assert fit.compute_efficiency.value == pytest.approx(0.55, rel=1e-3)
    assert fit.memory_efficiency.value == pytest.approx(0.82, rel=1e-3)
    assert fit.kv_slope.ratio == pytest.approx(1, rel=5e-3)  # (a difference of rounded figures)
    assert len([point for point in fit.points if point.streams == 4]) == 4  # the sweep's memory-bound steps count
    assert all(abs(point.relative_residual) < 1e-3 for point in fit.points)
    assert not any("assumed" in note for note in fit.notes)
    # Uncertainties shrink with the residuals but never below the figures' own precision.
    assert 0 < fit.memory_efficiency.uncertainty < 0.01


def test_noisy_timings_give_back_their_fractions_within_the_stated_uncertainty(seed):
    import numpy as np

    dataset, h100 = seed
    truth = {"overhead_seconds": 0.08, "compute_efficiency": 0.45, "memory_efficiency": 0.7}
    misses = []
    for draw in range(12):
        rng = np.random.default_rng(draw)
        made = dataclasses.replace(dataset, prompts=timings_from(h100, *truth.values(), lengths=(64, 1024, 4096, 8192,
                                                                                               16384),
                                                                 noise=lambda rng=rng: rng.normal(0, 0.03)))
        fit = calibrate(made, h100)
        for name, value in truth.items():
            estimate = getattr(fit, name)
            assert estimate.relative < 0.25, (draw, name, estimate)  # an uncertainty that says something
            if abs(estimate.value - value) > 2 * estimate.uncertainty:
                misses.append((draw, name, estimate, value))
        held_out = fit.predicted_ttft(2048)
        expected = truth["overhead_seconds"] + prefill_compute_seconds(h100, 2048) / truth["compute_efficiency"]
        assert abs(held_out.value - expected) <= max(3 * held_out.uncertainty, 0.1 * expected)
    # two sigma holds 95% of draws: of 36 estimates, a few may miss, never most
    assert len(misses) <= 5, misses


def test_what_the_data_cannot_determine_is_said_not_invented(seed):
    dataset, h100 = seed
    one_length = dataclasses.replace(dataset, prompts=timings_from(h100, 0.05, 0.5, 0.8, lengths=(512,), streams=(1,)))
    fit = calibrate(one_length, h100)
    assert fit.overhead_seconds is None and fit.compute_efficiency is None and fit.overhead_share(512) is None
    assert fit.memory_efficiency.value == pytest.approx(0.8, rel=1e-3) and fit.kv_slope is None
    assert any("one prompt length (512 tokens) cannot separate the overhead" in note for note in fit.notes)

    no_decode = dataclasses.replace(dataset, prompts=tuple(dataclasses.replace(prompt, decode_tokens_per_second=None)
                                                           for prompt in dataset.prompts))
    fit = calibrate(no_decode, h100)
    assert fit.memory_efficiency is None and any("no decode rate" in note for note in fit.notes)


def test_a_fraction_above_one_says_the_gpu_assumption_is_wrong(seed, catalog):
    dataset, _ = seed
    fit = calibrate(dataset, deployment_of(dataset, catalog, "rtx-4090"))
    assert fit.memory_efficiency.value > 1 and fit.compute_efficiency.value > 1
    found = [note for note in fit.notes if "more than it can do" in note]
    assert len(found) == 2 and all("GeForce RTX 4090" in note and "not what is assumed" in note for note in found)


def test_a_figure_is_weighted_by_its_written_precision():
    assert written_precision(0.3) == pytest.approx(0.05)      # "about 0.3 seconds"
    assert written_precision(0.74) == pytest.approx(0.0074)   # half a hundredth, raised to 1% of it
    assert written_precision(156) == pytest.approx(1.56)
    assert written_precision(0.123456) == pytest.approx(0.00123456)


def test_film_calibrate_prints_the_fit_and_refuses_what_it_cannot_fit(seed):
    shown = run_film("calibrate", "--measured", SEED)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "against H100 SXM's ceilings (989 TFLOP/s, 3.35 TB/s)" in out
    assert "decode bandwidth      74% ±" in out and "209 tokens/s at best" in out
    assert "TTFT at 16,361 tokens" in out and "residual" in out and "note: the provider does not say" in out
    fit = calibrate(*seed)
    assert f"{fit.overhead_seconds.value:.3g} ± " in out  # and its uncertainty in seconds too
    other = run_film("calibrate", "--measured", SEED, "--gpu", "rtx-4090")
    assert other.returncode == 0 and "more than it can do" in other.stdout
    unknown = run_film("calibrate", "--measured", "nope")
    assert unknown.returncode != 0 and "unknown measured dataset 'nope'" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    split = run_film("calibrate", "--measured", SEED, "--gpus", "3")
    assert split.returncode != 0 and "does not divide" in split.stderr and "Traceback" not in split.stderr


def test_the_fit_predicts_the_figures_it_was_fitted_to(seed):
    dataset, h100 = seed
    fit = calibrate(dataset, h100)
    assert fit.predicted_ttft(16361).value == pytest.approx(0.74, abs=0.01)
    assert 1 / fit.predicted_step(34).value == pytest.approx(156, rel=0.01)
    assert fit.predicted_throughput(34, 1).value == pytest.approx(1 / fit.predicted_step(34).value)
    assert fit.predicted_throughput(34, 8).value > 7 * fit.predicted_throughput(34, 1).value  # a batch shares a read
    one_length = dataclasses.replace(dataset, prompts=dataset.prompts[:1])
    assert calibrate(one_length, h100).predicted_ttft(100) is None


def test_the_stored_fit_is_the_fit(seed):
    data = as_data(calibrate(*seed))
    assert data["against"] == {"gpu": "h100-sxm", "gpus": 1, "model": "llama-3.1-8b", "precision": "bf16"}
    assert data["memory_efficiency"]["value"] == pytest.approx(0.744, abs=0.005)
    assert [entry["prompt_tokens"] for entry in data["points"]] == [34, 2081, 16361, 34, 16361]


def test_the_bounded_fit_is_what_scipys_solvers_find():
    """The fit's own non-negative least squares (scipy.optimize stays out of every plan's imports) against scipy's
    lsq_linear and nnls, on random problems of one and two unknowns, bounds active and not."""
    import numpy as np
    from scipy.optimize import lsq_linear, nnls

    from render.specs.fitting import nonnegative_least_squares

    rng = np.random.default_rng(3)
    active = 0
    for _ in range(300):
        unknowns = int(rng.integers(1, 3))
        design = rng.normal(size=(int(rng.integers(unknowns, 7)), unknowns))
        target = rng.normal(size=design.shape[0])
        ours = nonnegative_least_squares(design, target)
        theirs = lsq_linear(design, target, bounds=(0, np.inf), method="bvls").x
        assert np.allclose(ours, theirs, atol=1e-8), (design, target, ours, theirs)
        assert np.allclose(ours, nnls(design, target)[0], atol=1e-8)
        active += bool(np.any(ours == 0))
    assert 50 < active < 250  # both kinds of problem were tried


def test_a_wait_that_does_not_grow_with_the_prompt_is_shown_as_overhead_alone(seed):
    """Two lengths, the same TTFT: prefill's arithmetic cannot be told apart, and the report (as the pages show it)
    gives the overhead without a share of a prefill it could not fit."""
    from render.tools.calibrate import report

    dataset, h100 = seed
    flat = dataclasses.replace(dataset, prompts=tuple(dataclasses.replace(prompt, ttft_seconds=0.25)
                                                      for prompt in dataset.prompts))
    fit = calibrate(flat, h100)
    assert fit.compute_efficiency is None and fit.overhead_seconds.value == pytest.approx(0.25, rel=0.02)
    text = report(fit)
    assert "overhead per request  0.250 ± " in text and "waited outside prefill" in text
    assert "prefill arithmetic" not in text and "cannot be told apart" in text


# -- EFFICIENCY=: films of expected numbers ---------------------------------------------------------


def test_an_efficiency_film_speaks_expected_numbers_beside_its_ceilings():
    from render.plan.resolve import resolve_plan
    from render.plan.types import Plan

    best = resolve_plan()
    plan = resolve_plan(efficiency=SEED)
    efficiency = plan.choice.efficiency
    fit = best.measured.fit
    assert (efficiency.compute, efficiency.memory, efficiency.overhead_seconds) == pytest.approx(
        (fit.compute_efficiency.value, fit.memory_efficiency.value, fit.overhead_seconds.value))
    # The same formulas on the GPU as the deployment reaches it: decode at 74% of 3.35 TB/s, prefill at 73% of peak.
    assert plan.expected.decode.step_seconds == pytest.approx(best.numbers.decode.step_seconds / efficiency.memory)
    assert plan.expected.prefill.seconds == pytest.approx(best.numbers.prefill.seconds / efficiency.compute)
    assert plan.expected.batch.tokens_per_second < best.numbers.batch.tokens_per_second
    assert plan.achieved.peak_flops == pytest.approx(best.spec.peak_flops * efficiency.compute)
    assert plan.achieved.memory_bandwidth == pytest.approx(best.spec.memory_bandwidth * efficiency.memory)
    assert plan.numbers == best.numbers  # the ceilings are the same numbers
    assert Plan.from_json(plan.to_json()) == plan  # as the render workers and the timed plan read it back
    assert round(plan.expected.decode.tokens_per_second) == 155 and round(best.numbers.decode.tokens_per_second) == 209

    narration = {beat.id: beat.narration for beat in plan.beats}
    assert "an H100 manages about 155 a second here, 209 at best." in narration["decode"]
    assert "that takes about 46 milliseconds here, 34 at best," in narration["prefill"]
    assert "from 6.4 to 7.3 milliseconds here" in narration["batching"]
    assert "instead of 155." in narration["batching"]
    assert "still waits about 1.1 seconds here" in narration["wasted-money"]
    # What no efficiency changes reads as it did: the roofline's intensities, the measured beats.
    for beat in ("two-waits", "roofline", "measured", "cache-rides-along", "two-budgets"):
        assert narration[beat] == best.beat(beat).narration
    assert "(at best 34 milliseconds and 209)" in plan.summary
    # Its own film: it never overwrites the default one, and the notes say what it assumes.
    assert plan.choice.name == f"h100-sxm-llama-3.1-8b-bf16-expected-{SEED}" and not plan.choice.is_default
    assert any(note.text.startswith("Expected numbers: the fit of CoreWeave's measured timings reaches ") and
               "73% of peak arithmetic and 74% of bandwidth, and 0.28 s" in note.text
               and note.setting.startswith(f"EFFICIENCY={SEED} (data/measured/") for note in plan.notes)
    # The video description says what the expected numbers assume, in the end card's words.
    from render.publish.kit import description_text
    assert ("; the expected ones at 73% of peak arithmetic and 74% of bandwidth, fitted from "
            f"{SEED}.") in description_text(plan)
    # And without it, the film reads the transcript with no 'here' anywhere.
    assert best.expected is None and best.achieved is None
    assert not any(" here" in beat.narration or "at best" in beat.narration for beat in best.beats)


def test_efficiency_given_by_hand_and_carried_to_another_gpu():
    from render.plan.resolve import resolve_plan

    plan = resolve_plan(gpu="a100-sxm-80gb", efficiency="compute=60%, memory=0.8, overhead=0.2")
    efficiency = plan.choice.efficiency
    assert (efficiency.compute, efficiency.memory, efficiency.overhead_seconds, efficiency.fitted_from) == \
        (0.6, 0.8, 0.2, "")
    assert plan.choice.name == "a100-sxm-80gb-llama-3.1-8b-bf16-expected-c0.6-m0.8-o0.2"
    assert plan.expected.decode.tokens_per_second == pytest.approx(0.8 * plan.numbers.decode.tokens_per_second)
    # The comparison GPU at the same shares: the ratios the wasted-money beat speaks do not move.
    assert plan.expected.compare.decode_speedup == pytest.approx(plan.numbers.compare.decode_speedup)
    assert any("as given" in note.text and note.setting == "EFFICIENCY=compute=0.6,memory=0.8,overhead=0.2"
               for note in plan.notes)
    fitted_elsewhere = resolve_plan(gpu="b200", efficiency=SEED)
    assert any("measured against an H100 and are assumed to carry over to B200" in note.text
               for note in fitted_elsewhere.notes)


@pytest.mark.parametrize("given, message", [
    ("compute=1.2,memory=0.8", "compute=1.2 must be a share of the ceiling from 0.01 to 1"),
    ("compute=0,memory=0.8", "compute=0 must be a share of the ceiling from 0.01 to 1"),
    ("compute=5e-324,memory=0.5", "compute=5e-324 must be a share of the ceiling from 0.01 to 1"),
    ("compute=1e-300,memory=1e-300", "compute=1e-300 must be a share of the ceiling from 0.01 to 1"),
    ("compute=0.6,memory=0.9%", "memory=0.9% must be a share of the ceiling from 0.01 to 1"),
    ("compute=nan,memory=0.8", "compute=nan must be a share"),
    ("compute=0.6", "memory missing"),
    ("compute=0.6,memory=0.8,speed=2", "unknown 'speed'; the keys are compute, memory, overhead"),
    ("compute=0.6,compute=0.5,memory=0.8", "compute is given twice"),
    ("compute=six,memory=0.8", "compute='six' is not a number"),
    ("compute=0.6,memory=0.8,overhead=-1", "overhead=-1 must be from 0 to 60 seconds"),
    ("no-such-dataset", "EFFICIENCY=no-such-dataset: no measured dataset of that id in data/measured/"),
])
def test_a_bad_efficiency_is_refused_with_its_fix(given, message):
    from render.errors import FilmError
    from render.plan.resolve import resolve_plan

    with pytest.raises(FilmError) as refused:
        resolve_plan(efficiency=given)
    assert message in str(refused.value) and str(refused.value).startswith(f"EFFICIENCY={given}")


def test_a_dataset_that_cannot_give_a_share_or_gives_more_than_the_datasheet_is_refused(data_copy):
    from render.errors import FilmError
    from render.plan.resolve import resolve_plan

    # The longest prompt waits as long as the shortest: the overhead is all the fit can say of TTFT.
    flat = data_copy(f"measured/{SEED}.yaml", "ttft_seconds: 0.74", "ttft_seconds: 0.3")
    with pytest.raises(FilmError) as refused:
        resolve_plan(efficiency=SEED, data_dir=flat)
    message = str(refused.value)
    assert message.startswith(f"EFFICIENCY={SEED}: {flat / 'measured' / SEED}.yaml does not give the share of peak "
                              f"arithmetic: TTFT does not grow with the prompt here"), message
    assert message.endswith("Measure more (film measure), or give the shares: EFFICIENCY=compute=…,memory=…")
    assert resolve_plan(data_dir=flat).expected is None  # the film without EFFICIENCY= still resolves
    assert "Traceback" not in message


def test_a_share_above_one_is_refused_naming_the_assumed_gpu(data_copy):
    from render.errors import FilmError
    from render.plan.resolve import resolve_plan

    faster = data_copy(f"measured/{SEED}.yaml", "compared_gpu: h100-sxm", "compared_gpu: rtx-4090")
    with pytest.raises(FilmError) as refused:
        resolve_plan(efficiency=SEED, data_dir=faster)
    message = str(refused.value)
    assert "faster than the datasheet" in message and "compared_gpu" in message and "RTX 4090" in message


def test_make_passes_efficiency_on_to_the_plan():
    """EFFICIENCY= on a make target reaches the film command (hostile values: tests/test_cli.py)."""
    import subprocess

    from conftest import ROOT

    made = subprocess.run(["make", "-s", "plan", "EFFICIENCY=compute=0.6,memory=0.8"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert '"efficiency": {' in made.stdout and '"fitted_from": ""' in made.stdout
    assert '"compute": 0.6' in made.stdout


# -- a fit that fails says so (issue 54, item 6) -----------------------------------------------------------


def dataset_with_ttfts(folder, *written: str):
    """The seed dataset with its three TTFTs written as given (exact figures, as `film measure` writes them), in a
    copy of data/ so the film can be asked for it by id."""
    import shutil

    from render.files import DATA_DIR

    data = folder / "data"
    shutil.copytree(DATA_DIR, data)
    path = data / "measured" / f"{SEED}.yaml"
    text = path.read_text().replace("ttft_approximate: true", "ttft_approximate: false")
    for old, new in zip(("ttft_seconds: 0.3\n", "ttft_seconds: 0.3\n", "ttft_seconds: 0.74\n"), written):
        assert old in text
        text = text.replace(old, f"ttft_seconds: {new}\n", 1)
    path.write_text(text)
    catalog = load_catalog(data)
    return data, catalog, catalog.measured(SEED)


@pytest.mark.parametrize("written, steep", [(("0.30", "0.31", "30.0"), "96.8× from 0.31 s at 2,081 tokens to 30 s"),
                                            (("0.0001", "0.0002", "600"), "from 0.0002 s at 2,081 tokens to 600 s")])
def test_a_fit_the_data_refutes_is_named_not_reported(tmp_path, written, steep):
    from render.tools.calibrate import report

    _, catalog, dataset = dataset_with_ttfts(tmp_path, *written)
    fit = calibrate(dataset, deployment_of(dataset, catalog))
    assert fit.compute_efficiency is None and fit.overhead_seconds is None  # no shares from a fit that fails
    assert fit.memory_efficiency is not None  # (decode's fit is its own, and holds)
    text = report(fit)
    assert ("note: this model does not describe the data: the TTFT at 16,361 tokens, "
            f"{written[2].rstrip('0').rstrip('.') if '.' in written[2] else written[2]} s, is ") in text, text
    assert "TTFT rises far more steeply than prefill's arithmetic (" in text and steep in text, text
    assert "hardly grows" not in text and "does not grow" not in text  # the note agrees with the data
    assert "prefill arithmetic" not in text and "overhead per request" not in text


def test_every_plus_minus_is_printed_to_the_figures_own_precision(tmp_path):
    from render.tools.calibrate import report

    _, catalog, dataset = dataset_with_ttfts(tmp_path, "0.30", "0.31", "30.0")
    text = report(calibrate(dataset, deployment_of(dataset, catalog)))
    assert "measured 30.0 ± 0.3 s" in text and "30 ± 5 s" not in text  # written to a tenth: ± 0.05, 1% of it
    assert "measured 0.300 ± 0.005 s" in text and "measured 0.310 ± 0.005 s" in text  # "0.30" is not "0.3"
    assert written_precision(30.0, written="30.0") == pytest.approx(0.3)
    assert written_precision(30.0, written="30") == pytest.approx(0.5)
    assert written_precision(0.3, written="0.30") == pytest.approx(0.005)
    assert written_precision(0.25, written="0.3") == pytest.approx(0.005)  # text of another value: not believed
    from render import formatting as fmt

    assert fmt.precise_seconds(0.277, 0.068) == "0.277 ± 0.068 s" and fmt.precise_seconds(0.74, 0.0074) == \
        "0.740 ± 0.007 s" and fmt.precise_seconds(0.3, 0.05) == "0.30 ± 0.05 s"


def test_efficiency_from_a_fit_that_fails_is_refused_with_the_reason(tmp_path):
    from render.errors import FilmError
    from render.plan.resolve import fitted_efficiency

    _, catalog, _ = dataset_with_ttfts(tmp_path, "0.30", "0.31", "30.0")
    with pytest.raises(FilmError) as error:
        fitted_efficiency(catalog, SEED, False)
    message = str(error.value)
    assert message.startswith(f"EFFICIENCY={SEED}: ") and "this model does not describe the data" in message
    assert "EFFICIENCY=compute=…,memory=…" in message and "\n" not in message


def test_the_sources_own_figures_are_described_by_the_fit(seed):
    from render.specs.calibration import misfit

    dataset, h100 = seed
    fit = calibrate(dataset, h100)
    assert misfit([point for point in fit.points if point.kind == "ttft"], 2) is None
    assert not any("does not describe" in note for note in fit.notes)


def phase_timings(deployment: Deployment, overhead: float, compute: float, memory: float, lengths, streams=(1, 4),
                  slower: dict | None = None, decode_overlap: float = 0.0, step_overhead: float = 0.0) \
        -> tuple[MeasuredPrompt, ...]:
    """What an endpoint measures whose prefill hides its weight reads under its arithmetic while its decode steps do
    the two one after the other (`decode_overlap` 0) or not (1), every step spending `step_overhead` besides: the
    roofline on the deployment as it runs (rl.achieved), four significant figures; `slower` multiplies a level's
    step."""
    reached = deployment.on(rl.achieved(deployment.gpu, compute, memory, 1.0, decode_overlap))

    def step(tokens: int, count: int) -> float:
        seconds = rl.time_on(reached, rl.decode_step(reached, count, tokens)).seconds + step_overhead
        return seconds * (slower or {}).get(count, 1)

    prompts = []
    for tokens in lengths:
        ttft = overhead + step_overhead + rl.time_on(reached, rl.prefill(reached, tokens)).seconds
        levels = tuple(ConcurrencyLevel(streams=count, aggregate_tokens_per_second=0.0,
                                        decode_tokens_per_second=float(f"{1 / step(tokens, count):.4g}"))
                       for count in streams)
        prompts.append(MeasuredPrompt(prompt_tokens=tokens, ttft_seconds=float(f"{ttft:.4g}"),
                                      decode_tokens_per_second=levels[0].decode_tokens_per_second,
                                      concurrency=levels))
    return tuple(prompts)


def test_each_phase_is_fitted_by_its_own_terms_where_the_roofline_steps_do_not_describe_the_figures(seed):
    """A CPU's llama.cpp (the bench's real server): four streams' decode step takes nearly twice one stream's, which
    the roofline's overlapped steps (memory-bound, the same at 1 and 4 streams) cannot say. Made by the per-phase
    model (prefill overlapped, decode one after the other, with and without a step overhead), the fit gives back its
    shares, overheads and overlap, and carries them to what the expected numbers and the simulator run on."""
    from render.plan.types import Efficiency
    from render.serving.costs import Costs
    from render.tools.calibrate import report
    from render.tools.llama_server import WIDE, tiny_deployment

    dataset, _ = seed
    cpu = tiny_deployment(WIDE)
    # (A step's overhead and its weight reads are one constant in a decode step: they are told apart by how much of
    # the step grows with the cached tokens, so by contexts long enough for the cache to weigh, as a real sweep's are.)
    lengths = (48, 112, 1024, 1800)
    for step_overhead in (0.0, 0.003):
        made = dataclasses.replace(dataset, compared_gpu_is_assumption=False, prompts=phase_timings(
            cpu, 0.004, 0.42, 0.9, lengths, step_overhead=step_overhead))
        fit = calibrate(made, cpu)
        assert (fit.overlap, fit.decode_overlap, fit.prefill_fit, fit.decode_fit) == (1, 0, None, None)
        assert fit.phase_model.step_overhead == (step_overhead > 0)
        if step_overhead:
            assert fit.step_overhead_seconds.value == pytest.approx(step_overhead, rel=0.02)
        assert fit.overhead_seconds.value == pytest.approx(0.004, rel=0.02)
        assert fit.compute_efficiency.value == pytest.approx(0.42, rel=1e-3)
        assert fit.memory_efficiency.value == pytest.approx(0.9, rel=1e-2)
        assert len(fit.points) == 12 and all(abs(point.relative_residual) < 1e-3 for point in fit.points)
        one, four = (next(point.measured for point in fit.points if point.kind == "decode" and point.streams == count
                          and point.prompt_tokens == 112) for count in (1, 4))
        assert four > 1.4 * one  # what the overlapped model (memory-bound at both, nearly equal steps) cannot say
        assert fit.predicted_step(112, 4).value == pytest.approx(four, rel=1e-3)
        assert fit.predicted_ttft(112).value == pytest.approx(made.prompts[1].ttft_seconds, rel=1e-3)
        text = report(fit)
        assert "decode's arithmetic and memory traffic do not overlap here: a decode step takes" in text, text
        assert "(decode overlap 0)" in text and "this model does not describe the data" not in text
        assert ("every step spends 3 ms besides its work" in text) == bool(step_overhead), text
        # Carried into what the simulator runs on: a decode step one after the other, a prefill overlapped, each
        # with its step's overhead.
        efficiency = Efficiency.fitted(fit, "made")
        costs = Costs.of(cpu, efficiency.compute, efficiency.memory, efficiency.overhead_seconds,
                         efficiency.step_overhead_seconds, efficiency.overlap, efficiency.decode_overlap)
        assert costs.step(4, 4 * 112) == pytest.approx(four, rel=1e-3)
        assert costs.step(chunks=((112, 0),)) + efficiency.overhead_seconds == pytest.approx(
            made.prompts[1].ttft_seconds, rel=1e-3)

    # Decode steps the roofline overlaps but each with a fixed time besides: the step overhead alone is fitted.
    fixed = dataclasses.replace(dataset, prompts=phase_timings(cpu, 0.004, 0.42, 0.9, lengths, decode_overlap=1.0,
                                                               step_overhead=0.003))
    fit = calibrate(fixed, cpu)
    assert (fit.decode_overlap, fit.phase_model.step_overhead) == (1, True)
    assert fit.step_overhead_seconds.value == pytest.approx(0.003, rel=0.02)
    # Steps the roofline overlaps (made by the overlapped model) keep the roofline's fit: no per-phase model.
    overlapped = dataclasses.replace(dataset, prompts=timings_from(cpu, 0.004, 0.42, 0.9, lengths))
    fit = calibrate(overlapped, cpu)
    assert (fit.overlap, fit.decode_overlap, fit.phase_fit, fit.step_overhead_seconds) == (1, None, None, None)
    # Data no model describes (four streams' step three times the per-phase model's) is refused, and named.
    neither = dataclasses.replace(dataset, prompts=phase_timings(cpu, 0.004, 0.42, 0.9, lengths, slower={4: 3}))
    refused = calibrate(neither, cpu)
    assert refused.memory_efficiency is None and refused.phase_fit is None
    assert any("the decode step at 48 cached tokens, 4 streams takes" in note for note in refused.notes), refused.notes


def test_an_overlap_given_by_hand_is_ranged_and_carried_into_the_expected_numbers():
    from render.errors import FilmError
    from render.plan.resolve import resolve_plan

    plan = resolve_plan(efficiency="compute=0.5,memory=0.8,overlap=0")
    best = resolve_plan()
    assert plan.choice.efficiency.overlap == 0 and plan.choice.name.endswith("-expected-c0.5-m0.8-v0")
    prefill = best.numbers.prefill
    # Prefill's arithmetic and its weight reads, one after the other, at the shares
    timing = rl.time_on(plan.choice.deployment, rl.prefill(plan.choice.deployment, plan.parameters.prompt_tokens))
    assert plan.expected.prefill.seconds == pytest.approx(timing.compute_seconds / 0.5 + timing.memory_seconds / 0.8)
    assert plan.expected.prefill.seconds > prefill.seconds / 0.5
    assert any("one after the other" in note.text and note.setting.endswith(",overlap=0") for note in plan.notes)
    for given, message in (("compute=0.5,memory=0.8,overlap=2", "overlap=2 must be from 0 (arithmetic and memory "
                                                                 "traffic one after the other) to 1"),
                           ("compute=0.5,memory=0.8,overlap=nan", "overlap=nan must be from 0")):
        with pytest.raises(FilmError) as refused:
            resolve_plan(efficiency=given)
        assert str(refused.value).startswith(f"EFFICIENCY={given}: {message}")
    for given, message in (("compute=0.5,memory=0.8,decode_overlap=-1", "decode_overlap=-1 must be from 0"),
                           ("compute=0.5,memory=0.8,step_overhead=2", "step_overhead=2 must be from 0 to 1 seconds"),
                           ("compute=0.5,memory=0.8,step_overhead=x", "step_overhead='x' is not a number")):
        with pytest.raises(FilmError) as refused:
            resolve_plan(efficiency=given)
        assert str(refused.value).startswith(f"EFFICIENCY={given}: {message}"), str(refused.value)


def test_each_phase_given_by_hand_runs_its_own_steps_in_the_expected_numbers_and_the_simulator():
    """EFFICIENCY=…,decode_overlap=0,step_overhead=…: prefill keeps its weight reads under its arithmetic, a decode
    step does the two one after the other, and the simulator adds the step's overhead to every step."""
    from render.serving.load import LoadRequest
    from render.serving.schedulers import Chunked
    from render.plan.resolve import resolve_plan

    plan = resolve_plan(efficiency="compute=0.5,memory=0.8,decode_overlap=0,step_overhead=0.002")
    efficiency = plan.choice.efficiency
    assert (efficiency.overlap, efficiency.decode_overlap, efficiency.step_overhead_seconds) == (1, 0, 0.002)
    assert plan.choice.name.endswith("-expected-c0.5-m0.8-dv0-s0.002")
    assert efficiency.shares == ("50% of peak arithmetic and 80% of bandwidth, overlapped in prefill and one after "
                                 "the other in decode, 2 ms a step besides")
    assert any(note.setting.endswith(",decode_overlap=0,step_overhead=0.002") for note in plan.notes)
    deployment = plan.choice.deployment
    prefill = rl.time_on(deployment, rl.prefill(deployment, plan.parameters.prompt_tokens))
    decode = rl.time_on(deployment, rl.decode_step(deployment, 1, 0))  # (the decode beat's: nothing cached)
    assert plan.expected.prefill.seconds == pytest.approx(max(prefill.compute_seconds / 0.5,
                                                              prefill.memory_seconds / 0.8))
    assert plan.expected.decode.step_seconds == pytest.approx(decode.compute_seconds / 0.5
                                                              + decode.memory_seconds / 0.8)
    costs = LoadRequest(deployment, (Chunked(),), efficiency=efficiency).costs
    assert costs.step(1, 0) == pytest.approx(plan.expected.decode.step_seconds + 0.002)
    assert costs.step(chunks=((plan.parameters.prompt_tokens, 0),)) == pytest.approx(
        plan.expected.prefill.seconds + 0.002)
    assert costs.decode_run(1, 0, 3) == pytest.approx(sum(costs.step(1, context) for context in (0, 1, 2)))
