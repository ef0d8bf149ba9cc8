"""The data files: the figures the issue and the source documents name, sources, and validation."""

from __future__ import annotations

import pytest

from render.specs.architecture import count_parameters

from render.specs.catalog import load_catalog, load_measured
from render.errors import FilmError

from conftest import ROOT

# (id, dense BF16 TFLOP/s, TB/s, GB as marketed) from the datasheets the data cites.
GPU_FIGURES = [
    ("h100-sxm", 989, 3.35, 80),
    ("a100-sxm-80gb", 312, 2.039, 80),
    ("rtx-4090", 165.2, 1.008, 24),
    ("h200-sxm", 989, 4.8, 141),
    ("mi300x", 1307.4, 5.3, 192),
    ("b200", 2250, 7.7, 180),
    ("l40s", 362.05, 0.864, 48),
]


@pytest.mark.parametrize("gpu_id, tflops, tbps, gb", GPU_FIGURES)
def test_gpu_figures_are_the_dense_datasheet_ones(catalog, gpu_id, tflops, tbps, gb):
    gpu = catalog.gpu(gpu_id)
    assert gpu.bf16_flops == pytest.approx(tflops * 1e12)
    assert gpu.bandwidth == pytest.approx(tbps * 1e12)
    assert gpu.memory_gib == gb
    assert gpu.sm_count > 0
    assert gpu.article in ("a", "an") and gpu.spoken_name and gpu.short_name
    # Dense FP8 is twice dense BF16 on every chip that has it; a sparse figure would be 4x.
    if gpu.fp8_flops is not None:
        assert gpu.fp8_flops == pytest.approx(2 * gpu.bf16_flops, rel=0.02)  # L40S: 733 vs 2 x 362.05


def test_articles_follow_the_spoken_name(catalog):
    assert catalog.gpu("h100-sxm").article == "an"
    assert catalog.gpu("rtx-4090").article == "an"
    assert catalog.gpu("b200").article == "a"
    assert catalog.gpu("a100-sxm-80gb").fp8_flops is None  # Ampere has no FP8 tensor cores


def test_parameter_count_from_the_architecture_matches_the_published_one(catalog):
    """Every model in data/ (the catalog refuses one that is off by more, so count them here too)."""
    assert len(catalog.models) >= 10
    for model in catalog.models.values():
        assert count_parameters(model).total == pytest.approx(model.parameters, rel=0.001), model.id


def test_llama_3_1_8b_config(catalog):
    model = catalog.model("llama-3.1-8b")
    assert (model.layers, model.hidden_size, model.attention_heads, model.kv_heads, model.head_dim) == (32, 4096, 32,
                                                                                                        8, 128)
    assert model.parameters == pytest.approx(8.03e9, rel=1e-3)
    assert not model.tied_embeddings


def test_a_wrong_config_is_caught_by_the_parameter_check(catalog):
    from dataclasses import replace
    wrong = replace(catalog.model("llama-3.1-8b"), ffn_size=11008)  # Llama 2 7B's FFN
    assert count_parameters(wrong).total != pytest.approx(wrong.parameters, rel=0.01)


def test_data_types(catalog):
    expected = {"bf16": (2, "bf16", False), "fp16": (2, "bf16", False), "fp8": (1, "fp8", False),
                "int8": (1, "bf16", True), "int4": (0.5, "bf16", True)}
    for dtype_id, (size, arithmetic, weight_only) in expected.items():
        dtype = catalog.dtype(dtype_id)
        assert (dtype.bytes_per_weight, dtype.arithmetic, dtype.weight_only) == (size, arithmetic, weight_only)
        assert dtype.kv_dtype and dtype.kv_bytes > 0


def test_every_entry_cites_a_source(catalog):
    entries = [*catalog.gpus.values(), *catalog.models.values(), *catalog.dtypes.values()]
    for entry in entries:
        assert len(entry.source) > 20, entry.id
    for entry in [*catalog.gpus.values(), *catalog.models.values()]:
        assert "https://" in entry.source, entry.id


def test_measured_dataset_is_the_source_pages_figures(catalog):
    data = catalog.measured("openrouter-coreweave-llama-3.1-8b-bf16")
    assert (data.provider, data.precision, data.model, data.compared_gpu) == ("CoreWeave", "bf16", "llama-3.1-8b",
                                                                              "h100-sxm")
    assert data.compared_gpu_is_assumption is True
    assert "OpenRouter" in data.route
    figures = [(p.prompt_tokens, p.ttft_seconds, p.decode_tokens_per_second) for p in data.prompts]
    assert figures == [(34, 0.3, 156), (2081, 0.3, None), (16361, 0.74, 136)]
    assert [p.ttft_approximate for p in data.prompts] == [True, True, False]
    assert data.other_providers[0].precision == "fp8"
    assert data.other_providers[0].decode_tokens_per_second == 48
    assert data.other_providers[0].provider is None  # the page does not name it
    assert data.measured_on is None                   # nor the date of the measurement


def test_unknown_ids_list_close_matches_and_the_known_ones(catalog):
    with pytest.raises(FilmError) as error:
        catalog.gpu("h100")
    assert "unknown GPU 'h100'; did you mean h100-sxm" in str(error.value)
    assert "Known GPUs (data/gpus.yaml): a100-sxm-80gb, b200, h100-sxm" in str(error.value)
    with pytest.raises(FilmError, match=r"unknown model 'llama-8b'.*did you mean .*llama-3.1-8b"):
        catalog.model("llama-8b")
    with pytest.raises(FilmError, match=r"unknown data type 'bf17'; did you mean bf16"):
        catalog.dtype("bf17")
    with pytest.raises(FilmError, match=r"(?s)unknown measured dataset 'nope'.*openrouter-coreweave"):
        catalog.measured("nope")


def test_a_number_typo_names_file_line_and_key(data_copy):
    data = data_copy("gpus.yaml", "bandwidth: 3.35e12", "bandwidth: 3.35 TB/s")
    with pytest.raises(FilmError) as error:
        load_catalog(data)
    assert "gpus.yaml:" in str(error.value)
    assert "GPU 'h100-sxm': 'bandwidth' should be a whole number or a number, not '3.35 TB/s'" in str(error.value)


def test_a_missing_field_in_a_model_is_named(data_copy):
    data = data_copy("models.yaml", "    kv_heads: 8\n", "")
    with pytest.raises(FilmError, match=r"models.yaml:\d+: model 'llama-3.1-8b': missing 'kv_heads'"):
        load_catalog(data)


def test_a_zero_or_duplicate_entry_is_refused(data_copy, tmp_path):
    with pytest.raises(FilmError, match=r"'memory_gib' is 0; it must be between 1 and 100,000 GiB"):
        load_catalog(data_copy("gpus.yaml", "memory_gib: 80", "memory_gib: 0"))
    import shutil
    shutil.rmtree(tmp_path / "data")
    with pytest.raises(FilmError, match=r"GPU 'h100-sxm' is defined twice"):
        load_catalog(data_copy("gpus.yaml", "id: h200-sxm", "id: h100-sxm"))


def test_measured_dataset_validation(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        "id: mine\nroute: direct\nprovider: me\nprecision: bf16\nmodel: llama-3.1-8b\n"
        "compared_gpu: h100-sxm\ncompared_gpu_is_assumption: false\nsource: my bench\n"
        "prompts:\n  - {prompt_tokens: 100, ttft_seconds: 0.1, decode_tokens_per_second: 150}\n"
    )
    with pytest.raises(FilmError, match=r"mine.yaml:\d+: measured dataset 'mine': needs at least two prompt lengths"):
        load_measured(path)


@pytest.mark.parametrize("written, shown", [
    (".nan", "nan"), (".inf", "inf"), ("1e-300", "1e-300"), ("1e308", "1e+308"), ("-3.35e12", "-3350000000000.0"),
])
def test_a_figure_outside_physical_bounds_names_file_line_and_range(data_copy, written, shown):
    data = data_copy("gpus.yaml", "bandwidth: 3.35e12", f"bandwidth: {written}")
    with pytest.raises(FilmError) as error:
        load_catalog(data)
    message = str(error.value)
    assert "gpus.yaml:" in message and "GPU 'h100-sxm': 'bandwidth' is" in message
    assert "it must be between 1e+10 and 1e+14 bytes/s (10 GB/s to 100 TB/s)" in message


def test_data_files_that_are_not_yaml_text_are_refused(data_copy, tmp_path):
    data = data_copy("models.yaml")
    (data / "models.yaml").write_bytes((data / "models.yaml").read_bytes().replace(b"Llama 3.1 8B", b"Llama \xff 8B",
                                                                                   1))
    with pytest.raises(FilmError, match=r"models.yaml:\d+: not UTF-8 text \(byte 0xff\); save the file as UTF-8"):
        load_catalog(data)
    (data / "models.yaml").write_text("models:\n  ? [a, b]\n  : c\n")
    with pytest.raises(FilmError, match=r"models.yaml:2: a key must be a plain name, not a YamlList"):
        load_catalog(data)
    (data / "models.yaml").write_text("models: []\n# " + "x" * (3 * 2**20) + "\n")
    with pytest.raises(FilmError, match=r"models.yaml: is over 2 MiB, far larger than the catalog.s models "
                                        r"\(data/models.yaml\) ever is"):
        load_catalog(data)


@pytest.mark.parametrize("field, value, message", [
    ("ttft_seconds", "-0.74", "'ttft_seconds' is -0.74; it must be between 0.0001 and 600 seconds"),
    ("ttft_seconds", "0", "'ttft_seconds' is 0; it must be between 0.0001 and 600 seconds"),
    ("decode_tokens_per_second", "1e9",
     "'decode_tokens_per_second' is 1000000000.0; it must be between 0.01 and 100,000"),
    ("prompt_tokens", "-34", "'prompt_tokens' is -34; it must be between 1 and 10,000,000 tokens"),
])
def test_absurd_measurements_are_refused(tmp_path, field, value, message):
    path = tmp_path / "mine.yaml"
    prompt = {"prompt_tokens": "34", "ttft_seconds": "0.3", "decode_tokens_per_second": "156"}
    prompt[field] = value
    first = ", ".join(f"{key}: {item}" for key, item in prompt.items())
    path.write_text(
        "id: mine\nroute: direct\nprovider: me\nprecision: bf16\nmodel: llama-3.1-8b\n"
        "compared_gpu: h100-sxm\ncompared_gpu_is_assumption: false\nsource: my bench\n"
        f"prompts:\n  - {{{first}}}\n  - {{prompt_tokens: 20000, ttft_seconds: 0.7, decode_tokens_per_second: 136}}\n"
    )
    with pytest.raises(FilmError) as error:
        load_measured(path)
    assert "mine.yaml:" in str(error.value) and message in str(error.value)


def test_each_gpu_names_its_cores_in_its_vendors_term(catalog, data_copy):
    # AMD calls them compute units; NVIDIA streaming multiprocessors. The chip's label reads "304 CUs".
    assert catalog.gpu("mi300x").compute_unit == "CU"
    assert {gpu.compute_unit for gpu_id, gpu in catalog.gpus.items() if gpu_id != "mi300x"} == {"SM"}
    data = data_copy("gpus.yaml", "    compute_unit: CU\n", "    compute_unit: EU\n")
    with pytest.raises(FilmError, match=r"gpus.yaml:\d+: GPU 'mi300x': 'compute_unit' must be one of SM, CU"):
        load_catalog(data)


def test_each_schema_is_its_dataclass_and_every_figure_has_its_range_beside_it():
    """A data file's keys, their types and which are required are read off the dataclass's fields, and every
    number a person types has a range there: a new field cannot enter without one."""
    import dataclasses
    import typing

    from render.plan.types import NarrationSettings, Parameters
    from render.specs.catalog import ConcurrencyLevel, MeasuredPrompt, OtherProvider
    from render.specs.fields import bounds_of, yaml_keys
    from render.specs.types import DataType, Gpu, Model

    for kind in (Gpu, Model, DataType, Parameters, NarrationSettings):
        hints = typing.get_type_hints(kind)
        numeric = [field.name for field in dataclasses.fields(kind) if hints[field.name] in (int, float, float | None)]
        assert numeric and set(numeric) == set(bounds_of(kind)), kind.__name__
    for kind, medians in ((MeasuredPrompt, {"prompt_tokens", "ttft_seconds", "decode_tokens_per_second"}),
                          (ConcurrencyLevel, {"streams", "aggregate_tokens_per_second", "decode_tokens_per_second",
                                              "ttft_seconds"}),
                          (OtherProvider, {"decode_tokens_per_second"})):
        assert set(bounds_of(kind)) == medians, kind.__name__
    must, may = yaml_keys(Gpu)
    assert "memory_gib" in must and may == {"compute_unit": (str,)} and must["fp8_flops"] == (int, float, type(None))


def test_a_dataset_written_through_its_fields_reads_back_the_same(tmp_path):
    """film measure writes a dataset with the fields the film reads it with: what it writes loads as it was."""
    import dataclasses

    import yaml

    from render.specs.catalog import ConcurrencyLevel, MeasuredPrompt
    from render.specs.fields import to_yaml

    seed = load_measured(ROOT / "data" / "measured" / "openrouter-coreweave-llama-3.1-8b-bf16.yaml")
    swept = dataclasses.replace(seed.prompts[0], ttft_spread_seconds=(0.29, 0.31), runs=3, concurrency=(
        ConcurrencyLevel(streams=1, aggregate_tokens_per_second=150.0, decode_tokens_per_second=156.0, rounds=3),
        ConcurrencyLevel(streams=4, aggregate_tokens_per_second=520.0, decode_tokens_per_second=140.0, rounds=3)))
    made = dataclasses.replace(seed, id="round-trip", prompts=(swept, *seed.prompts[1:]), prompt_cache="cold",
                               calibration={"overhead_seconds": 0.28})
    written = to_yaml(made)
    assert "path" not in written and "ttft_approximate" in written["prompts"][0]
    assert "concurrency" not in written["prompts"][1] and written["prompts"][1]["decode_tokens_per_second"] is None
    (tmp_path / "round-trip.yaml").write_text(yaml.safe_dump(written, sort_keys=False))
    loaded = load_measured(tmp_path / "round-trip.yaml")
    assert dataclasses.replace(loaded, path="") == dataclasses.replace(made, path="")
    assert isinstance(loaded.prompts[0], MeasuredPrompt) and loaded.prompts[0].concurrency[1].streams == 4
