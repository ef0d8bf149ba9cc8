"""The resolved plan: the transcript read back, the numbers the other stages rely on, every choice."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from render.errors import FilmError
from render.plan.resolve import resolve_plan
from render.plan.storyboard import parse_timestamp
from render.plan.types import Plan

from conftest import BEAT_IDS, FIXTURES, ROOT

SHARED_PAGE = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "004_70339d625aa121db.txt"

# The documented shape of `film plan --json` (docs/plan.md, "The plan"): dotted paths to numbers.
REQUIRED_NUMBERS = [
    "spec.ridge_ops_per_byte", "spec.weight_bytes", "spec.kv_bytes_per_token", "spec.peak_flops",
    "numbers.prefill.tokens", "numbers.prefill.ops", "numbers.prefill.seconds", "numbers.prefill.attention_fraction",
    "numbers.prefill.ops_per_byte", "numbers.decode.ops_per_token", "numbers.decode.step_seconds",
    "numbers.decode.tokens_per_second", "numbers.decode.ops_per_byte", "numbers.batch.size",
    "numbers.batch.context_tokens", "numbers.batch.step_seconds", "numbers.batch.tokens_per_second",
    "numbers.batch.size_at_ridge", "numbers.long_prompt.tokens", "numbers.long_prompt.seconds",
    "numbers.long_prompt.attention_fraction", "numbers.compare.flops_ratio", "numbers.compare.bandwidth_ratio",
    "numbers.compare.decode_speedup", "numbers.quantised.tokens_per_second",
    # what the measured beats need
    "measured.short.ttft_seconds", "measured.medium.ttft_seconds", "measured.long.ttft_seconds",
    "measured.short.decode_tokens_per_second", "measured.long.decode_tokens_per_second",
    "measured.long_kv_bytes", "measured.long_kv_ratio", "measured.slowdown", "measured.ceiling_fraction",
]


def at_path(data: dict, path: str):
    for name in path.split("."):
        data = data[name]
    return data


TRANSCRIPT = FIXTURES / "transcript.txt"


def transcript_section(page: str) -> str:
    """The '## Transcript' section of a page: its nine '### m:ss Title' parts, up to the next '## '."""
    return page.split("## Transcript", 1)[1].split("\n## ", 1)[0].strip()


def transcript() -> list[tuple[float, str, str]]:
    """(start, title, text) of each '### m:ss Title' section of the film page's transcript."""
    section = transcript_section(TRANSCRIPT.read_text())
    beats = re.findall(r"^### (\d+:\d\d) (.+?)\n\n(.+?)(?=\n\n###|\n*\Z)", section, re.S | re.M)
    return [(parse_timestamp(start, "", ""), title.strip(), " ".join(text.split())) for start, title, text in beats]


@pytest.fixture(scope="module")
def plan():
    return resolve_plan()


def test_the_fixture_is_the_source_pages_transcript_and_nothing_else():
    text = TRANSCRIPT.read_text()
    citation, rest = text.split("\n", 1)
    assert citation.startswith("# Transcript of \"Prefill vs decode") and "2026-09-11" in citation
    assert "https://understandingdata.com/ai-engineering-visualised/prefill-decode/" in citation
    assert rest.strip() == "## Transcript\n\n" + transcript_section(text)  # only the transcript follows
    assert text.count("\n## ") == 1 and text.count("### ") == 9
    if not SHARED_PAGE.exists():
        pytest.skip("the shared seeds are not beside this checkout")
    assert transcript_section(text) == transcript_section(SHARED_PAGE.read_text())


def test_the_transcript_check_runs_in_a_clone_without_shared(tmp_path):
    """A fresh clone with no ../shared beside it still checks the narration against the transcript."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout")
    clone = tmp_path / "nowhere" / "checkout"
    for name in files.stdout.splitlines():
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    assert not (clone.parent.parent / "shared").exists()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_plan.py",
                             "-k", "transcript and not clone", "-rs"], cwd=clone, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    # The narration matched the transcript; only the comparison with the shared original was skipped.
    assert "1 passed, 1 skipped" in result.stdout, result.stdout
    assert "the shared seeds are not beside this checkout" in result.stdout


def test_default_narration_reads_as_the_transcript(plan):
    expected = transcript()
    assert len(expected) == 9
    for beat, (start, title, text) in zip(plan.beats, expected):
        assert (beat.start, beat.title) == (start, title)
        assert beat.narration == text, f"beat {beat.id!r} differs from the transcript"


def test_beats_are_the_nine_with_their_times(plan):
    assert tuple(beat.id for beat in plan.beats) == BEAT_IDS and len(BEAT_IDS) == 9  # (the transcript's nine)
    assert plan.duration == 154.0
    assert plan.beats[0].start == 0
    for beat, following in zip(plan.beats, plan.beats[1:]):
        assert beat.end == following.start
    assert plan.beats[-1].end == 154.0
    from render.plan.beat_scene import scene_of  # each drawn by the class its id names

    assert [(scene_of(beat.id).path, scene_of(beat.id).name) for beat in plan.beats][5:8] == [
        ("scenes/wasted_money.py", "WastedMoney"), ("scenes/measured.py", "Measured"),
        ("scenes/cache_rides_along.py", "CacheRidesAlong")]


def test_numbers_reproduce_the_source_documents(plan):
    n, spec, measured = plan.numbers, plan.spec, plan.measured
    assert n.prefill.ops == pytest.approx(3.32e13, rel=2e-3)
    assert n.prefill.seconds == pytest.approx(0.0335, rel=2e-3)
    assert n.decode.step_seconds == pytest.approx(4.79e-3, rel=1e-3)
    assert n.decode.tokens_per_second == pytest.approx(208.6, abs=0.1)
    assert spec.ridge_ops_per_byte == pytest.approx(295, abs=0.5)
    assert n.batch.step_seconds == pytest.approx(5.44e-3, rel=2e-3)
    assert n.batch.tokens_per_second > 11_000
    assert n.long_prompt.seconds == pytest.approx(0.79, abs=0.005)
    assert n.long_prompt.attention_fraction == pytest.approx(0.34, abs=0.005)
    assert spec.kv_bytes_per_token == 131_072
    assert n.compare.flops_ratio == pytest.approx(3.2, abs=0.05)
    assert n.compare.bandwidth_ratio == pytest.approx(1.64, abs=0.005)
    assert n.quantised.dtype.id == "int8" and n.quantised.tokens_per_second == pytest.approx(417, abs=0.5)
    # The measured beats: 2.1 GB of KV = 13.4% of the weights; 156 -> 136 is 12.8%; 156 is 75% of 208.6.
    assert measured.long_kv_bytes == 16_361 * 131_072  # the film page: "2.1 GB"
    assert measured.long_kv_ratio == pytest.approx(0.134, abs=0.001)
    assert measured.slowdown == pytest.approx(0.128, abs=0.001)
    assert measured.ceiling_fraction == pytest.approx(0.75, abs=0.005)
    assert n.batch.ridge_value_ops_per_byte == pytest.approx(180, rel=0.02)


def test_plan_json_has_the_documented_shape(plan):
    data = json.loads(plan.to_json())
    choice = data["choice"]
    assert (choice["gpu"]["id"], choice["model"]["id"], choice["dtype"]["id"]) == ("h100-sxm", "llama-3.1-8b", "bf16")
    assert "https://" in choice["gpu"]["source"] and choice["compare_gpu"]["id"] == "a100-sxm-80gb"
    for path in REQUIRED_NUMBERS:
        assert isinstance(at_path(data, path), (int, float)), path
    for beat in data["beats"]:
        assert {"id", "title", "start", "end", "narration", "cue_offsets", "timing"} <= set(beat)
        assert beat["timing"] is None  # the resolved plan; the narration fills it in
    assert data["measured"]["dataset"]["compared_gpu_is_assumption"] is True
    assert data["beats"][4]["captions"]["remark"].startswith("Even 295 users")
    assert "memory-bound" in data["beats"][4]["captions"]["remark"]


def test_the_plan_reads_back_as_the_same_typed_plan(plan):
    again = Plan.from_json(plan.to_json())
    assert again == plan
    assert again.numbers.prefill.ops == plan.numbers.prefill.ops and again.choice.gpu.short_name == "H100"


def test_a_damaged_plan_file_names_the_place(plan):
    data = json.loads(plan.to_json())
    data["numbers"]["prefill"]["ops"] = "many"
    with pytest.raises(FilmError, match=r"timed-plan.json.numbers.prefill.ops: expected a number, found \"many\""):
        Plan.from_json(json.dumps(data), "timed-plan.json")
    del data["numbers"]["prefill"]
    with pytest.raises(FilmError, match="Numbers is missing 'prefill'"):
        Plan.from_json(json.dumps(data), "timed-plan.json")
    with pytest.raises(FilmError, match="is not valid JSON"):
        Plan.from_json("{", "timed-plan.json")


def test_a_typo_in_a_plan_name_fails_at_once(plan):
    with pytest.raises(AttributeError):
        plan.numbers.prefill.opps  # noqa: B018 - the point is the error


def test_another_choice_resolves_with_its_own_numbers():
    plan = resolve_plan(gpu="a100-sxm-80gb", model="llama-3.1-70b", dtype="int8")
    assert plan.spec.weight_bytes == pytest.approx(70.55e9, rel=1e-3)
    assert plan.spec.ridge_ops_per_byte == pytest.approx(153, abs=0.5)
    assert plan.choice.compare_gpu.id == "h100-sxm"  # the storyboard's fallback when the film's GPU is the A100
    assert "an A100's 312 teraflops" in plan.beat("prefill").narration
    assert "Llama 3.1 70B" in plan.beat("prefill").narration
    # The measured beats keep the dataset's own model and GPU.
    assert plan.beat("measured").narration == resolve_plan().beat("measured").narration


def every_choice(catalog):
    return [(g, m, d) for g in catalog.gpus for m in catalog.models for d in catalog.dtypes]


def test_every_choice_resolves_or_is_refused_for_memory(catalog):
    """... with grammatical narration, and the same cues in every beat, so every scene finds its cues."""
    cues = {beat.id: set(beat.cue_offsets) for beat in resolve_plan().beats}
    fitted = refused = 0
    for gpu, model, dtype in every_choice(catalog):
        try:
            plan = resolve_plan(gpu=gpu, model=model, dtype=dtype)
        except FilmError as error:
            assert "does not fit on one" in str(error), (gpu, model, dtype)
            refused += 1
            continue
        fitted += 1
        for beat in plan.beats:
            text = beat.narration
            assert text.endswith("."), (gpu, model, dtype, beat.id)
            assert "  " not in text and " ," not in text and " ." not in text
            assert not re.search(r"\b(None|nan|inf)\b|\{|\}", text), (gpu, model, dtype, text)
            assert not re.search(r"\ban? an?\b|\ba an\b|\ban a\b", text)
            assert set(beat.cue_offsets) == cues[beat.id], (gpu, model, dtype, beat.id)
        json.loads(plan.to_json())
    assert fitted > 150 and refused > 0


@pytest.mark.parametrize("gpu, compare, expected", [
    ("h100-sxm", None, "an H100 has three times an A100's teraflops but only 1.6 times its bandwidth, "
                       "so one user's decode gets 1.6 times faster, while a 32,000-token prompt still waits"),
    ("a100-sxm-80gb", None, "an H100 has three times an A100's teraflops but only 1.6 times its bandwidth, "
                            "so one user's decode gets 1.6 times faster, "
                            "while on an A100 a 32,000-token prompt waits 2.5 seconds"),
    ("h100-sxm", "h200-sxm", "an H200 has the same teraflops as an H100 and 1.4 times its bandwidth, "
                             "so one user's decode gets 1.4 times faster, while on an H100"),
    ("l40s", None, "an L40S has 1.2 times an A100's teraflops but only 0.42 times its bandwidth, "
                   "so one user's decode gets slower, not faster"),
    ("mi300x", None, "an MI300X has four times an A100's teraflops but only 2.6 times its bandwidth"),
    ("rtx-4090", None, "an A100 has 1.9 times an RTX 4090's teraflops and twice its bandwidth, "
                       "so one user's decode gets twice as fast"),
    ("b200", "h100-sxm", "a B200 has 2.3 times an H100's teraflops and 2.3 times its bandwidth"),
])
def test_the_comparison_stays_true_when_it_flips(gpu, compare, expected):
    narration = resolve_plan(gpu=gpu, compare_gpu=compare).beat("wasted-money").narration
    assert expected in narration


def test_the_batching_remark_is_derived_from_the_numbers():
    assert "still memory-bound" in resolve_plan().beat("batching").captions["remark"]
    # A 70B model in INT8 on an A100: 153 users do reach the ridge (ridge 153, intensity above it).
    plan = resolve_plan(gpu="a100-sxm-80gb", model="llama-3.1-70b", dtype="int8")
    assert plan.numbers.batch.ridge_value_ops_per_byte >= plan.spec.ridge_ops_per_byte
    assert plan.beat("batching").captions["remark"] == "At 153 users decode reaches the ridge: compute-bound"


def test_fp8_on_a_gpu_without_fp8_is_noted():
    plan = resolve_plan(gpu="a100-sxm-80gb", dtype="fp8")
    assert plan.choice.arithmetic == "bf16"
    assert any("no FP8 tensor cores" in str(note) for note in plan.notes)
    assert "an A100's 312 teraflops" in plan.beat("prefill").narration


@pytest.mark.parametrize("dtype, lever", [("bf16", "int8"), ("fp16", "int8"), ("fp8", "int4"), ("int8", "int4"),
                                          ("int4", None)])
def test_the_quantisation_lever_is_a_format_smaller_than_the_films_own(dtype, lever):
    plan = resolve_plan(gpu="mi300x", model="llama-3.2-3b", dtype=dtype)
    quantised = plan.numbers.quantised
    budgets = plan.beat("two-budgets").narration
    if lever is None:  # already the smallest weights in the data: no such lever, said or shown
        assert quantised is None and "with bandwidth and batching, not with faster arithmetic" in budgets
    else:
        assert quantised.dtype.id == lever and quantised.speedup > 1.5
        assert "with bandwidth, quantisation and batching" in budgets


def test_a_method_called_through_a_scenes_view_records_what_it_reads_not_its_object(plan):
    """`plan.choice.times("H100")` records the GPU count it reads: as the method itself its value was the whole
    choice's text, so another GPU's bandwidth changed the key of every beat that named a GPU (the studio redrew
    six beats for the A100's bandwidth, which three show)."""
    import dataclasses

    from render.plan.tracking import Tracked
    from render.video.cache import values_key

    reads: set[str] = set()
    assert Tracked(plan, "", reads).choice.times("H100") == "H100" and reads == {"choice.gpus"}
    choice = plan.choice
    slower = dataclasses.replace(choice, compare_gpu=dataclasses.replace(choice.compare_gpu, bandwidth=1.935e12))
    assert values_key(dataclasses.replace(plan, choice=slower), sorted(reads)) == values_key(plan, sorted(reads))
    four = dataclasses.replace(choice, gpus=4)
    assert values_key(dataclasses.replace(plan, choice=four), sorted(reads)) != values_key(plan, sorted(reads))
