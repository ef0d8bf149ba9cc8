"""The roofline module against the numbers of the source documents (film page and companion)."""

from __future__ import annotations

import ast
import math
from dataclasses import replace
from pathlib import Path

import pytest

from render.specs import roofline as rl
from render.errors import FilmError
from render.specs.types import Deployment


@pytest.fixture
def h100(catalog):
    return catalog.gpu("h100-sxm")


@pytest.fixture
def llama8b(catalog):
    return catalog.model("llama-3.1-8b")


@pytest.fixture
def bf16(catalog):
    return catalog.dtype("bf16")


@pytest.fixture
def one_h100(h100, llama8b, bf16):
    """The source documents' deployment: Llama 3.1 8B in BF16 on one H100."""
    return Deployment(h100, llama8b, bf16)


def test_weights_and_kv_cache_per_token(llama8b, bf16):
    # Brief §4: 16.06 GB of weights; 2 x 32 x 8 x 128 x 2 = 131,072 bytes (128 KiB) per token.
    assert rl.weight_bytes(llama8b, bf16) == pytest.approx(16.06e9, rel=1e-3)
    assert rl.kv_bytes_per_token(llama8b, bf16) == 131_072


def test_ridges_of_the_three_gpus(catalog, bf16):
    # Film page: H100 295, A100 153, RTX 4090 164 operations per byte.
    assert round(rl.ridge_ops_per_byte(catalog.gpu("h100-sxm"), bf16)) == 295
    assert round(rl.ridge_ops_per_byte(catalog.gpu("a100-sxm-80gb"), bf16)) == 153
    assert round(rl.ridge_ops_per_byte(catalog.gpu("rtx-4090"), bf16)) == 164


def test_prefill_of_2000_tokens(one_h100, llama8b):
    # Film page maths: (2PN + 2LdN^2) / 989e12 ~ 34 ms; 3.32e13 operations; attention ~3%.
    step = rl.prefill(one_h100, 2000)
    assert step.operations == pytest.approx(3.32e13, rel=2e-3)
    timing = rl.time_on(one_h100, step)
    assert timing.seconds == pytest.approx(33.5e-3, rel=2e-3)
    assert timing.bound == "compute"
    assert rl.prefill_attention_fraction(llama8b, 2000) == pytest.approx(1 / 30, abs=0.004)
    # "prefill of 2,000 tokens does about 2,000" operations per byte
    assert step.ops_per_byte == pytest.approx(2000, rel=0.05)


def test_prefill_of_a_long_prompt(one_h100, llama8b):
    # Brief: 32,000 tokens -> 0.79 s, ~34% of it attention; film page: a third at 32,768.
    timing = rl.time_on(one_h100, rl.prefill(one_h100, 32_000))
    assert timing.seconds == pytest.approx(0.79, abs=0.005)
    assert rl.prefill_attention_fraction(llama8b, 32_000) == pytest.approx(0.343, abs=0.002)
    assert rl.prefill_attention_fraction(llama8b, 32_768) == pytest.approx(1 / 3, abs=0.02)


def test_decode_at_batch_one(one_h100):
    # 16.06 GB / 3.35 TB/s = 4.79 ms, 208.6 tokens/s, one operation per byte, memory-bound.
    timing = rl.time_on(one_h100, rl.decode_step(one_h100))
    assert timing.seconds == pytest.approx(4.79e-3, rel=1e-3)
    assert rl.decode_tokens_per_second(one_h100) == pytest.approx(208.6, abs=0.1)
    assert timing.step.ops_per_byte == pytest.approx(1.0)
    assert timing.step.operations == pytest.approx(16.06e9, rel=1e-3)
    assert timing.bound == "memory"


def test_decode_at_batch_64(one_h100):
    # 64 users with 256 cached tokens each: 5.44 ms a step, ~11,800 tokens/s.
    timing = rl.time_on(one_h100, rl.decode_step(one_h100, 64, 256))
    assert timing.seconds == pytest.approx(5.44e-3, rel=2e-3)
    assert 64 / timing.seconds == pytest.approx(11_800, rel=0.01)
    assert timing.bound == "memory"


def test_batching_at_the_ridge_value_stays_memory_bound(one_h100, h100, bf16):
    # Brief: even at 295 users the intensity (~180) is below the ridge.
    step = rl.decode_step(one_h100, 295, 256)
    assert step.ops_per_byte == pytest.approx(180, rel=0.02)
    assert step.ops_per_byte < rl.ridge_ops_per_byte(h100, bf16)


def test_batch_size_at_ridge_is_the_smallest_that_reaches_it(one_h100, h100, bf16):
    ridge = rl.ridge_ops_per_byte(h100, bf16)
    batch = rl.batch_size_at_ridge(one_h100, 256)
    assert rl.decode_step(one_h100, batch, 256).ops_per_byte >= ridge
    assert rl.decode_step(one_h100, batch - 1, 256).ops_per_byte < ridge
    # With no cache to reread, B = ridge x bytes per weight / 2: 296 at BF16.
    assert rl.batch_size_at_ridge(one_h100, 0) == 296


def test_batch_never_reaches_the_ridge_when_the_cache_outweighs_the_weights(one_h100, h100, llama8b, bf16):
    # 2P / (C k) < ridge: each added sequence brings more bytes than its operations can cover.
    context = 2 * llama8b.parameters / (rl.ridge_ops_per_byte(h100, bf16) * 131_072) + 1
    assert rl.batch_size_at_ridge(one_h100, context) is None
    assert rl.decode_intensity_limit(one_h100, context) < rl.ridge_ops_per_byte(h100, bf16)
    assert math.isinf(rl.decode_intensity_limit(one_h100, 0))


def test_comparison_with_an_a100(catalog, one_h100, llama8b, bf16):
    # "three times an A100's teraflops but only 1.6 times its bandwidth": 3.2x and 1.64x.
    comparison = rl.compare(one_h100, catalog.gpu("a100-sxm-80gb"), 2000)
    assert comparison.flops_ratio == pytest.approx(3.17, abs=0.01)
    assert comparison.bandwidth_ratio == pytest.approx(1.643, abs=0.001)
    assert comparison.decode_speedup == pytest.approx(comparison.bandwidth_ratio)
    assert rl.decode_tokens_per_second(Deployment(catalog.gpu("a100-sxm-80gb"), llama8b, bf16)) == pytest.approx(127,
        abs=0.5)


def test_int8_weight_only_halves_bytes_and_keeps_bf16_arithmetic(catalog, h100, llama8b):
    int8 = catalog.dtype("int8")
    assert rl.weight_bytes(llama8b, int8) == pytest.approx(8.03e9, rel=1e-3)
    assert rl.peak_flops(h100, int8) == h100.bf16_flops
    assert rl.decode_tokens_per_second(Deployment(h100, llama8b, int8)) == pytest.approx(417, abs=0.5)


def test_fp8_uses_fp8_peak_where_the_gpu_has_it_and_falls_back_where_not(catalog, h100):
    fp8 = catalog.dtype("fp8")
    a100 = catalog.gpu("a100-sxm-80gb")
    assert rl.peak_flops(h100, fp8) == h100.fp8_flops
    assert rl.arithmetic_format(a100, fp8) == "bf16"
    assert rl.peak_flops(a100, fp8) == a100.bf16_flops


def test_companion_worked_examples(catalog, bf16):
    a100 = catalog.gpu("a100-sxm-80gb")
    # "A100 80GB SXM: 312 TFLOP/s / 2.039 TB/s ~ 153."
    assert rl.ridge_ops_per_byte(a100, bf16) == pytest.approx(153, abs=0.5)
    # "14 GB of weights / 2.039 TB/s ~ 6.9 ms per token, about 145 tokens per second" (7B at 16-bit).
    seven_b = replace(catalog.model("llama-3.1-8b"), parameters=7_000_000_000)
    assert rl.time_on(Deployment(a100, seven_b, bf16), rl.decode_step(Deployment(a100, seven_b,
        bf16))).seconds == pytest.approx(6.9e-3, abs=0.05e-3)
    assert rl.decode_tokens_per_second(Deployment(a100, seven_b, bf16)) == pytest.approx(145, abs=1)
    # "A pass of T tokens does about T operations per byte": prefill of 1,000 tokens ~ 1,000.
    assert rl.prefill(Deployment(a100, seven_b, bf16), 1000).ops_per_byte == pytest.approx(1000, rel=0.05)
    # "TTFT = 45 ms and TPOT = 7 ms, a 200-token answer takes 45 + 199 x 7 ~ 1,438 ms."
    assert rl.latency(0.045, 0.007, 200) == pytest.approx(1.438)


def test_roofline_time_is_the_larger_of_compute_and_memory(one_h100):
    compute_heavy = rl.Step(operations=989e12, bytes=1e9)
    memory_heavy = rl.Step(operations=1e9, bytes=3.35e12)
    assert rl.time_on(one_h100, compute_heavy).seconds == pytest.approx(1.0)
    assert rl.time_on(one_h100, compute_heavy).bound == "compute"
    assert rl.time_on(one_h100, memory_heavy).seconds == pytest.approx(1.0)
    assert rl.time_on(one_h100, memory_heavy).bound == "memory"


def test_a_model_that_does_not_fit_is_refused_with_the_sizes(catalog, bf16):
    with pytest.raises(FilmError) as error:
        rl.check_fits(Deployment(catalog.gpu("rtx-4090"), catalog.model("llama-3.1-70b"), bf16), 32_000,
                      "the long prompt")
    message = str(error.value)
    assert "does not fit on one GeForce RTX 4090" in message
    assert "151.6 GB" in message and "141.1 GB of weights" in message and "10.5 GB of KV cache" in message
    assert "25.8 GB (24 GiB)" in message


def test_the_roofline_module_is_pure_maths():
    """No Manim, no files, no YAML: only the standard library and the project's pure modules (the spec sheets'
    fields say their ranges and units through render/specs/fields.py, which is as pure)."""
    allowed = {"__future__", "math", "dataclasses", "datetime", "functools", "types", "typing", "render.errors",
               "render.specs.types", "render.specs.architecture", "render.specs.fields"}
    for module in ("roofline.py", "types.py", "architecture.py", "fields.py"):
        tree = ast.parse((Path(__file__).parent.parent / "render" / "specs" / module).read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert imported <= allowed, f"render/specs/{module} imports {imported - allowed}"


def test_the_embeddings_stay_in_the_data_types_format_unless_it_says_otherwise():
    """data/dtypes.yaml says, per data type, whether the embedding table and output head are quantised too; the
    catalog assumes so (the source counts INT8 Llama 3.1 8B at 8 GB), and the plan's notes say what keeping them at
    16 bits would add."""
    import dataclasses

    from render.plan.resolve import resolve_plan
    from render.specs.catalog import load_catalog

    catalog = load_catalog()
    model, int8 = catalog.model("llama-3.1-8b"), catalog.dtype("int8")
    assert all(dtype.embeddings_in_format for dtype in catalog.dtypes.values())
    embeddings = 128_256 * 4096 * 2  # untied: the input table and the output head
    assert rl.embedding_parameters(model) == embeddings
    assert rl.weight_bytes(model, int8) == model.parameters == pytest.approx(8.03e9, rel=1e-3)
    kept = dataclasses.replace(int8, embeddings_in_format=False)
    assert rl.weight_bytes(model, kept) == model.parameters + embeddings  # a byte more for each of them
    assert rl.weight_bytes(model, kept) == rl.weight_bytes(model, int8, embeddings_in_format=False)
    assert rl.weight_bytes(model, catalog.dtype("bf16"), embeddings_in_format=False) == 2 * model.parameters
    notes = resolve_plan(dtype="int8", recordings=None).notes
    assert any("the embedding table and the output head included" in note.text and "holds 9.1 GB of weights, not 8 GB"
               in note.text and note.setting == "data/dtypes.yaml (int8: embeddings_in_format)"
               for note in notes), notes
    assert not any("output head included" in str(note) for note in resolve_plan().notes)


def test_a_step_that_gathers_its_embedding_rows_reads_the_rest_of_the_weights_only(tmp_path):
    """The storyboard's parameters.embedding_reads: the source's convention (every weight each step, "all 16 GB")
    by default, and the rows a step's tokens gather where it says rows: the plan's numbers, its fit and its
    notes follow."""
    from render.files import STORYBOARD_PATH
    from render.plan.resolve import resolve_plan
    from render.specs.catalog import load_catalog

    catalog = load_catalog()
    model, bf16 = catalog.model("llama-3.1-8b"), catalog.dtype("bf16")
    table = 128_256 * 4096 * 2
    assert rl.input_embedding_bytes(model, bf16) == table  # 1.05 GB of 16.06
    assert rl.weight_bytes_read(model, bf16, 1, embedding_rows=True) == rl.weight_bytes(model, bf16) - table * (
        1 - 1 / 128_256)
    assert rl.weight_bytes_read(model, bf16, 1) == rl.weight_bytes(model, bf16)
    tied = catalog.model("llama-3.2-1b")
    assert tied.tied_embeddings and rl.weight_bytes_read(tied, bf16, 1, True) == rl.weight_bytes(tied, bf16)

    default = resolve_plan()
    assert round(default.numbers.decode.tokens_per_second) == 209
    assert any("parameters.embedding_reads: table" in note.setting and "1.1 GB (7% of the weights) less" in note.text
               for note in default.notes)
    rows = tmp_path / "storyboard.yaml"
    rows.write_text(STORYBOARD_PATH.read_text().replace("  embedding_reads: table", "  embedding_reads: rows"))
    gathered = resolve_plan(storyboard_path=rows)
    assert round(gathered.numbers.decode.tokens_per_second) == 223  # 3.35 TB/s over 15.0 GB
    assert gathered.numbers.decode.weight_bytes_read == pytest.approx(16.06e9 - table, rel=1e-3)
    assert any("embedding_reads: rows" in note.setting for note in gathered.notes)
    # the fit of the measured timings is against the bytes the convention reads: 156 of 223 tokens a second
    assert gathered.measured.fit.memory_efficiency.value == pytest.approx(0.70, abs=0.01)
    assert default.measured.fit.memory_efficiency.value == pytest.approx(0.744, abs=0.005)


@pytest.mark.parametrize("gpu, model, dtype, gpus, rows", [
    ("h100-sxm", "llama-3.1-8b", "bf16", 1, False), ("a100-sxm-80gb", "llama-3.1-70b", "int8", 4, True),
    ("h200-sxm", "mixtral-8x7b", "fp8", 2, False), ("l40s", "llama-3.1-8b", "fp8", 1, True)])
def test_a_simulations_steps_cost_what_time_on_gives_to_the_bit(catalog, gpu, model, dtype, gpus, rows):
    """The serving simulator's steps (rl.Stepper, its constants worked out once) are time_on(forward_step(…)) to the
    last bit, for dense and mixture-of-experts models, tensor parallelism, gathered embedding rows and an achieved
    GPU; a second ask of the same tokens (its kept weights and all-reduces) the same again."""
    import random

    deployment = Deployment(rl.achieved(catalog.gpu(gpu), 0.6, 0.8, 0.7), catalog.model(model), catalog.dtype(dtype),
                            gpus, embedding_rows=rows)
    stepper = rl.Stepper(deployment)
    draw = random.Random(7)
    for _ in range(300):
        chunks = tuple((draw.randint(1, 4096), draw.choice((0, draw.randint(1, 30_000))))
                       for _ in range(draw.choice((0, 1, 1, 3))))
        decodes = draw.randint(0 if chunks else 1, 300)
        context = draw.randint(0, 2_000_000) if decodes else 0
        expected = rl.time_on(deployment, rl.forward_step(deployment, decodes, context, chunks)).seconds
        assert stepper.seconds(decodes, context, chunks) == expected
        assert stepper.seconds(decodes, context, chunks) == expected  # (kept)
