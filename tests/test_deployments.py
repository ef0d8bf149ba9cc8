"""Real deployments: tensor parallelism over several GPUs, mixtures of experts, latent attention,
the KV cache's own data type, and models imported from Hugging Face config.json files.

The expected values are worked out here from the formulas in the README (and the models'
published figures), not read back from the code under test."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from render import formatting as fmt
from render.errors import FilmError
from render.plan.resolve import resolve_plan
from render.specs import roofline as rl
from render.specs.architecture import count_parameters
from render.specs.hf_config import SUPPORTED, model_entry_yaml, model_from_config, model_from_file
from render.specs.types import Deployment

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "tests" / "fixtures" / "hf"


# -- tensor parallelism ----------------------------------------------------------------------------


def test_one_gpu_has_no_communication_and_the_seed_numbers(catalog):
    one = Deployment(catalog.gpu("h100-sxm"), catalog.model("llama-3.1-8b"), catalog.dtype("bf16"))
    assert rl.communication_seconds(one, 2000) == 0
    assert rl.decode_tokens_per_second(one) == pytest.approx(208.6, abs=0.1)


def test_llama_70b_on_four_h100s(catalog):
    h100, model, bf16 = catalog.gpu("h100-sxm"), catalog.model("llama-3.1-70b"), catalog.dtype("bf16")
    four = Deployment(h100, model, bf16, 4)
    weights = 70_553_706_496 * 2
    k = 2 * 80 * 8 * 128 * 2                      # 327,680 bytes a token for the whole model
    k_4 = k * 2 / 8                               # two of the eight KV heads on each GPU
    assert rl.kv_bytes_per_token_per_gpu(model, bf16, 4) == k_4
    # decode at batch 1: a quarter of the weights per GPU, and two all-reduces per layer
    step = rl.decode_step(four)
    assert step.bytes == pytest.approx(weights / 4)
    communication = 2 * 80 * (8e-6 + 2 * 3 / 4 * 1 * 8192 * 2 / 450e9)
    assert rl.communication_seconds(four, 1) == pytest.approx(communication)
    timing = rl.time_on(four, step)
    assert timing.seconds == pytest.approx(weights / 4 / 3.35e12 + communication)
    assert 1 / timing.seconds == pytest.approx(84.7, abs=0.2)
    # prefill of 2,000 tokens: the operations split four ways, the activations of 2,000 tokens on the links
    operations = 2 * 70_553_706_496 * 2000 + 2 * 80 * 8192 * 2000**2
    prefill = rl.time_on(four, rl.prefill(four, 2000))
    assert prefill.compute_seconds == pytest.approx(operations / 4 / 989e12)
    assert prefill.communication_seconds == pytest.approx(2 * 80 * (8e-6 + 1.5 * 2000 * 8192 * 2 / 450e9))
    assert prefill.seconds == pytest.approx(0.0914, abs=0.0005)


def test_kv_heads_are_replicated_when_gpus_outnumber_them(catalog):
    qwen = catalog.model("qwen3-30b-a3b")  # four KV heads
    bf16 = catalog.dtype("bf16")
    whole = 2 * 48 * 4 * 128 * 2
    assert rl.kv_bytes_per_token(qwen, bf16) == whole
    assert rl.kv_bytes_per_token_per_gpu(qwen, bf16, 2) == whole / 2
    assert rl.kv_bytes_per_token_per_gpu(qwen, bf16, 8) == whole / 4  # each GPU still holds one whole head


def test_smallest_gpu_count_that_fits(catalog):
    deployment = Deployment(catalog.gpu("h100-sxm"), catalog.model("llama-3.1-70b"), catalog.dtype("bf16"))
    assert rl.smallest_gpu_count(deployment, 32_000) == 2
    huge = Deployment(catalog.gpu("h100-sxm"), catalog.model("deepseek-v3"), catalog.dtype("bf16"))
    assert rl.smallest_gpu_count(huge, 32_000) is None  # 1.34 TB of weights: 168 GB on each of eight


# -- mixture of experts and latent attention -------------------------------------------------------


@pytest.mark.parametrize("model_id, published_active", [
    ("mixtral-8x7b", 12.9e9),    # Mistral's announcement: 12.9B of 46.7B used per token
    ("qwen3-30b-a3b", 3.3e9),    # Qwen3 model card: 3.3B activated
    ("deepseek-v3", 37e9),       # DeepSeek-V3 model card: 37B activated
])
def test_active_parameters_match_the_published_figures(catalog, model_id, published_active):
    assert rl.active_parameters(catalog.model(model_id)) == pytest.approx(published_active, rel=0.02)


def test_mixtral_reads_only_the_experts_its_tokens_touch(catalog):
    mixtral, bf16 = catalog.model("mixtral-8x7b"), catalog.dtype("bf16")
    expert = 3 * 4096 * 14336
    assert rl.experts_touched(mixtral, 1) == pytest.approx(2)
    assert rl.experts_touched(mixtral, 2) == pytest.approx(8 * (1 - (6 / 8) ** 2))
    shared = 46_702_792_704 - 32 * 8 * expert
    assert rl.weight_bytes_read(mixtral, bf16, 1) == pytest.approx((shared + 32 * 2 * expert) * 2)
    # 64 tokens touch every expert (8 x (1 - 0.75^64) = 8.0): the whole model is read
    assert rl.weight_bytes_read(mixtral, bf16, 64) == pytest.approx(46_702_792_704 * 2, rel=1e-6)
    one = Deployment(catalog.gpu("h100-sxm"), mixtral, bf16)
    assert rl.decode_step(one).operations == pytest.approx(2 * rl.active_parameters(mixtral))


def test_a_dense_model_reads_all_its_weights_at_any_batch(catalog):
    llama, bf16 = catalog.model("llama-3.1-8b"), catalog.dtype("bf16")
    assert rl.weight_bytes_read(llama, bf16, 1) == rl.weight_bytes(llama, bf16)
    assert rl.active_parameters(llama) == llama.parameters


def test_latent_attention_caches_one_latent_a_layer_on_every_gpu(catalog):
    deepseek = catalog.model("deepseek-v3")
    fp8, bf16 = catalog.dtype("fp8"), catalog.dtype("bf16")
    assert rl.kv_bytes_per_token(deepseek, bf16) == 61 * (512 + 64) * 2
    assert rl.kv_bytes_per_token(deepseek, fp8) == 61 * (512 + 64) * 1
    assert rl.kv_bytes_per_token_per_gpu(deepseek, fp8, 8) == rl.kv_bytes_per_token(deepseek, fp8)
    # attention over the N^2 square uses 192-wide query/key heads and 128-wide value heads
    assert deepseek.attention_width == 128 * (192 + 128) // 2


def test_batch_size_at_ridge_is_the_smallest_for_a_mixture_of_experts(catalog):
    deployment = Deployment(catalog.gpu("h100-sxm"), catalog.model("mixtral-8x7b"), catalog.dtype("bf16"), 2)
    ridge = rl.ridge_ops_per_byte(deployment.gpu, deployment.dtype)
    batch = rl.batch_size_at_ridge(deployment, 0)
    assert rl.decode_step(deployment, batch).ops_per_byte >= ridge > rl.decode_step(deployment, batch - 1).ops_per_byte


# -- the KV cache's data type ----------------------------------------------------------------------


def test_kv_dtype_changes_only_the_cache():
    bf16 = resolve_plan(model="llama-3.1-70b", gpus=2)
    fp8_cache = resolve_plan(model="llama-3.1-70b", gpus=2, kv_dtype="fp8")
    assert fp8_cache.spec.kv_bytes_per_token == bf16.spec.kv_bytes_per_token / 2
    assert fp8_cache.spec.weight_bytes == bf16.spec.weight_bytes
    assert fp8_cache.numbers.batch.kv_bytes == pytest.approx(bf16.numbers.batch.kv_bytes / 2)
    assert fp8_cache.choice.name == "h100-sxm-x2-llama-3.1-70b-bf16-kv-fp8"
    assert fp8_cache.choice.label.endswith("· KV FP8")
    same = resolve_plan(dtype="fp8", kv_dtype="fp8")
    assert same.choice.kv_is_default and same.choice.name == "h100-sxm-llama-3.1-8b-fp8"


# -- the plan reports the deployment ---------------------------------------------------------------


def test_the_plan_reports_the_deployment():
    plan = resolve_plan(model="deepseek-v3", gpu="h200-sxm", gpus=8, dtype="fp8")
    spec = json.loads(plan.to_json())["spec"]
    assert spec["gpus"] == 8 and spec["interconnect_bandwidth"] == 450e9
    assert spec["allreduce_latency_seconds"] == 8e-6 and spec["allreduce_latency_is_assumption"] is True
    assert spec["experts"] == 256 and spec["experts_per_token"] == 8
    assert spec["parameters"] == 671e9 and spec["active_parameters"] == pytest.approx(37e9, rel=0.02)
    assert spec["weight_bytes_per_gpu"] == pytest.approx(671e9 / 8)
    assert spec["kv_bytes_per_token_per_gpu"] == 61 * 576
    numbers = plan.numbers
    assert numbers.decode.communication_seconds == pytest.approx(2 * 61 * (8e-6 + 2 * 7 / 8 * 7168 * 2 / 450e9))
    assert numbers.batch.experts_read == pytest.approx(256 * (1 - (1 - 8 / 256) ** 64))
    assert numbers.decode.step_seconds == pytest.approx(
        numbers.decode.bytes_per_gpu / 4.8e12 + numbers.decode.communication_seconds)
    assert any("assumed" in str(note) and "8 × H200 SXM" in str(note) for note in plan.notes)


# -- narration for every deployment ----------------------------------------------------------------


def every_choice(catalog):
    for gpu in catalog.gpus:
        for model in catalog.models:
            for gpus in (1, 2, 4, 8):
                for dtype in catalog.dtypes:
                    yield gpu, model, gpus, dtype


def test_narration_is_grammatical_and_current_for_every_deployment_that_fits(catalog):
    made = refused = 0
    for gpu_id, model_id, gpus, dtype_id in every_choice(catalog):
        try:
            plan = resolve_plan(gpu=gpu_id, model=model_id, gpus=gpus, dtype=dtype_id)
        except FilmError as error:
            refused += 1
            assert "does not fit" in str(error) or "does not divide" in str(error), str(error)
            continue
        made += 1
        check_narration(plan)
    assert made > 300 and refused > 100, (made, refused)


def check_narration(plan) -> None:
    gpu, gpus, numbers, spec = plan.choice.gpu, plan.choice.gpus, plan.numbers, plan.spec
    where = plan.choice.name
    text = " ".join(beat.narration for beat in plan.beats)
    assert not re.search(r"\{\{|\}\}|\{%|%\}|\[\[|\]\]", text), where
    assert not re.search(r"  | ,|,,| \.|\.\.|,\.", text), (where, text)
    names = f"{fmt.number_word(gpus)} {gpu.short_name}s" if gpus > 1 else f"{gpu.article} {gpu.short_name}"
    decode, prefill, batch = (plan.beat(beat).narration for beat in ("decode", "prefill", "batching"))
    # "an H100 needs" / "four H100s need"; "at an H100's" / "at four H100s'"
    needs, possessive = ("needs", "'s") if gpus == 1 else ("need", "'")
    assert f"{names} {needs} {fmt.milliseconds(numbers.decode.step_seconds)}" in decode, where
    assert f"at {names}{possessive} {fmt.teraflops(spec.total_peak_flops)}" in prefill, where
    assert not re.search(rf"\b(one|1|a|an) {re.escape(gpu.short_name)}s\b", text), where
    if gpus > 1:
        assert f"{names[:-1]} " not in text.replace(names, ""), where  # never "four H100 " without its plural
        assert "the GPUs turn out" in batch
    else:
        assert "the chip turns out" in batch
    # every number is this deployment's
    assert f"about {fmt.integer(numbers.decode.tokens_per_second)} a second" in decode, where
    assert f"{fmt.bandwidth(spec.total_bandwidth)}" in decode, where
    assert f"about {fmt.duration(prefill_seconds := numbers.prefill.seconds)}" in prefill, (where, prefill_seconds)
    assert f"over {fmt.round_down(numbers.batch.tokens_per_second)} tokens a second" in batch, where
    if spec.experts:
        assert f"reads {fmt.part_of(spec.active_parameters, spec.parameters)} parameters" in decode, where
        assert " expert" in batch, where
    else:
        assert f"rereads all {fmt.gigabytes(spec.weight_bytes)} of weights" in decode, where
    # "X of that in attention": of the whole wait, the all-reduces included; on one GPU, of its operations.
    long_prompt = numbers.long_prompt
    assert long_prompt.attention_share == pytest.approx(long_prompt.attention_seconds / long_prompt.seconds)
    if gpus == 1:
        assert long_prompt.attention_share == pytest.approx(long_prompt.attention_fraction)
    assert f"{fmt.fraction(long_prompt.attention_share)} of that in attention" in plan.beat("wasted-money").narration
    # Time between GPUs as a share of the step (or of prefill): "most of it", "18 percent of it", "a third of it".
    for narration, share in ((decode, numbers.decode.communication_fraction),
                             (prefill, numbers.prefill.communication_fraction)):
        if share >= 0.5:
            assert "most of it between GPUs" in narration, where
        elif share >= 0.1:
            assert f"{fmt.fraction(share)} of it between GPUs" in narration, where
        else:
            assert "between GPUs" not in narration, where


# -- Hugging Face configs --------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", ["qwen3-8b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"])
def test_importing_a_shipped_config_gives_the_catalog_entry(catalog, model_id):
    imported = model_from_file(CONFIGS / f"{model_id}.json", model_id)
    entry = catalog.model(model_id)
    own = ("id", "name", "spoken_name", "parameters", "source")
    assert {k: v for k, v in imported.__dict__.items() if k not in own} == \
        {k: v for k, v in entry.__dict__.items() if k not in own}
    assert imported.parameters == pytest.approx(entry.parameters, rel=0.001)
    assert imported.parameters == count_parameters(entry).total


def test_an_imported_entry_is_valid_yaml_the_catalog_loads(tmp_path, catalog):
    from render.specs.catalog import load_entries
    from render.specs.types import Model
    text = "models:\n" + "".join(model_entry_yaml(model_from_file(CONFIGS / f"{m}.json", m)) + "\n"
                                 for m in ("qwen3-8b", "deepseek-v3"))
    (tmp_path / "models.yaml").write_text(text)
    loaded = load_entries(tmp_path / "models.yaml", "models", "model", Model)
    assert [m.id for m in loaded] == ["qwen3-8b", "deepseek-v3"]
    assert loaded[1].kv_lora_rank == 512 and loaded[1].dense_layers == 3


def test_a_config_path_is_a_model(tmp_path):
    config = json.loads((CONFIGS / "mixtral-8x7b.json").read_text())
    config["_name_or_path"] = "mistralai/Mixtral-8x7B-v0.1"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    plan = resolve_plan(model=str(path), gpus=2)
    assert re.fullmatch(r"mixtral-8x7b-v0\.1-[0-9a-f]{8}", plan.choice.model.id)  # its own id, from its contents
    assert plan.spec.experts == 8
    assert plan.numbers.decode.tokens_per_second == pytest.approx(resolve_plan(model="mixtral-8x7b", gpus=2)
                                                                  .numbers.decode.tokens_per_second)


def test_an_opt_config_is_counted_as_its_published_size_and_refused_where_its_shape_is_not_read():
    """OPT's older shape (docs/published/opt-13b/config.json, the DistServe comparison's model): a plain MLP of two
    matrices, a bias on every projection, LayerNorms, tied embeddings and 2,050 learned positions. Its count is
    OPT-13B's published 12.85 billion; by hand: 40 layers of 4d² + 4d (attention), 2 d f + f + d (MLP), 4d (two
    LayerNorms), with vocabulary and positions times d, and the final LayerNorm."""
    path = ROOT / "docs" / "published" / "opt-13b" / "config.json"
    model = model_from_file(path)
    d, f, layers, vocab = 5120, 20480, 40, 50272
    by_hand = layers * ((4 * d * d + 4 * d) + (2 * d * f + f + d) + 4 * d) + (vocab + 2048 + 2) * d + 2 * d
    assert model.parameters == count_parameters(model).total == by_hand == 12_853_473_280
    assert (model.id, model.name, model.kv_heads, model.head_dim, model.tied_embeddings) == (
        "opt-13b", "OPT 13B", 40, 128, True)
    assert rl.kv_bytes_per_token(model, resolve_plan().choice.dtype) == 2 * layers * d * 2  # MHA: every head cached
    config = json.loads(path.read_text())
    for change, message in (({"word_embed_proj_dim": 512}, "word_embed_proj_dim (512) differs from hidden_size "
                                                           "(5120); OPT's projected embeddings"),
                            ({"ffn_dim": None}, "an opt config needs ffn_dim; it is missing"),
                            ({"ffn_dim": 3}, "ffn_dim is 3;")):
        with pytest.raises(FilmError, match=re.escape(message)):
            model_from_config({**config, **change}, "config.json", "x")


@pytest.mark.parametrize("change, message", [
    ({"model_type": "gpt2"}, "model_type 'gpt2' is not supported; supported: " + ", ".join(SUPPORTED)),
    ({"num_hidden_layers": None}, "needs num_hidden_layers"),
    ({"num_local_experts": None}, "needs num_local_experts"),
    ({"num_key_value_heads": 5}, "must be a multiple of num_key_value_heads"),
    ({"num_experts_per_tok": 9}, "num_experts_per_tok (9) must be from 1 to the number of experts (8)"),
    ({"hidden_size": "4096"}, "hidden_size is '4096'; it must be a whole number"),
])
def test_bad_configs_are_refused_with_the_field(change, message):
    config = json.loads((CONFIGS / "mixtral-8x7b.json").read_text())
    config.update(change)
    with pytest.raises(FilmError, match=re.escape(message)):
        model_from_config(config, "config.json", "x")


def test_a_config_that_is_not_json_names_the_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{\n  "model_type": "llama",\n  oops\n}')
    with pytest.raises(FilmError, match=r"config.json: line 3, column 3: not valid JSON"):
        model_from_file(path)


# -- bad choices, from the command line ------------------------------------------------------------


def film(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "render.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args, message", [
    (("--model", "llama-3.1-70b", "--gpus", "3"), "GPUS=3 does not divide Llama 3.1 70B's 64 attention heads"),
    (("--gpus", "0"), "GPUS=0: give a whole number of GPUs from 1 to 64"),
    (("--gpus", "-2"), "GPUS=-2: give a whole number of GPUs from 1 to 64"),
    (("--kv-dtype", "int3"), "KV_DTYPE=int3: unknown KV cache format; use one of bf16, fp16, fp8"),
    (("--model", "llama-3.1-70b"), "it fits on 2 (GPUS=2)"),
    (("--model", "deepseek-v3"), "It fits on no count of H100s up to 8."),
    (("--model", "tests/fixtures/hf/nope.json"), "tests/fixtures/hf/nope.json: no such file"),
])
def test_bad_choices_get_one_clear_message(args, message):
    result = film("plan", *args)
    assert result.returncode == 1, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_model_import_adds_a_loadable_entry_once(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text((ROOT / "data" / "models.yaml").read_text())
    config = tmp_path / "Qwen3-8B" / "config.json"
    config.parent.mkdir()
    config.write_text((CONFIGS / "qwen3-8b.json").read_text())
    result = film("model", "import", str(config), "--models", str(models))
    assert result.returncode == 1 and "already has a model 'qwen3-8b'" in result.stderr
    result = film("model", "import", str(config), "--id", "my-qwen", "--name", "My Qwen", "--models", str(models))
    assert result.returncode == 0, result.stderr
    assert "added my-qwen (My Qwen: 8.2 billion parameters)" in result.stdout
    assert "  - id: my-qwen\n    name: My Qwen\n" in models.read_text()
    printed = film("model", "import", str(config), "--print")
    assert printed.returncode == 0 and printed.stdout.startswith("  - id: qwen3-8b\n")
    assert "parameters: 8190735360" in printed.stdout


def test_deployments_render_their_own_folder_names():
    assert resolve_plan(model="llama-3.1-70b", gpus=4).choice.name == "h100-sxm-x4-llama-3.1-70b-bf16"
    assert resolve_plan().choice.name == "h100-sxm-llama-3.1-8b-bf16"
    assert not resolve_plan(gpus=2).choice.is_default


def test_the_comparison_uses_as_many_of_the_other_gpu(catalog):
    plan = resolve_plan(model="llama-3.1-70b", gpus=4)
    theirs = Deployment(catalog.gpu("a100-sxm-80gb"), catalog.model("llama-3.1-70b"), catalog.dtype("bf16"), 4)
    assert plan.numbers.compare.decode_tokens_per_second == pytest.approx(rl.decode_tokens_per_second(theirs))
    assert math.isclose(plan.numbers.compare.decode_speedup,
                        plan.numbers.decode.tokens_per_second / rl.decode_tokens_per_second(theirs))


def test_an_unsupported_config_is_refused_before_anything_renders(tmp_path):
    config = tmp_path / "gpt2" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"model_type": "gpt2", "n_layer": 12}))
    result = film("plan", "--model", str(config))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{config}: model_type 'gpt2' is not supported; supported: llama, mistral, qwen2, qwen3" in result.stderr
    missing = tmp_path / "broken" / "config.json"
    missing.parent.mkdir()
    missing.write_text(json.dumps({"model_type": "qwen3_moe", "num_hidden_layers": 48, "hidden_size": 2048,
                                   "num_attention_heads": 32, "intermediate_size": 6144, "vocab_size": 151936}))
    result = film("plan", "--model", str(missing))
    assert result.returncode == 1
    assert "a qwen3_moe config needs num_experts, num_experts_per_tok, moe_intermediate_size; they are missing" \
        in result.stderr
