"""The resolved plan: the transcript read back, the numbers the other stages rely on, every choice."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from render.errors import FilmError
from render.plan import BEAT_IDS, resolve_plan
from render.storyboard import parse_timestamp

from conftest import FIXTURES

SHARED_PAGE = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "004_70339d625aa121db.txt"

REQUIRED_NUMBERS = [
    "ridge_ops_per_byte", "weight_bytes", "kv_bytes_per_token", "prefill_tokens", "prefill_ops",
    "prefill_seconds", "prefill_attention_fraction", "prefill_ops_per_byte", "decode_ops_per_token",
    "decode_step_seconds", "decode_tokens_per_second", "decode_ops_per_byte", "batch_size",
    "batch_context_tokens", "batch_step_seconds", "batch_tokens_per_second", "batch_size_at_ridge",
    "long_prompt_tokens", "long_prompt_seconds", "long_prompt_attention_fraction", "compare_flops_ratio",
    "compare_bandwidth_ratio", "compare_decode_speedup", "int8_decode_tokens_per_second",
    # what the measured beats need
    "measured_short_ttft_seconds", "measured_medium_ttft_seconds", "measured_long_ttft_seconds",
    "measured_short_decode_tokens_per_second", "measured_long_decode_tokens_per_second",
    "measured_long_kv_bytes", "measured_long_kv_ratio", "measured_slowdown", "measured_ceiling_fraction",
]


def transcript() -> list[tuple[float, str, str]]:
    """(start, title, text) of each '### m:ss Title' section of the film page's transcript."""
    page = (FIXTURES / "film-page.txt").read_text()
    section = page.split("## Transcript", 1)[1].split("\n## ", 1)[0]
    beats = re.findall(r"^### (\d+:\d\d) (.+?)\n\n(.+?)(?=\n\n###|\n*\Z)", section, re.S | re.M)
    return [(parse_timestamp(start, "", ""), title.strip(), " ".join(text.split())) for start, title, text in beats]


@pytest.fixture(scope="module")
def plan():
    return resolve_plan()


def test_the_fixture_is_the_source_page():
    if not SHARED_PAGE.exists():
        pytest.skip("the shared seeds are not beside this checkout")
    assert (FIXTURES / "film-page.txt").read_text() == SHARED_PAGE.read_text()


def test_default_narration_reads_as_the_transcript(plan):
    expected = transcript()
    assert len(expected) == 9
    for beat, (start, title, text) in zip(plan.beats, expected):
        assert (beat.start, beat.title) == (start, title)
        assert beat.narration == text, f"beat {beat.id!r} differs from the transcript"


def test_beats_are_the_nine_with_their_times(plan):
    assert tuple(beat.id for beat in plan.beats) == BEAT_IDS
    assert plan.duration == 154.0
    assert plan.beats[0].start == 0
    for beat, following in zip(plan.beats, plan.beats[1:]):
        assert beat.end == following.start
    assert plan.beats[-1].end == 154.0
    assert [beat.scene for beat in plan.beats] == [
        "two-waits", "sluice-and-tap", "sluice-and-tap", "roofline", "batching", "roofline",
        "measured-timings", "measured-timings", "two-waits"]


def test_numbers_reproduce_the_source_documents(plan):
    n = plan.numbers
    assert n["prefill_ops"] == pytest.approx(3.32e13, rel=2e-3)
    assert n["prefill_seconds"] == pytest.approx(0.0335, rel=2e-3)
    assert n["decode_step_seconds"] == pytest.approx(4.79e-3, rel=1e-3)
    assert n["decode_tokens_per_second"] == pytest.approx(208.6, abs=0.1)
    assert n["ridge_ops_per_byte"] == pytest.approx(295, abs=0.5)
    assert n["batch_step_seconds"] == pytest.approx(5.44e-3, rel=2e-3)
    assert n["batch_tokens_per_second"] > 11_000
    assert n["long_prompt_seconds"] == pytest.approx(0.79, abs=0.005)
    assert n["long_prompt_attention_fraction"] == pytest.approx(0.34, abs=0.005)
    assert n["kv_bytes_per_token"] == 131_072
    assert n["compare_flops_ratio"] == pytest.approx(3.2, abs=0.05)
    assert n["compare_bandwidth_ratio"] == pytest.approx(1.64, abs=0.005)
    assert n["int8_decode_tokens_per_second"] == pytest.approx(417, abs=0.5)
    # The measured beats: 2.1 GB of KV = 13.4% of the weights; 156 -> 136 is 12.8%; 156 is 75% of 208.6.
    assert n["measured_long_kv_bytes"] == 16_361 * 131_072  # the film page: "2.1 GB"
    assert n["measured_long_kv_ratio"] == pytest.approx(0.134, abs=0.001)
    assert n["measured_slowdown"] == pytest.approx(0.128, abs=0.001)
    assert n["measured_ceiling_fraction"] == pytest.approx(0.75, abs=0.005)
    assert n["ridge_value_batch_ops_per_byte"] == pytest.approx(180, rel=0.02)


def test_plan_json_has_the_named_parts(plan):
    data = json.loads(plan.to_json())
    assert data["gpu"]["id"] == "h100-sxm" and data["model"]["id"] == "llama-3.1-8b" and data["dtype"]["id"] == "bf16"
    for name in REQUIRED_NUMBERS:
        assert name in data["numbers"], name
        assert isinstance(data["numbers"][name], (int, float)), name
    for beat in data["beats"]:
        assert {"id", "title", "start", "end", "scene", "narration"} <= set(beat)
    assert data["measured"]["compared_gpu_is_assumption"] is True
    assert data["beats"][4]["captions"]["remark"].startswith("Even 295 users")
    assert "memory-bound" in data["beats"][4]["captions"]["remark"]


def test_another_choice_resolves_with_its_own_numbers():
    plan = resolve_plan(gpu="a100-sxm-80gb", model="llama-3.1-70b", dtype="int8")
    assert plan.numbers["weight_bytes"] == pytest.approx(70.55e9, rel=1e-3)
    assert plan.numbers["ridge_ops_per_byte"] == pytest.approx(153, abs=0.5)
    assert plan.compare_gpu.id == "h100-sxm"  # the storyboard's fallback when the film's GPU is the A100
    assert "an A100's 312 teraflops" in plan.beat("prefill").narration
    assert "Llama 3.1 70B" in plan.beat("prefill").narration
    # The measured beats keep the dataset's own model and GPU.
    assert plan.beat("measured").narration == resolve_plan().beat("measured").narration


def every_choice(catalog):
    return [(g, m, d) for g in catalog.gpus for m in catalog.models for d in catalog.dtypes]


def test_every_choice_resolves_or_is_refused_for_memory(catalog):
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
        json.loads(plan.to_json())
    assert fitted > 150 and refused > 0


@pytest.mark.parametrize("gpu, compare, expected", [
    ("h100-sxm", None, "an H100 has three times an A100's teraflops but only 1.6 times its bandwidth, "
                       "so one user's decode gets 1.6 times faster, while a 32,000-token prompt still waits"),
    ("a100-sxm-80gb", None, "an H100 has three times an A100's teraflops but only 1.6 times its bandwidth, "
                            "so one user's decode gets 1.6 times faster, while on an A100 a 32,000-token prompt waits 2.5 seconds"),
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
    assert plan.numbers["ridge_value_batch_ops_per_byte"] >= plan.numbers["ridge_ops_per_byte"]
    assert plan.beat("batching").captions["remark"] == "At 153 users decode reaches the ridge: compute-bound"


def test_fp8_on_a_gpu_without_fp8_is_noted():
    plan = resolve_plan(gpu="a100-sxm-80gb", dtype="fp8")
    assert plan.arithmetic == "bf16"
    assert any("no FP8 tensor cores" in note for note in plan.notes)
    assert "an A100's 312 teraflops" in plan.beat("prefill").narration
