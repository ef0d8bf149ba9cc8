"""What each number of the plan means, how it is computed and in what unit: written once, here.

A path is a plan attribute path, as the narration and the scenes read them ("numbers.prefill.ops"), or, for a
number only the film's page's controls reach, "page.<what>"; an input is a plan path (shown with its value) and
a source is where a spec comes from in data/ (the GPU's datasheet, the model's config, the storyboard, the
measured dataset). A test holds the table to the plan: every number a plan dataclass computes has its row, and
every row names a number the plan holds. A figure of the data itself (a GPU's bandwidth, a model's layers) says
its unit beside its field (render/specs/types.py), which `unit_of` reads. The review page, the film's page, the
studio, the plan's table in docs/plan.md and `film plan --json`'s documentation read this.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

from render.plan.types import Plan
from render.specs.fields import hints

GPU, COMPARE, MODEL, DTYPE, STORYBOARD, MEASURED, INTERCONNECT, EFFICIENCY = (
    "gpu",
    "compare_gpu",
    "model",
    "dtype",
    "storyboard",
    "measured",
    "interconnect",
    "efficiency",
)


@dataclass(frozen=True)
class Explanation:
    meaning: str
    formula: str
    inputs: tuple[str, ...]
    sources: tuple[str, ...]
    unit: str = ""


PEAK = ("choice.gpu.bf16_flops", "choice.gpu.fp8_flops")
ATTENTION_SHARE = "2·L·(heads·head_dim)·N² ÷ (2·P_active·N + 2·L·(heads·head_dim)·N²)"  # of a prompt's operations
PREFILL_INPUTS = (
    "spec.active_parameters",
    "numbers.prefill.tokens",
    "choice.model.layers",
    "choice.model.attention_heads",
    "choice.model.head_dim",
)
DEPLOYMENT = (
    "spec.gpus",
    "spec.interconnect_bandwidth",
    "spec.allreduce_latency_seconds",
    "choice.model.layers",
    "choice.model.hidden_size",
)

EXPLANATIONS: dict[str, Explanation] = {
    # -- the deployment's spec sheet
    "spec.peak_flops": Explanation(
        "one GPU's dense peak at the arithmetic format the choice runs in",
        "datasheet (dense: half the 'with sparsity' figure)",
        PEAK,
        (GPU, DTYPE),
        "FLOP/s",
    ),
    "spec.memory_bandwidth": Explanation(
        "one GPU's memory bandwidth", "datasheet", ("choice.gpu.bandwidth",), (GPU,), "bytes/s"
    ),
    "spec.total_peak_flops": Explanation(
        "all the GPUs' peak together", "T × peak", ("spec.gpus", "spec.peak_flops"), (GPU,), "FLOP/s"
    ),
    "spec.total_bandwidth": Explanation(
        "all the GPUs' bandwidth together", "T × bandwidth", ("spec.gpus", "spec.memory_bandwidth"), (GPU,), "bytes/s"
    ),
    "spec.ridge_ops_per_byte": Explanation(
        "where the memory slope meets the compute roof",
        "peak ÷ bandwidth",
        ("spec.peak_flops", "spec.memory_bandwidth"),
        (GPU, DTYPE),
        "operations/byte",
    ),
    "spec.interconnect_bandwidth": Explanation(
        "each GPU's link to the others, one direction", "datasheet", (), (INTERCONNECT,), "bytes/s"
    ),
    "spec.allreduce_latency_seconds": Explanation(
        "the fixed cost of one all-reduce", "measured or assumed (data/gpus.yaml)", (), (INTERCONNECT,), "seconds"
    ),
    "spec.sm_count": Explanation(
        "streaming multiprocessors drawn on the chip", "datasheet", ("choice.gpu.sm_count",), (GPU,), "cores"
    ),
    "spec.gpus": Explanation(
        "GPUs the model is split over (tensor parallelism)", "GPUS= (1 unless given)", (), (STORYBOARD,), "GPUs"
    ),
    "choice.hardware.count": Explanation(
        "GPUs the narration names ('an H100', 'four H100s')", "GPUS= (1 unless given)", (), (STORYBOARD,), "GPUs"
    ),
    "choice.gpus": Explanation(
        "GPUs the labels name ('4× H100')", "GPUS= (1 unless given)", (), (STORYBOARD,), "GPUs"
    ),
    "spec.parameters": Explanation(
        "the model's parameters",
        "published total (checked against the config's count)",
        ("choice.model.parameters",),
        (MODEL,),
        "parameters",
    ),
    "spec.active_parameters": Explanation(
        "parameters one token uses",
        "all parameters − the routed experts a token skips (all of them for a dense model)",
        ("spec.parameters", "spec.experts", "spec.experts_per_token"),
        (MODEL,),
        "parameters",
    ),
    "spec.experts": Explanation("routed experts per layer", "config.json", ("choice.model.experts",), (MODEL,),
                                "experts"),
    "spec.weight_bytes": Explanation(
        "the weights in memory",
        "parameters × bytes per weight",
        ("spec.parameters", "choice.dtype.bytes_per_weight"),
        (MODEL, DTYPE),
        "bytes",
    ),
    "spec.kv_bytes_per_token": Explanation(
        "the KV cache one token adds",
        "2 × layers × KV heads × head_dim × KV bytes (latent attention: layers × "
        "(kv_lora_rank + qk_rope_head_dim) × KV bytes)",
        ("choice.model.layers", "choice.model.kv_heads", "choice.model.head_dim", "choice.dtype.kv_bytes"),
        (MODEL, DTYPE),
        "bytes",
    ),
    # -- prefill
    "numbers.prefill.tokens": Explanation(
        "the film's prompt", "storyboard parameter", (), (STORYBOARD,), "tokens"
    ),
    "numbers.prefill.ops": Explanation(
        "operations to prefill the prompt",
        "2·P_active·N + 2·L·(heads·head_dim)·N²",
        PREFILL_INPUTS,
        (MODEL, STORYBOARD),
        "operations",
    ),
    "numbers.prefill.seconds": Explanation(
        "time to first token, ideal",
        "max(operations ÷ (T·peak), bytes per GPU ÷ bandwidth) + all-reduces",
        (
            "numbers.prefill.ops",
            "spec.total_peak_flops",
            "numbers.prefill.bytes",
            "spec.memory_bandwidth",
            "numbers.prefill.communication_seconds",
        ),
        (GPU, MODEL, DTYPE, STORYBOARD),
        "seconds",
    ),
    "numbers.prefill.ops_per_byte": Explanation(
        "prefill's arithmetic intensity on each GPU",
        "operations per GPU ÷ bytes per GPU",
        ("numbers.prefill.ops", "spec.gpus", "numbers.prefill.bytes"),
        (MODEL, DTYPE, STORYBOARD),
        "operations/byte",
    ),
    "numbers.prefill.bytes": Explanation(
        "bytes each GPU moves in prefill",
        "W_read(N) ÷ T + N·k_T",
        ("spec.weight_bytes", "spec.gpus", "numbers.prefill.tokens", "spec.kv_bytes_per_token_per_gpu"),
        (MODEL, DTYPE),
        "bytes",
    ),
    "numbers.prefill.bytes_all_gpus": Explanation(
        "bytes every GPU together moves in prefill",
        "T × bytes per GPU",
        ("spec.gpus", "numbers.prefill.bytes"),
        (MODEL, DTYPE),
        "bytes",
    ),
    "numbers.prefill.communication_seconds": Explanation(
        "prefill's all-reduces",
        "2·L·(α + 2(T − 1)/T · N·d·2 bytes ÷ β); 0 on one GPU",
        DEPLOYMENT + ("numbers.prefill.tokens",),
        (INTERCONNECT, MODEL),
        "seconds",
    ),
    "numbers.prefill.communication_fraction": Explanation(
        "share of prefill spent in all-reduces",
        "all-reduces ÷ prefill time",
        ("numbers.prefill.communication_seconds", "numbers.prefill.seconds"),
        (INTERCONNECT,), "share",
    ),
    # -- decode
    "numbers.decode.ops_per_token": Explanation(
        "operations for one token", "2·P_active", ("spec.active_parameters",), (MODEL,), "operations"
    ),
    "numbers.decode.bytes_per_token": Explanation(
        "bytes read for one token, all GPUs",
        "W_read(1) (+ replicated KV heads)",
        ("spec.weight_bytes", "spec.experts_per_token", "spec.experts"),
        (MODEL, DTYPE),
        "bytes",
    ),
    "numbers.decode.step_seconds": Explanation(
        "time per output token at batch 1",
        "max(operations ÷ (T·peak), bytes per GPU ÷ bandwidth) + all-reduces",
        ("numbers.decode.bytes_per_gpu", "spec.memory_bandwidth", "numbers.decode.communication_seconds"),
        (GPU, MODEL, DTYPE),
        "seconds",
    ),
    "numbers.decode.tokens_per_second": Explanation(
        "one user's decode rate",
        "1 ÷ time per token",
        ("numbers.decode.step_seconds",),
        (GPU, MODEL, DTYPE),
        "tokens/s",
    ),
    "numbers.decode.ops_per_byte": Explanation(
        "decode's arithmetic intensity on each GPU",
        "operations per GPU ÷ bytes per GPU",
        ("numbers.decode.ops_per_token", "spec.gpus", "numbers.decode.bytes_per_gpu"),
        (MODEL, DTYPE),
        "operations/byte",
    ),
    "numbers.decode.bytes_per_gpu": Explanation(
        "bytes each GPU reads for one token",
        "W_read(1) ÷ T",
        ("spec.weight_bytes", "spec.gpus"),
        (MODEL, DTYPE),
        "bytes",
    ),
    "numbers.decode.communication_seconds": Explanation(
        "one token's all-reduces",
        "2·L·(α + 2(T − 1)/T · d·2 bytes ÷ β); 0 on one GPU",
        DEPLOYMENT,
        (INTERCONNECT, MODEL),
        "seconds",
    ),
    "numbers.decode.communication_fraction": Explanation(
        "share of a token's time spent in all-reduces",
        "all-reduces ÷ time per token",
        ("numbers.decode.communication_seconds", "numbers.decode.step_seconds"),
        (INTERCONNECT,), "share",
    ),
    # -- batching
    "numbers.batch.size": Explanation("users decoding together", "storyboard parameter", (), (STORYBOARD,), "users"),
    "numbers.batch.step_seconds": Explanation(
        "time per step for the whole batch",
        "max(2·P_active·B ÷ (T·peak), (W_read(B) ÷ T + B·C·k_T) ÷ bandwidth) + all-reduces",
        ("numbers.batch.size", "numbers.batch.context_tokens", "numbers.batch.bytes_per_gpu", "spec.memory_bandwidth"),
        (GPU, MODEL, DTYPE, STORYBOARD),
        "seconds",
    ),
    "numbers.batch.tokens_per_second": Explanation(
        "the batch's throughput",
        "B ÷ step time",
        ("numbers.batch.size", "numbers.batch.step_seconds"),
        (GPU, MODEL, DTYPE, STORYBOARD),
        "tokens/s",
    ),
    "numbers.batch.kv_bytes": Explanation(
        "the batch's KV cache",
        "B·C·k",
        ("numbers.batch.size", "numbers.batch.context_tokens", "spec.kv_bytes_per_token"),
        (MODEL, DTYPE, STORYBOARD),
        "bytes",
    ),
    "numbers.batch.experts_read": Explanation(
        "experts per layer the batch's tokens wake (expected)",
        "E·(1 − (1 − K/E)^B)",
        ("spec.experts", "spec.experts_per_token", "numbers.batch.size"),
        (MODEL, STORYBOARD),
        "experts",
    ),
    "numbers.batch.ridge_value_size": Explanation(
        "as many users as the ridge's value", "round(ridge)", ("spec.ridge_ops_per_byte",), (GPU, DTYPE), "users"
    ),
    "numbers.batch.ridge_value_ops_per_byte": Explanation(
        "the intensity that many users reach",
        "2·P_active·B ÷ T ÷ (W_read(B) ÷ T + B·C·k_T)",
        ("numbers.batch.ridge_value_size", "numbers.batch.context_tokens"),
        (MODEL, DTYPE, STORYBOARD),
        "operations/byte",
    ),
    # -- the long prompt and the comparison
    "numbers.long_prompt.tokens": Explanation(
        "the film's long prompt", "storyboard parameter", (), (STORYBOARD,), "tokens"
    ),
    "numbers.long_prompt.seconds": Explanation(
        "prefill time of the long prompt",
        "max(operations ÷ (T·peak), bytes per GPU ÷ bandwidth) + all-reduces",
        ("numbers.long_prompt.tokens", "numbers.long_prompt.ops", "spec.total_peak_flops"),
        (GPU, MODEL, DTYPE, STORYBOARD),
        "seconds",
    ),
    "numbers.long_prompt.attention_fraction": Explanation(
        "attention's share of the long prompt's operations",
        ATTENTION_SHARE,
        ("numbers.long_prompt.tokens", "choice.model.layers", "spec.active_parameters"),
        (MODEL, STORYBOARD), "share",
    ),
    "numbers.long_prompt.attention_share": Explanation(
        "attention's share of the long prompt's whole wait (its all-reduces included)",
        "attention time ÷ prefill time",
        ("numbers.long_prompt.attention_seconds", "numbers.long_prompt.seconds"),
        (GPU, MODEL, DTYPE, STORYBOARD), "share",
    ),
    "numbers.compare.framing.flops_ratio": Explanation(
        "peak arithmetic, one GPU against the other",
        "peak ÷ other peak",
        ("spec.peak_flops", "numbers.compare.peak_flops"),
        (GPU, COMPARE), "times",
    ),
    "numbers.compare.framing.bandwidth_ratio": Explanation(
        "memory bandwidth, one GPU against the other",
        "bandwidth ÷ other bandwidth",
        ("spec.memory_bandwidth", "numbers.compare.memory_bandwidth"),
        (GPU, COMPARE), "times",
    ),
    "numbers.compare.framing.decode_speedup": Explanation(
        "one user's decode, as many of one GPU against the other",
        "tokens/s ÷ other tokens/s",
        ("numbers.decode.tokens_per_second", "numbers.compare.decode_tokens_per_second"),
        (GPU, COMPARE, MODEL, DTYPE), "times",
    ),
    "numbers.prefill.compute_seconds": Explanation(
        "prefill's arithmetic alone",
        "operations ÷ (T·peak)",
        ("numbers.prefill.ops", "spec.total_peak_flops"),
        (GPU, MODEL, DTYPE),
        "seconds",
    ),
    "numbers.prefill.memory_seconds": Explanation(
        "prefill's memory traffic alone",
        "bytes per GPU ÷ bandwidth",
        ("numbers.prefill.bytes", "spec.memory_bandwidth"),
        (GPU, MODEL, DTYPE),
        "seconds",
    ),
    "numbers.prefill.compute_utilisation": Explanation(
        "how busy the arithmetic is in prefill",
        "arithmetic time ÷ prefill time",
        ("numbers.prefill.compute_seconds", "numbers.prefill.seconds"),
        (GPU, MODEL, DTYPE), "share",
    ),
    "numbers.prefill.experts_read": Explanation(
        "experts per layer the prompt's tokens wake (expected)",
        "E·(1 − (1 − K/E)^N)",
        ("spec.experts", "spec.experts_per_token", "numbers.prefill.tokens"),
        (MODEL, STORYBOARD),
        "experts",
    ),
    "numbers.decode.compute_utilisation": Explanation(
        "how busy the arithmetic is in decode",
        "arithmetic time ÷ time per token",
        ("numbers.decode.compute_seconds", "numbers.decode.step_seconds"),
        (GPU, MODEL, DTYPE), "share",
    ),
    "numbers.decode.experts_read": Explanation(
        "experts per layer one token reads", "K (experts per token)", ("spec.experts_per_token",), (MODEL,), "experts"
    ),
    "numbers.batch.context_tokens": Explanation(
        "cached tokens each user rereads per step", "storyboard parameter", (), (STORYBOARD,), "tokens"
    ),
    "numbers.batch.kv_ratio": Explanation(
        "the batch's KV cache against the weights",
        "B·C·k ÷ W",
        ("numbers.batch.kv_bytes", "spec.weight_bytes"),
        (MODEL, DTYPE, STORYBOARD), "share",
    ),
    "numbers.batch.ops_per_byte": Explanation(
        "the batch's intensity on each GPU",
        "2·P_active·B ÷ T ÷ bytes per GPU",
        ("numbers.batch.size", "spec.active_parameters", "numbers.batch.bytes_per_gpu"),
        (MODEL, DTYPE, STORYBOARD),
        "operations/byte",
    ),
    "numbers.batch.weight_bytes_read": Explanation(
        "the weights one batched step reads",
        "W_read(B)",
        ("spec.weight_bytes", "numbers.batch.experts_read"),
        (MODEL, DTYPE),
        "bytes",
    ),
    "numbers.long_prompt.linear_seconds": Explanation(
        "the long prompt's linear layers",
        "arithmetic time × (1 − attention share)",
        ("numbers.long_prompt.seconds", "numbers.long_prompt.attention_fraction"),
        (GPU, MODEL, DTYPE, STORYBOARD),
        "seconds",
    ),
    "numbers.long_prompt.attention_seconds": Explanation(
        "the long prompt's attention",
        "arithmetic time × attention share",
        ("numbers.long_prompt.seconds", "numbers.long_prompt.attention_fraction"),
        (GPU, MODEL, DTYPE, STORYBOARD),
        "seconds",
    ),
    "numbers.long_prompt.communication_seconds": Explanation(
        "the long prompt's all-reduces",
        "2·L·(α + 2(T − 1)/T · N·d·2 bytes ÷ β)",
        DEPLOYMENT + ("numbers.long_prompt.tokens",),
        (INTERCONNECT, MODEL, STORYBOARD),
        "seconds",
    ),
    "numbers.compare.peak_flops": Explanation(
        "the other GPU's dense peak",
        "datasheet",
        ("choice.compare_gpu.bf16_flops", "choice.compare_gpu.fp8_flops"),
        (COMPARE, DTYPE),
        "FLOP/s",
    ),
    "numbers.compare.memory_bandwidth": Explanation(
        "the other GPU's memory bandwidth", "datasheet", ("choice.compare_gpu.bandwidth",), (COMPARE,), "bytes/s"
    ),
    "numbers.compare.decode_tokens_per_second": Explanation(
        "one user's decode on as many of the other GPU",
        "1 ÷ its time per token",
        ("numbers.compare.memory_bandwidth",),
        (COMPARE, MODEL, DTYPE),
        "tokens/s",
    ),
    "numbers.compare.flops_ratio": Explanation(
        "peak arithmetic, the film's GPU against the other",
        "peak ÷ other peak",
        ("spec.peak_flops", "numbers.compare.peak_flops"),
        (GPU, COMPARE), "times",
    ),
    "numbers.compare.bandwidth_ratio": Explanation(
        "memory bandwidth, the film's GPU against the other",
        "bandwidth ÷ other bandwidth",
        ("spec.memory_bandwidth", "numbers.compare.memory_bandwidth"),
        (GPU, COMPARE), "times",
    ),
    "numbers.compare.decode_speedup": Explanation(
        "one user's decode, the film's GPUs against as many of the other",
        "tokens/s ÷ other tokens/s",
        ("numbers.decode.tokens_per_second", "numbers.compare.decode_tokens_per_second"),
        (GPU, COMPARE, MODEL, DTYPE), "times",
    ),
    **{
        f"numbers.quantised.{field}": Explanation(
            f"batch-1 decode with the weights in the next smaller format (INT8 for BF16, INT4 for FP8 or INT8)"
            f"{what}", formula, inputs, (GPU, MODEL, DTYPE), unit
        )
        for field, what, formula, inputs, unit in (
            (
                "tokens_per_second",
                "",
                "1 ÷ (weights in that format ÷ bandwidth)",
                ("numbers.quantised.weight_bytes", "spec.memory_bandwidth"),
                "tokens/s",
            ),
            (
                "speedup",
                ", against the film's data type",
                "its tokens/s ÷ the film's",
                ("numbers.quantised.tokens_per_second", "numbers.decode.tokens_per_second"),
                "times",
            ),
            ("weight_bytes", "", "parameters × its bytes per weight", ("spec.parameters",), "bytes"),
        )
    },
    # -- the measured beats
    **{
        f"measured.{role}.{field}": Explanation(
            f"the {role} prompt's measured {what}", "measured on the endpoint", (), (MEASURED,), unit
        )
        for role in ("short", "medium", "long")
        for field, what, unit in (
            ("prompt_tokens", "length", "tokens"),
            ("ttft_seconds", "time to first token", "seconds"),
            ("decode_tokens_per_second", "decode rate", "tokens/s"),
        )
    },
    "measured.long_kv_bytes": Explanation(
        "the long prompt's KV cache",
        "prompt tokens × k",
        ("measured.long.prompt_tokens", "measured.kv_bytes_per_token"),
        (MODEL, MEASURED),
        "bytes",
    ),
    "measured.long_kv_ratio": Explanation(
        "that cache against the weights",
        "KV bytes ÷ weight bytes",
        ("measured.long_kv_bytes", "measured.weight_bytes"),
        (MODEL, MEASURED), "share",
    ),
    "measured.slowdown": Explanation(
        "how much slower decode ran with the long prompt",
        "1 − long rate ÷ short rate",
        ("measured.long.decode_tokens_per_second", "measured.short.decode_tokens_per_second"),
        (MEASURED,), "share",
    ),
    **{
        f"measured.{role}.ideal_prefill_seconds": Explanation(
            f"the {role} prompt's ideal prefill on the compared GPU",
            "max(operations ÷ peak, bytes ÷ bandwidth)",
            (f"measured.{role}.prompt_tokens",),
            (MEASURED, MODEL),
            "seconds",
        )
        for role in ("short", "medium", "long")
    },
    "measured.weight_bytes": Explanation(
        "the measured model's weights", "parameters × bytes per weight", (), (MEASURED, MODEL), "bytes"
    ),
    "measured.ceiling_tokens_per_second": Explanation(
        "the roofline's batch-1 decode ceiling on the compared GPU",
        "bandwidth ÷ weight bytes",
        ("measured.weight_bytes",),
        (MEASURED, MODEL),
        "tokens/s",
    ),
    "measured.ceiling_fraction": Explanation(
        "the measured short-prompt decode rate against that ceiling",
        "measured rate ÷ ceiling",
        ("measured.short.decode_tokens_per_second", "measured.ceiling_tokens_per_second"),
        (MEASURED,), "share",
    ),
    "measured.network_fraction": Explanation(
        "the share of a short wait that is not prefill",
        "1 − ideal prefill ÷ TTFT",
        ("measured.short.ttft_seconds",),
        (MEASURED, MODEL), "share",
    ),
    # -- the measured dataset's fit (render/specs/calibration.py)
    **{
        f"measured.fit.{field}.{part}": Explanation(
            f"{what}{', its one-sigma uncertainty' if part == 'uncertainty' else ''}, fitted from the measured timings",
            formula, (), (MEASURED,) if field.endswith("overhead_seconds") else (MEASURED, GPU), unit)
        for field, what, formula, unit in (
            ("overhead_seconds", "the wait outside prefill (network, queueing, preparing the prompt)",
             "TTFT(N) = overhead + (2·P·N + 2·L·d·N²) ÷ (share × peak), bounded least squares", "seconds"),
            ("compute_efficiency", "the share of peak arithmetic prefill reaches",
             "TTFT(N) = overhead + (2·P·N + 2·L·d·N²) ÷ (share × peak), bounded least squares", "share"),
            ("memory_efficiency", "the share of bandwidth decode reaches",
             "step(C) = (W_read + C·k) ÷ (share × bandwidth), bounded least squares", "share"),
            ("kv_slope_seconds_per_token", "what each cached token adds to a decode step",
             "the slope of step time against cached tokens, fitted freely", "seconds per token"),
            ("step_overhead_seconds", "what every engine step spends besides its work (the per-phase fit)",
             "TTFT(N) = r + s + prefill(N); step(C, k) = s + decode(C, k), bounded least squares", "seconds"),
        )
        for part in ("value", "uncertainty")
    },
    "measured.fit.kv_slope_predicted_seconds_per_token": Explanation(
        "what a cached token's KV bytes alone add to a step at the fitted bandwidth",
        "k ÷ (share × bandwidth)",
        ("measured.kv_bytes_per_token", "measured.fit.memory_efficiency.value"),
        (MEASURED, MODEL, GPU),
        "seconds per token",
    ),
    # -- EFFICIENCY=: the shares the expected numbers assume (the expected numbers follow the table below)
    **{
        f"choice.efficiency.{field}": Explanation(what, "fitted from the measured dataset, or given", (), (EFFICIENCY,),
                                                  unit)
        for field, what, unit in (("compute", "the share of peak arithmetic the deployment reaches", "share"),
                                  ("memory", "the share of bandwidth the deployment reaches", "share"),
                                  ("overhead_seconds", "the wait per request outside prefill", "seconds"))
    },
    # -- numbers only the film's page reaches, at its controls' settings (render/plan/explorer.py)
    "page.prefill.attention_share": Explanation(
        "attention's share of a prompt's operations",
        ATTENTION_SHARE,
        PREFILL_INPUTS,
        (MODEL,), "share",
    ),
    "page.prefill.tpot": Explanation(
        "one decode step at batch 1 with the prompt cached: the time per output token",
        "max(2·P_active ÷ (T·peak), (W_read(1) ÷ T + N·k_T) ÷ bandwidth) + all-reduces",
        ("spec.active_parameters", "spec.weight_bytes", "spec.kv_bytes_per_token", *DEPLOYMENT),
        (GPU, MODEL, DTYPE),
        "seconds",
    ),
    "page.prefill.arithmetic": Explanation(
        "the prompt's operations at the peak: prefill's time where arithmetic binds",
        "operations ÷ (T·peak)", ("numbers.prefill.ops", "spec.peak_flops", "spec.gpus"), (GPU, MODEL, DTYPE),
        "seconds",
    ),
    "page.decode.arithmetic": Explanation(
        "a batched step's operations at the peak: its time where arithmetic binds",
        "2·P_active·B ÷ (T·peak)", ("spec.active_parameters", "spec.peak_flops", "spec.gpus"), (GPU, MODEL, DTYPE),
        "seconds",
    ),
    "page.decode.reading": Explanation(
        "a batched step's bytes at the bandwidth: its time where memory binds",
        "(W_read(B) ÷ T + B·C·k_T) ÷ bandwidth", ("spec.weight_bytes", "spec.memory_bandwidth"), (GPU, MODEL, DTYPE),
        "seconds",
    ),
    "page.decode.weights": Explanation(
        "the weight bytes each GPU reads in one batched step",
        "W_read(B) ÷ T (a mixture of experts reads the experts the batch wakes)",
        ("spec.weight_bytes", "spec.gpus"),
        (MODEL, DTYPE),
        "bytes",
    ),
    "page.decode.cache": Explanation(
        "the KV cache bytes each GPU rereads in that step",
        "B·C·k_T",
        ("spec.kv_bytes_per_token", "spec.gpus"),
        (MODEL, DTYPE),
        "bytes",
    ),
    "page.decode.bytes_per_step": Explanation(
        "all the bytes each GPU reads in that step", "W_read(B) ÷ T + B·C·k_T", ("spec.weight_bytes",), (MODEL, DTYPE),
        "bytes",
    ),
    "page.cache_to_weights": Explanation(
        "one user's cache against the weights a step reads it with", "C·k ÷ W",
        ("spec.kv_bytes_per_token", "spec.weight_bytes"), (MODEL, DTYPE), "share",
    ),
    "page.cache.bytes": Explanation(
        "the KV cache of one user's prompt, every step of whose decode rereads it", "C·k",
        ("spec.kv_bytes_per_token",), (MODEL, DTYPE), "bytes",
    ),
    "page.cache.tokens_per_second": Explanation(
        "one user's decode rate, rereading that cache every step",
        "1 ÷ max(2·P_active ÷ (T·peak), (W_read(1) ÷ T + C·k_T) ÷ bandwidth) + all-reduces",
        ("spec.active_parameters", "spec.weight_bytes", "spec.kv_bytes_per_token", *DEPLOYMENT),
        (GPU, MODEL, DTYPE), "tokens/s",
    ),
    "page.cache.batch": Explanation(
        "the cache each GPU rereads in a step when every user of the batch keeps that much",
        "B·C·k_T", ("spec.kv_bytes_per_token", "spec.gpus"), (MODEL, DTYPE), "bytes",
    ),
    "page.cache.share": Explanation(
        "the cache's share of that step's bytes", "B·C·k_T ÷ (W_read(B) ÷ T + B·C·k_T)", ("spec.kv_bytes_per_token",),
        (MODEL, DTYPE), "share",
    ),
    "page.ridge_batch": Explanation(
        "the users decoding together at which decode reaches the ridge",
        "the smallest B whose intensity reaches peak ÷ bandwidth; never, when B·C·k keeps the step memory-bound",
        ("spec.ridge_ops_per_byte", "spec.active_parameters", "spec.kv_bytes_per_token"),
        (GPU, MODEL, DTYPE),
        "users",
    ),
    "page.answer.latency": Explanation(
        "an answer's whole wait, alone on the GPU", "TTFT + (n − 1)·TPOT", (), (GPU, MODEL, DTYPE), "seconds"
    ),
    "page.answer.decoding_share": Explanation(
        "the share of that wait spent decoding", "(n − 1)·TPOT ÷ (TTFT + (n − 1)·TPOT)", (), (GPU, MODEL, DTYPE),
        "share"
    ),
    # -- the extended cut (CUT=extended): the deployment under a stream of requests (render/plan/load.py)
    "load.parameters.answer_tokens": Explanation(
        "each request's answer", "the cut's load (film load's --answer-tokens)", (), (STORYBOARD,), "tokens"),
    "load.parameters.requests": Explanation(
        "the requests in the stream", "the cut's load (film load's --requests)", (), (STORYBOARD,), "requests"),
    "load.parameters.seed": Explanation(
        "the seed of the stream's arrivals", "the cut's load (film load's --seed)", (), (STORYBOARD,), "seed"),
    "load.parameters.slo_ttft_seconds": Explanation(
        "the objective for the first token", "the cut's load (film load's --slo ttft=)", (), (STORYBOARD,),
        "seconds"),
    "load.parameters.slo_tpot_seconds": Explanation(
        "the objective for each token after the first", "the cut's load (film load's --slo tpot=)", (),
        (STORYBOARD,), "seconds"),
    "load.parameters.static_batch": Explanation(
        "static batching's batch", "the cut's load (film load's --batch)", (), (STORYBOARD,), "requests"),
    "load.parameters.static_wait_seconds": Explanation(
        "the wait after which a static batch starts short", "the cut's load (film load's --max-wait)", (),
        (STORYBOARD,), "seconds"),
    "load.parameters.max_num_batched_tokens": Explanation(
        "chunked prefill's tokens a step", "the cut's load (film load's --max-num-batched-tokens, vLLM's)", (),
        (STORYBOARD,), "tokens"),
    "load.prompt_tokens": Explanation(
        "each request's prompt", "the film's prompt", ("numbers.prefill.tokens",), (STORYBOARD,), "tokens"),
    "load.rate": Explanation(
        "the film's arrival rate", "½ × saturation (1 ÷ (a prefill + an answer's decode steps at the batch the "
        "slots and cache allow)), to three figures", ("load.prompt_tokens", "load.parameters.answer_tokens"),
        (GPU, MODEL, DTYPE, STORYBOARD), "requests/s"),
    "load.kv_blocks": Explanation(
        "the KV cache's blocks", "(90% of each GPU's memory − its share of the weights) ÷ (block tokens × k ÷ T)",
        ("spec.memory_bytes", "spec.weight_bytes", "spec.kv_bytes_per_token", "spec.gpus"), (GPU, MODEL, DTYPE),
        "blocks"),
    "load.block_tokens": Explanation("tokens a KV block holds", "vLLM's paged block", (), (), "tokens"),
    "load.decode_step_seconds": Explanation(
        "a decode step of the batch at the film's rate", "the roofline's step: B sequences over B·(prompt + "
        "answer ÷ 2) cached tokens", ("load.batch", "load.prompt_tokens"), (GPU, MODEL, DTYPE), "seconds"),
    "load.batch": Explanation(
        "the sequences decoding at once, on average", "Little's law: rate × mean decoding time (simulated, "
        "continuous batching)", ("load.rate",), (GPU, MODEL, DTYPE, STORYBOARD), "sequences"),
    "load.long_prompt_tokens": Explanation(
        "the long prompt that arrives", "the film's long prompt", ("numbers.long_prompt.tokens",),
        (STORYBOARD,), "tokens"),
    "load.stall_seconds": Explanation(
        "one step that prefills the long prompt whole, beside the decodes", "the roofline's step: the batch's "
        "decodes and one chunk of the whole prompt", ("load.batch", "load.long_prompt_tokens"), (GPU, MODEL, DTYPE),
        "seconds"),
    "load.chunks": Explanation(
        "the steps chunked prefill spreads the long prompt over", "⌈long prompt ÷ piece⌉",
        ("load.long_prompt_tokens", "load.piece_tokens"), (STORYBOARD,), "steps"),
    "load.piece_tokens": Explanation(
        "the long prompt's piece in each chunked step", "chunk tokens − the batch's decode tokens",
        ("load.parameters.max_num_batched_tokens", "load.batch"), (STORYBOARD,), "tokens"),
    "load.chunked_step_seconds": Explanation(
        "the longest chunked step", "the roofline's step: the batch's decodes and the last piece over the "
        "prompt's cache before it", ("load.batch", "load.piece_tokens"), (GPU, MODEL, DTYPE), "seconds"),
    # -- the rest of what the plan computes (the film shows or says these only for some choices)
    "duration": Explanation("the film's length", "the storyboard's end", (), (STORYBOARD,), "seconds"),
    "spec.memory_bytes": Explanation("one GPU's memory", "datasheet GiB × 2³⁰", ("choice.gpu.memory_gib",), (GPU,),
                                     "bytes"),
    "spec.experts_per_token": Explanation("the routed experts each token uses", "config.json",
                                          ("choice.model.experts_per_token",), (MODEL,), "experts"),
    "spec.weight_bytes_per_gpu": Explanation("the weights each GPU holds", "W ÷ T", ("spec.weight_bytes", "spec.gpus"),
                                             (MODEL, DTYPE), "bytes"),
    "spec.kv_bytes_per_token_per_gpu": Explanation(
        "the KV cache one token adds on each GPU", "k ÷ T (KV heads split between the GPUs; latent attention's "
        "cache is whole on each)", ("spec.kv_bytes_per_token", "spec.gpus"), (MODEL, DTYPE), "bytes"),
    "numbers.prefill.linear_ops": Explanation("prefill's matrix products with the weights", "2·P_active·N",
                                              ("spec.active_parameters", "numbers.prefill.tokens"), (MODEL, STORYBOARD),
                                              "operations"),
    "numbers.prefill.attention_ops": Explanation("prefill's attention between the prompt's tokens",
                                                 "2·L·(heads·head_dim)·N²", PREFILL_INPUTS[1:], (MODEL, STORYBOARD),
                                                 "operations"),
    "numbers.prefill.attention_fraction": Explanation("attention's share of prefill's operations", ATTENTION_SHARE,
                                                      PREFILL_INPUTS, (MODEL, STORYBOARD), "share"),
    "numbers.decode.compute_seconds": Explanation("one decode step's arithmetic alone", "2·P_active ÷ (T·peak)",
                                                  ("numbers.decode.ops_per_token", "spec.total_peak_flops"),
                                                  (GPU, MODEL, DTYPE), "seconds"),
    "numbers.decode.memory_seconds": Explanation("one decode step's memory traffic alone", "bytes per GPU ÷ bandwidth",
                                                 ("numbers.decode.bytes_per_gpu", "spec.memory_bandwidth"),
                                                 (GPU, MODEL, DTYPE), "seconds"),
    "numbers.decode.weight_bytes_read": Explanation(
        "the weight bytes one token reads", "W_read(1): every weight of a dense model; a mixture of experts reads "
        "its shared weights and K experts per layer", ("spec.weight_bytes", "spec.experts_per_token", "spec.experts"),
        (MODEL, DTYPE), "bytes"),
    "numbers.batch.step_bytes": Explanation("the bytes of one batched step, every GPU's together", "W_read(B) + B·C·k",
                                            ("numbers.batch.weight_bytes_read", "numbers.batch.kv_bytes"),
                                            (MODEL, DTYPE, STORYBOARD), "bytes"),
    "numbers.batch.bytes_per_gpu": Explanation("the bytes each GPU reads in one batched step",
                                               "W_read(B) ÷ T + B·C·k_T",
                                               ("numbers.batch.step_bytes", "spec.gpus"), (MODEL, DTYPE, STORYBOARD),
                                               "bytes"),
    "numbers.batch.compute_utilisation": Explanation(
        "the share of the batched step the arithmetic keeps the GPU busy", "compute time ÷ step time",
        ("numbers.batch.step_seconds",), (GPU, MODEL, DTYPE, STORYBOARD), "share"),
    "numbers.batch.size_at_ridge": Explanation(
        "the smallest batch whose step reaches the ridge at this context (none: the cache keeps it memory-bound)",
        "B = ridge·W ÷ (2P − ridge·C·k)", ("spec.ridge_ops_per_byte", "spec.weight_bytes", "spec.active_parameters",
                                          "numbers.batch.context_tokens", "spec.kv_bytes_per_token"),
        (GPU, MODEL, DTYPE, STORYBOARD), "users"),
    "numbers.batch.ops_per_byte_limit": Explanation(
        "what a batch's intensity tends to as it grows without end (none: nothing cached)", "2P ÷ (C·k)",
        ("spec.active_parameters", "numbers.batch.context_tokens", "spec.kv_bytes_per_token"),
        (MODEL, DTYPE, STORYBOARD), "operations/byte"),
    "numbers.batch.communication_seconds": Explanation(
        "the batched step's all-reduces", "2 per layer × (latency + B tokens' activations ÷ interconnect)",
        DEPLOYMENT, (INTERCONNECT, MODEL), "seconds"),
    "numbers.long_prompt.ops": Explanation(
        "operations to prefill the long prompt", "2·P_active·N + 2·L·(heads·head_dim)·N²",
        ("numbers.long_prompt.tokens", *PREFILL_INPUTS[2:], "spec.active_parameters"), (MODEL, STORYBOARD),
        "operations"),
    "numbers.long_prompt.kv_bytes": Explanation("the long prompt's KV cache", "N·k",
                                                ("numbers.long_prompt.tokens", "spec.kv_bytes_per_token"),
                                                (MODEL, DTYPE, STORYBOARD), "bytes"),
    "numbers.compare.ridge_ops_per_byte": Explanation("the comparison GPU's ridge", "its peak ÷ its bandwidth",
                                                      ("numbers.compare.peak_flops",
                                                       "numbers.compare.memory_bandwidth"), (COMPARE, DTYPE),
                                                      "operations/byte"),
    "numbers.compare.prefill_seconds": Explanation("the prompt's prefill on the comparison GPU",
                                                   "the prefill time with its peak and bandwidth",
                                                   ("numbers.prefill.ops", "numbers.compare.peak_flops"),
                                                   (COMPARE, MODEL, DTYPE, STORYBOARD), "seconds"),
    "numbers.compare.long_prompt_seconds": Explanation("the long prompt's prefill on the comparison GPU",
                                                       "the prefill time with its peak and bandwidth",
                                                       ("numbers.long_prompt.ops", "numbers.compare.peak_flops"),
                                                       (COMPARE, MODEL, DTYPE, STORYBOARD), "seconds"),
    "numbers.compare.prefill_speedup": Explanation("prefill, one GPU against the other", "other prefill ÷ prefill",
                                                   ("numbers.compare.prefill_seconds", "numbers.prefill.seconds"),
                                                   (GPU, COMPARE, MODEL, DTYPE), "times"),
    "measured.kv_bytes_per_token": Explanation("the KV cache one token adds, in the measured deployment",
                                               "2 × layers × KV heads × head_dim × KV bytes",
                                               ("measured.model.layers", "measured.model.kv_heads",
                                                "measured.model.head_dim", "measured.precision.kv_bytes"),
                                               (MEASURED, MODEL), "bytes"),
    "measured.ridge_ops_per_byte": Explanation("the compared GPU's ridge", "peak ÷ bandwidth",
                                               ("measured.gpu.bf16_flops", "measured.gpu.bandwidth"), (MEASURED, GPU),
                                               "operations/byte"),
    "measured.other_decode_tokens_per_second": Explanation(
        "another provider's decode rate for the same model, as the dataset reports it", "measured",
        (), (MEASURED,), "tokens/s"),
    "measured.sweep.prompt_tokens": Explanation("the prompt length of the measured concurrency sweep", "measured",
                                                (), (MEASURED,), "tokens"),
    "measured.fit.achieved_flops": Explanation("the arithmetic the endpoint's prefill reaches", "share × peak",
                                               ("measured.fit.compute_efficiency.value", "measured.gpu.bf16_flops"),
                                               (MEASURED, GPU), "FLOP/s"),
    "measured.gpu.bandwidth": Explanation("the memory bandwidth of the GPU the measurements are set beside",
                                          "datasheet", (), (MEASURED, GPU), "bytes/s"),
    "measured.fit.achieved_bandwidth": Explanation("the bandwidth the endpoint's decode reaches", "share × bandwidth",
                                                   ("measured.fit.memory_efficiency.value", "measured.gpu.bandwidth"),
                                                   (MEASURED, GPU), "bytes/s"),
    "measured.fit.expected_tokens_per_second": Explanation(
        "one user's decode rate, nothing cached, at the reached bandwidth", "1 ÷ (bytes per step ÷ reached bandwidth)",
        ("measured.fit.achieved_bandwidth", "measured.weight_bytes"), (MEASURED, GPU, MODEL), "tokens/s"),
    "measured.fit.overhead_share": Explanation(
        "the share of the shortest prompt's fitted wait spent outside prefill", "overhead ÷ fitted TTFT",
        ("measured.fit.overhead_seconds.value",), (MEASURED,), "share"),
    "measured.fit.kv_slope_efficiency.value": Explanation(
        "the share of bandwidth the KV slope alone implies", "KV bytes per token ÷ bandwidth ÷ fitted slope",
        ("measured.kv_bytes_per_token", "measured.fit.kv_slope_seconds_per_token.value"), (MEASURED, GPU), "share"),
    "measured.fit.kv_slope_efficiency.uncertainty": Explanation(
        "its one-sigma uncertainty", "from the slope's", ("measured.fit.kv_slope_seconds_per_token.uncertainty",),
        (MEASURED,), "share"),
}


# EFFICIENCY=: each number of `numbers` and `spec` again, at the ceilings the deployment reaches.
EXPLANATIONS.update({
    f"{expected}.{path.split('.', 1)[1]}": Explanation(
        f"{explanation.meaning}, {said} here", f"{explanation.formula}, at share × peak and share × bandwidth",
        (*explanation.inputs, "choice.efficiency.compute", "choice.efficiency.memory"),
        (*explanation.sources, EFFICIENCY), explanation.unit)
    for path, explanation in list(EXPLANATIONS.items())
    for group, expected, said in (("numbers", "expected", "expected"), ("spec", "achieved", "reached"))
    if path.startswith(f"{group}.")
})


def unit_of(path: str) -> str:
    """The unit of the number at `path`: its row's, or the one its data field declares (choice.gpu.bandwidth is
    in bytes/s); "" for a plain count."""
    if path in EXPLANATIONS:
        return EXPLANATIONS[path].unit
    field = plan_field(path)
    return field.metadata.get("unit", "") if field is not None else ""


def plan_field(path: str) -> dataclasses.Field | None:
    """The dataclass field a plan path ends in (None where the path leaves the dataclasses)."""
    kind, field = Plan, None
    for name in path.split("."):
        if not dataclasses.is_dataclass(kind):
            return None
        field = next((candidate for candidate in dataclasses.fields(kind) if candidate.name == name), None)
        if field is None:
            return None
        hint = hints(kind)[field.name]
        options = [option for option in typing.get_args(hint) if option is not type(None)]
        kind = options[0] if options and typing.get_origin(hint) is not tuple else hint
    return field
