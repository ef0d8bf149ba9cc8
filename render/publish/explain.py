"""What each number means and how it is computed: its formula, its inputs and their sources.

The one table both pages read: the review page's numbers table (every number the film speaks or
shows) and the film's page ("How each number is computed", for every number a reader can move).
A path is a plan attribute path, as the narration and the scenes read them ("numbers.prefill.ops"),
or, for a number only the page's controls reach, "page.<what>"; an input is a plan path (shown
with its value) and a source is where a spec comes from in data/ (the GPU's datasheet, the
model's config, the storyboard, the measured dataset).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from render import formatting as fmt
from render.plan.tracking import value_at
from render.plan.types import Plan

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
        "streaming multiprocessors drawn on the chip", "datasheet", ("choice.gpu.sm_count",), (GPU,)
    ),
    "spec.gpus": Explanation(
        "GPUs the model is split over (tensor parallelism)", "GPUS= (1 unless given)", (), (STORYBOARD,)
    ),
    "choice.hardware.count": Explanation(
        "GPUs the narration names ('an H100', 'four H100s')", "GPUS= (1 unless given)", (), (STORYBOARD,)
    ),
    "choice.gpus": Explanation(
        "GPUs the labels name ('4× H100')", "GPUS= (1 unless given)", (), (STORYBOARD,)
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
    "spec.experts": Explanation("routed experts per layer", "config.json", ("choice.model.experts",), (MODEL,)),
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
        "the prefill beat's prompt", "storyboard parameter", (), (STORYBOARD,), "tokens"
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
        (INTERCONNECT,),
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
        (INTERCONNECT,),
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
        "the wasted-money beat's long prompt", "storyboard parameter", (), (STORYBOARD,), "tokens"
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
        (MODEL, STORYBOARD),
    ),
    "numbers.long_prompt.attention_share": Explanation(
        "attention's share of the long prompt's whole wait (its all-reduces included)",
        "attention time ÷ prefill time",
        ("numbers.long_prompt.attention_seconds", "numbers.long_prompt.seconds"),
        (GPU, MODEL, DTYPE, STORYBOARD),
    ),
    "numbers.compare.framing.flops_ratio": Explanation(
        "peak arithmetic, one GPU against the other",
        "peak ÷ other peak",
        ("spec.peak_flops", "numbers.compare.peak_flops"),
        (GPU, COMPARE),
    ),
    "numbers.compare.framing.bandwidth_ratio": Explanation(
        "memory bandwidth, one GPU against the other",
        "bandwidth ÷ other bandwidth",
        ("spec.memory_bandwidth", "numbers.compare.memory_bandwidth"),
        (GPU, COMPARE),
    ),
    "numbers.compare.framing.decode_speedup": Explanation(
        "one user's decode, as many of one GPU against the other",
        "tokens/s ÷ other tokens/s",
        ("numbers.decode.tokens_per_second", "numbers.compare.decode_tokens_per_second"),
        (GPU, COMPARE, MODEL, DTYPE),
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
        (GPU, MODEL, DTYPE),
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
        (GPU, MODEL, DTYPE),
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
        (MODEL, DTYPE, STORYBOARD),
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
        (GPU, COMPARE),
    ),
    "numbers.compare.bandwidth_ratio": Explanation(
        "memory bandwidth, the film's GPU against the other",
        "bandwidth ÷ other bandwidth",
        ("spec.memory_bandwidth", "numbers.compare.memory_bandwidth"),
        (GPU, COMPARE),
    ),
    "numbers.compare.decode_speedup": Explanation(
        "one user's decode, the film's GPUs against as many of the other",
        "tokens/s ÷ other tokens/s",
        ("numbers.decode.tokens_per_second", "numbers.compare.decode_tokens_per_second"),
        (GPU, COMPARE, MODEL, DTYPE),
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
                "",
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
        (MODEL, MEASURED),
    ),
    "measured.slowdown": Explanation(
        "how much slower decode ran with the long prompt",
        "1 − long rate ÷ short rate",
        ("measured.long.decode_tokens_per_second", "measured.short.decode_tokens_per_second"),
        (MEASURED,),
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
        (MEASURED,),
    ),
    "measured.network_fraction": Explanation(
        "the share of a short wait that is not prefill",
        "1 − ideal prefill ÷ TTFT",
        ("measured.short.ttft_seconds",),
        (MEASURED, MODEL),
    ),
    # -- the measured dataset's fit (render/specs/calibration.py)
    **{
        f"measured.fit.{field}.{part}": Explanation(
            f"{what}{', its one-sigma uncertainty' if part == 'uncertainty' else ''}, fitted from the measured timings",
            formula, (), (MEASURED,) if field == "overhead_seconds" else (MEASURED, GPU), unit)
        for field, what, formula, unit in (
            ("overhead_seconds", "the wait outside prefill (network, queueing, the template)",
             "TTFT(N) = overhead + (2·P·N + 2·L·d·N²) ÷ (share × peak), bounded least squares", "seconds"),
            ("compute_efficiency", "the share of peak arithmetic prefill reaches",
             "TTFT(N) = overhead + (2·P·N + 2·L·d·N²) ÷ (share × peak), bounded least squares", "share"),
            ("memory_efficiency", "the share of bandwidth decode reaches",
             "step(C) = (W_read + C·k) ÷ (share × bandwidth), bounded least squares", "share"),
            ("kv_slope_seconds_per_token", "what each cached token adds to a decode step",
             "the slope of step time against cached tokens, fitted freely", "seconds per token"),
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
        (MODEL,),
    ),
    "page.prefill.tpot": Explanation(
        "one decode step at batch 1 with the prompt cached: the time per output token",
        "max(2·P_active ÷ (T·peak), (W_read(1) ÷ T + N·k_T) ÷ bandwidth) + all-reduces",
        ("spec.active_parameters", "spec.weight_bytes", "spec.kv_bytes_per_token", *DEPLOYMENT),
        (GPU, MODEL, DTYPE),
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
    "page.decode.cache_share": Explanation(
        "the cache's share of a step's bytes", "B·C·k_T ÷ (W_read(B) ÷ T + B·C·k_T)", ("spec.kv_bytes_per_token",),
        (MODEL, DTYPE),
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
        "the share of that wait spent decoding", "(n − 1)·TPOT ÷ (TTFT + (n − 1)·TPOT)", (), (GPU, MODEL, DTYPE)
    ),
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


@dataclass(frozen=True)
class Source:
    kind: str
    label: str    # short: "H100 SXM datasheet"
    text: str     # the data's whole citation
    url: str      # its first link, if it has one


URL = re.compile(r"https?://[^\s,;]+")


def sources_of(plan: Plan) -> dict[str, Source]:
    """Where each kind of input comes from, as data/ and the storyboard cite it."""
    choice, dataset = plan.choice, plan.measured.dataset
    cited = {
        GPU: (f"{choice.gpu.name} datasheet", choice.gpu.source),
        COMPARE: (f"{choice.compare_gpu.name} datasheet", choice.compare_gpu.source),
        INTERCONNECT: (f"{choice.gpu.name} interconnect", choice.gpu.interconnect_source),
        MODEL: (f"{choice.model.name} config", choice.model.source),
        DTYPE: (f"{choice.dtype.name} format", choice.dtype.source),
        STORYBOARD: ("the storyboard", "script/storyboard.yaml: the film's parameters (prompt lengths, batch)"),
        MEASURED: (f"measured: {dataset.provider}", f"{dataset.path}: {dataset.source}"
                   + (f" (measured {dataset.measured_on})" if dataset.measured_on else "")),
        EFFICIENCY: ("EFFICIENCY=", f"expected numbers at {choice.efficiency.described}" if choice.efficiency
                     else "not given: every number is a ceiling"),
    }
    found = {}
    for kind, (label, text) in cited.items():
        text = " ".join(text.split())
        link = URL.search(text)
        found[kind] = Source(kind, label, text, link.group(0).rstrip(".,;)") if link else "")
    return found


@dataclass
class NumberRow:
    """One line of the numbers table: a number as the film writes it, what it means and where it comes from."""

    path: str
    meaning: str
    value: str          # as the film writes it
    exact: str          # every digit
    formula: str
    inputs: list[tuple[str, str]]
    sources: list[Source]
    beats: list[str]


def number_row(plan: Plan, path: str, value, written_as: str = "", beats: list[str] | None = None) -> NumberRow:
    """The row of `path`, whose value is `value` (a plan number, or one the page's controls reach, already
    written as `written_as`)."""
    explanation = EXPLANATIONS.get(path) or Explanation("", "", (), ())
    sources = sources_of(plan)
    return NumberRow(
        path, explanation.meaning, written_as or written(value, explanation.unit, path), exact(value),
        explanation.formula,
        [(name, written(value_at(plan, name), EXPLANATIONS[name].unit if name in EXPLANATIONS else "", name))
         for name in explanation.inputs],
        [sources[kind] for kind in explanation.sources], beats or [])


READABLE = {
    "FLOP/s": lambda v: fmt.teraflops(v, short=True), "bytes/s": lambda v: fmt.bandwidth(v, short=True),
    "seconds": lambda v: fmt.duration(v, short=True), "tokens/s": lambda v: fmt.tokens_per_second(v, short=True),
    "operations/byte": lambda v: fmt.ops_per_byte(v, short=True),
    "operations": lambda v: f"{fmt.large(v)} operations", "parameters": lambda v: f"{fmt.large(v)} parameters",
    "bytes": lambda v: fmt.gigabytes(v, short=True) if v >= 1e8 else f"{fmt.count(v)} bytes",
    "tokens": lambda v: f"{fmt.count(v)} tokens", "users": lambda v: f"{fmt.count(v)} users",
    "experts": lambda v: f"{fmt.approx(v)} experts", "share": lambda v: fmt.percent(v, short=True),
    "seconds per token": lambda v: fmt.nanoseconds(v),
}


def written(value, unit: str, path: str = "") -> str:
    """A value as the film writes it ('989 TFLOP/s', '34 ms', '13%', '3.2×')."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    unit = unit or unit_of(path)
    if unit in READABLE:
        return READABLE[unit](value)
    if isinstance(value, int):
        return fmt.count(value)  # a count, every digit: 4,096, not 4,100
    if path.endswith(("_fraction", "_utilisation", "slowdown", "kv_ratio")):
        return fmt.percent(value, short=True)
    if path.endswith(("_ratio", "_speedup", "speedup")):
        return fmt.times(value, short=True)
    return fmt.plain(fmt.significant(value, 3))


# The unit of a value the table does not explain itself (an input, such as choice.gpu.bf16_flops), from its name.
UNITS_BY_NAME = (("_ratio", ""), ("_flops", "FLOP/s"), ("bandwidth", "bytes/s"), ("_seconds", "seconds"),
                 ("bytes_per_token", ""),
                 ("bytes_per_weight", ""), ("kv_bytes", "bytes"), ("bytes", "bytes"))


def unit_of(path: str) -> str:
    name = path.rsplit(".", 1)[-1]
    return next((unit for part, unit in UNITS_BY_NAME if part in name), "")


def exact(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,}" if isinstance(value, int) or float(value).is_integer() else f"{value:.6g}"


def fit_view(fit, gpu_name: str, ceiling_tokens_per_second: float) -> dict | None:
    """A measured endpoint's fit (the plan's MeasuredFit) as the pages and `film calibrate` show it: its figures
    in words, each with its uncertainty, each measured figure beside the fitted one, and the notes."""
    if fit is None:
        return None
    seconds = fmt.precise_seconds

    def share(figure) -> str:
        return fmt.share_of(figure.value, figure.uncertainty)

    figures = []
    if fit.overhead_seconds:
        figures.append(("Overhead per request", f"{seconds(fit.overhead_seconds.value)} ± "
                        f"{seconds(fit.overhead_seconds.uncertainty)}",
                        (f"{fit.overhead_share:.1%} of the shortest prompt's wait: " if fit.overhead_share is not None
                         else "waited outside prefill: ") + "network, queueing, the template"))
    if fit.compute_efficiency:
        figures.append(("Prefill arithmetic", share(fit.compute_efficiency),
                        f"of {gpu_name}'s peak: {fmt.teraflops(fit.achieved_flops, short=True)}"))
    if fit.memory_efficiency:
        figures.append(("Decode bandwidth", share(fit.memory_efficiency),
                        f"of {gpu_name}'s: {fmt.bandwidth(fit.achieved_bandwidth, short=True)}, about "
                        f"{fmt.tokens_per_second(fit.expected_tokens_per_second, short=True)} for one user, "
                        f"{fmt.tokens_per_second(ceiling_tokens_per_second, short=True)} at best"))
    if fit.kv_slope_seconds_per_token:
        slope = fit.kv_slope_seconds_per_token
        figures.append(("KV slope", f"{fmt.nanoseconds(slope.value, slope.uncertainty)} a cached token",
                        f"{fmt.nanoseconds(fit.kv_slope_predicted_seconds_per_token)} from the KV bytes at the fitted "
                        f"bandwidth; on its own, {share(fit.kv_slope_efficiency)} of it"))
    points = [{"what": (f"TTFT at {point.prompt_tokens:,} tokens" if point.kind == "ttft" else
                        f"decode step at {point.prompt_tokens:,} cached" + (f", {point.streams} streams"
                                                                            if point.streams > 1 else "")),
               "measured": ("about " if point.approximate else "") + seconds(point.measured_seconds)
               + f" ± {seconds(point.precision_seconds)}",
               "fitted": seconds(point.fitted_seconds),
               "residual": fmt.signed_percent((point.measured_seconds - point.fitted_seconds) / point.fitted_seconds)}
              for point in fit.points]
    return {"figures": figures, "points": points, "notes": fit.notes}
