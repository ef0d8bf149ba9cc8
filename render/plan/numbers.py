"""Every number of the film, from the roofline: the choice's spec sheet, each beat topic's
numbers and the measured beats' comparison with the ideal. The only caller is the resolve step."""

from __future__ import annotations

import math

from render.errors import FilmError
from render.code import computed
from render.plan.types import (BatchNumbers, ComparisonFraming, ComparisonNumbers, DecodeNumbers, FitPoint, Fitted,
                               LongPrefillNumbers, MeasuredFit, MeasuredNumbers, MeasuredPromptNumbers, MeasuredSweep,
                               Numbers, Parameters,
                               Pill, PrefillNumbers, QuantisedDecode, SpecSheet, SweepPoint, TtftCurvePoint)
from render.specs import roofline as rl
from render.specs.calibration import Calibration, calibrate
from render.specs.catalog import MeasuredDataset, MeasuredPrompt
from render.specs.types import DataType, Deployment, Gpu, Model

# Ratios within this of 1 are "the same" in the comparison framing.
SAME_RATIO = 0.05


def spec_sheet(deployment: Deployment) -> SpecSheet:
    gpu, model, dtype, gpus = deployment.gpu, deployment.model, deployment.dtype, deployment.gpus
    peak = rl.peak_flops(gpu, dtype)
    return SpecSheet(
        peak_flops=peak, memory_bandwidth=gpu.bandwidth, memory_bytes=gpu.memory_bytes,
        sm_count=gpu.sm_count, ridge_ops_per_byte=rl.ridge_ops_per_byte(gpu, dtype),
        parameters=model.parameters, weight_bytes=rl.weight_bytes(model, dtype),
        kv_bytes_per_token=rl.kv_bytes_per_token(model, dtype),
        gpus=gpus, total_peak_flops=gpus * peak, total_bandwidth=gpus * gpu.bandwidth,
        interconnect_bandwidth=gpu.interconnect_bandwidth, allreduce_latency_seconds=gpu.allreduce_latency_seconds,
        allreduce_latency_is_assumption=gpu.allreduce_latency_is_assumption,
        active_parameters=rl.active_parameters(model), experts=model.experts,
        experts_per_token=model.experts_per_token, weight_bytes_per_gpu=rl.weight_bytes(model, dtype) / gpus,
        kv_bytes_per_token_per_gpu=rl.kv_bytes_per_token_per_gpu(model, dtype, gpus), kv_dtype=dtype.kv_dtype,
    )


def film_numbers(deployment: Deployment, compare_gpu: Gpu, params: Parameters,
                 quantised: DataType | None) -> Numbers:
    """Every number of beats 1-6 and 9, for the film's own deployment."""
    return Numbers(
        prefill=prefill_numbers(deployment, params.prompt_tokens),
        decode=decode_numbers(deployment),
        batch=batch_numbers(deployment, params.batch_size, params.batch_context_tokens),
        long_prompt=long_prompt_numbers(deployment, params.long_prompt_tokens),
        compare=comparison_numbers(deployment, compare_gpu, params),
        quantised=quantised_decode(deployment, quantised) if quantised else None,
    )


def prefill_numbers(deployment: Deployment, tokens: int) -> PrefillNumbers:
    model = deployment.model
    timing = rl.time_on(deployment, rl.prefill(deployment, tokens))
    return PrefillNumbers(
        tokens=tokens, ops=timing.step.operations,
        linear_ops=rl.prefill_linear_operations(model, tokens),
        attention_ops=rl.prefill_attention_operations(model, tokens),
        bytes=timing.step.bytes, bytes_all_gpus=timing.step.bytes * deployment.gpus, seconds=timing.seconds,
        compute_seconds=timing.compute_seconds, memory_seconds=timing.memory_seconds,
        attention_fraction=rl.prefill_attention_fraction(model, tokens),
        ops_per_byte=timing.step.ops_per_byte, compute_utilisation=timing.compute_seconds / timing.seconds,
        communication_seconds=timing.communication_seconds, communication_fraction=timing.communication_fraction,
        experts_read=rl.experts_touched(model, tokens),
    )


def decode_numbers(deployment: Deployment) -> DecodeNumbers:
    model, dtype = deployment.model, deployment.dtype
    timing = rl.time_on(deployment, rl.decode_step(deployment))
    return DecodeNumbers(
        ops_per_token=timing.step.operations, bytes_per_token=timing.step.bytes * deployment.gpus,
        step_seconds=timing.seconds, compute_seconds=timing.compute_seconds, tokens_per_second=1 / timing.seconds,
        ops_per_byte=timing.step.ops_per_byte, compute_utilisation=timing.compute_seconds / timing.seconds,
        bytes_per_gpu=timing.step.bytes, weight_bytes_read=rl.weight_bytes_read(model, dtype, 1,
                                                                                deployment.embedding_rows),
        experts_read=rl.experts_touched(model, 1), memory_seconds=timing.memory_seconds,
        communication_seconds=timing.communication_seconds, communication_fraction=timing.communication_fraction,
    )


def batch_numbers(deployment: Deployment, size: int, context: int) -> BatchNumbers:
    gpu, model, dtype = deployment.gpu, deployment.model, deployment.dtype
    timing = rl.time_on(deployment, rl.decode_step(deployment, size, context))
    kv_bytes = size * rl.kv_cache_bytes(model, dtype, context)
    limit = rl.decode_intensity_limit(deployment, context)
    ridge_value_size = max(1, round(rl.ridge_ops_per_byte(gpu, dtype)))
    return BatchNumbers(
        size=size, context_tokens=context, kv_bytes=kv_bytes, kv_ratio=kv_bytes / rl.weight_bytes(model, dtype),
        step_bytes=timing.step.bytes * deployment.gpus, step_seconds=timing.seconds,
        tokens_per_second=size / timing.seconds,
        ops_per_byte=timing.step.ops_per_byte, compute_utilisation=timing.compute_seconds / timing.seconds,
        size_at_ridge=rl.batch_size_at_ridge(deployment, context),
        ops_per_byte_limit=None if math.isinf(limit) else limit,
        ridge_value_size=ridge_value_size,
        ridge_value_ops_per_byte=rl.decode_step(deployment, ridge_value_size, context).ops_per_byte,
        bytes_per_gpu=timing.step.bytes, weight_bytes_read=rl.weight_bytes_read(model, dtype, size,
                                                                                deployment.embedding_rows),
        experts_read=rl.experts_touched(model, size), communication_seconds=timing.communication_seconds,
    )


def long_prompt_numbers(deployment: Deployment, tokens: int) -> LongPrefillNumbers:
    model, dtype = deployment.model, deployment.dtype
    timing = rl.time_on(deployment, rl.prefill(deployment, tokens))
    attention = rl.prefill_attention_fraction(model, tokens)
    arithmetic = timing.seconds - timing.communication_seconds
    return LongPrefillNumbers(
        tokens=tokens, ops=timing.step.operations, seconds=timing.seconds, attention_fraction=attention,
        attention_seconds=arithmetic * attention, linear_seconds=arithmetic * (1 - attention),
        kv_bytes=rl.kv_cache_bytes(model, dtype, tokens), communication_seconds=timing.communication_seconds,
        attention_share=arithmetic * attention / timing.seconds,
    )


def comparison_numbers(deployment: Deployment, other: Gpu, params: Parameters) -> ComparisonNumbers:
    """The film's GPUs against as many of the comparison GPU."""
    compared = rl.compare(deployment, other, params.prompt_tokens)
    theirs = deployment.on(other)
    dtype = deployment.dtype
    return ComparisonNumbers(
        gpu=other, peak_flops=rl.peak_flops(other, dtype), memory_bandwidth=other.bandwidth,
        ridge_ops_per_byte=rl.ridge_ops_per_byte(other, dtype), flops_ratio=compared.flops_ratio,
        bandwidth_ratio=compared.bandwidth_ratio, decode_speedup=compared.decode_speedup,
        prefill_speedup=compared.prefill_speedup,
        decode_tokens_per_second=rl.decode_tokens_per_second(theirs),
        prefill_seconds=rl.time_on(theirs, rl.prefill(theirs, params.prompt_tokens)).seconds,
        long_prompt_seconds=rl.time_on(theirs, rl.prefill(theirs, params.long_prompt_tokens)).seconds,
        framing=framing(deployment.gpu, other, compared),
    )


def framing(gpu: Gpu, other: Gpu, compared: rl.Comparison) -> ComparisonFraming:
    """The GPU with more arithmetic leads the sentence (on a tie, the one with more bandwidth),
    so it always reads "X has N times Y's teraflops"."""
    flops, bandwidth, speedup = compared.flops_ratio, compared.bandwidth_ratio, compared.decode_speedup
    film_gpu_first = bandwidth >= 1 if abs(flops - 1) < SAME_RATIO else flops > 1
    if film_gpu_first:
        return ComparisonFraming(gpu, other, flops, bandwidth, speedup)
    return ComparisonFraming(other, gpu, 1 / flops, 1 / bandwidth, 1 / speedup)


def quantised_decode(deployment: Deployment, quantised: DataType) -> QuantisedDecode:
    """Batch-1 decode with the weights quantised (the KV cache keeps the film's format)."""
    lever = deployment.with_dtype(quantised)
    rate = rl.decode_tokens_per_second(lever)
    return QuantisedDecode(quantised, rl.weight_bytes(deployment.model, quantised), rate,
                           rate / rl.decode_tokens_per_second(deployment))


def pill(gpu: Gpu, dtype: DataType) -> Pill:
    return Pill(gpu.id, gpu.short_name, rl.peak_flops(gpu, dtype), gpu.bandwidth, rl.ridge_ops_per_byte(gpu, dtype))


# -- the measured beats ----------------------------------------------------------------------------


def measured_roles(dataset: MeasuredDataset) -> tuple[MeasuredPrompt, MeasuredPrompt | None, MeasuredPrompt]:
    """The shortest, the middle (when there are three or more and it has a TTFT) and the longest prompt."""
    prompts = dataset.prompts
    middle = prompts[len(prompts) // 2] if len(prompts) > 2 else None
    return prompts[0], middle if middle is not None and middle.ttft_seconds is not None else None, prompts[-1]


def measured_numbers(dataset: MeasuredDataset, gpu: Gpu, model: Model, dtype: DataType,
                     embedding_rows: bool = False) -> MeasuredNumbers:
    """The dataset's own figures beside its model's roofline on the GPU it is compared with. Kept between processes
    (render/code.py's computed: the fit imports scipy, 0.4 s of every command that resolves a plan), named by this
    code and its inputs."""
    inputs = (dataset, gpu, model, dtype, embedding_rows)
    return computed("measured-numbers", __name__, inputs, lambda: measured_numbers_of(*inputs))


def measured_numbers_of(dataset: MeasuredDataset, gpu: Gpu, model: Model, dtype: DataType,
                        embedding_rows: bool = False) -> MeasuredNumbers:
    short, medium, long = measured_roles(dataset)
    for role, prompt in (("shortest", short), ("longest", long)):
        missing = [name for name in ("ttft_seconds", "decode_tokens_per_second") if getattr(prompt, name) is None]
        if missing:
            raise FilmError(
                f"{dataset.path}: the {role} prompt ({prompt.prompt_tokens:,} tokens) has no "
                f"{' or '.join(missing)}; the measured beats need the TTFT and decode rate of the "
                f"shortest and the longest prompt"
            )

    deployment = Deployment(gpu, model, dtype, embedding_rows=embedding_rows)  # compared with one GPU

    def role(prompt: MeasuredPrompt) -> MeasuredPromptNumbers:
        ideal = rl.time_on(deployment, rl.prefill(deployment, prompt.prompt_tokens)).seconds
        return MeasuredPromptNumbers(prompt.prompt_tokens, prompt.ttft_seconds, prompt.decode_tokens_per_second,
                                     prompt.ttft_approximate, ideal)

    short_numbers, long_numbers = role(short), role(long)
    medium_numbers = role(medium) if medium else None
    ceiling = rl.decode_tokens_per_second(deployment)
    weights = rl.weight_bytes(model, dtype)
    long_kv = rl.kv_cache_bytes(model, dtype, long.prompt_tokens)
    network_prompt = medium_numbers or short_numbers  # the longest prompt whose wait is still mostly not prefill
    return MeasuredNumbers(
        dataset=dataset, model=model, gpu=gpu, precision=dtype,
        short=short_numbers, medium=medium_numbers, long=long_numbers,
        weight_bytes=weights, kv_bytes_per_token=rl.kv_bytes_per_token(model, dtype),
        ceiling_tokens_per_second=ceiling, ridge_ops_per_byte=rl.ridge_ops_per_byte(gpu, dtype),
        ceiling_fraction=short.decode_tokens_per_second / ceiling,
        long_kv_bytes=long_kv, long_kv_ratio=long_kv / weights,
        slowdown=1 - long.decode_tokens_per_second / short.decode_tokens_per_second,
        network_fraction=1 - network_prompt.ideal_prefill_seconds / network_prompt.ttft_seconds,
        other_decode_tokens_per_second=(dataset.other_providers[0].decode_tokens_per_second
                                        if dataset.other_providers else None),
        sweep=measured_sweep(dataset, deployment),
        fit=measured_fit(calibrate(dataset, deployment), short.prompt_tokens),
    )


def measured_fit(fit: Calibration, shortest_prompt: int) -> MeasuredFit:
    def fitted(estimate) -> Fitted | None:
        return None if estimate is None else Fitted(estimate.value, estimate.uncertainty)

    slope = fit.kv_slope
    step = fit.predicted_step(0)
    return MeasuredFit(
        overhead_seconds=fitted(fit.overhead_seconds), compute_efficiency=fitted(fit.compute_efficiency),
        memory_efficiency=fitted(fit.memory_efficiency), achieved_flops=fit.achieved_flops,
        achieved_bandwidth=fit.achieved_bandwidth, expected_tokens_per_second=1 / step.value if step else None,
        overhead_share=fit.overhead_share(shortest_prompt),
        kv_slope_seconds_per_token=fitted(slope.seconds_per_token) if slope else None,
        kv_slope_predicted_seconds_per_token=slope.predicted_seconds_per_token if slope else None,
        kv_slope_efficiency=fitted(slope.efficiency) if slope else None,
        points=tuple(FitPoint(point.kind, point.prompt_tokens, point.streams, point.measured, point.fitted,
                              point.precision, point.approximate) for point in fit.points),
        notes=fit.notes, ttft_curve=ttft_curve(fit), step_overhead_seconds=fitted(fit.step_overhead_seconds),
    )


def ttft_curve(fit: Calibration, per_decade: int = 8) -> tuple[TtftCurvePoint, ...]:
    """The fitted TTFT and the ideal prefill from a decade below the shortest measured prompt to one above the longest
    (whole powers of ten), for the measured beat's chart; empty when the fit has no prefill."""
    lengths = [point.prompt_tokens for point in fit.points if point.kind == "ttft"]
    if not lengths or fit.predicted_ttft(lengths[0]) is None:
        return ()
    deployment = fit.deployment
    low, high = math.floor(math.log10(min(lengths))), math.ceil(math.log10(max(lengths)))
    tokens = sorted({round(10 ** (low + step / per_decade)) for step in range((high - low) * per_decade + 1)})
    return tuple(TtftCurvePoint(count, rl.time_on(deployment, rl.prefill(deployment, count)).seconds,
                                fit.predicted_ttft(count).value) for count in tokens)


def measured_sweep(dataset: MeasuredDataset, deployment: Deployment) -> MeasuredSweep | None:
    """The shortest prompt with a concurrency sweep, beside the roofline's aggregate throughput: at batch
    size B every step reads the weights once and B prompts' caches, and yields B tokens."""
    swept = next((prompt for prompt in dataset.prompts if len(prompt.concurrency) > 1), None)
    if swept is None:
        return None

    def predicted(batch: int) -> float:
        return rl.decode_tokens_per_second(deployment, batch, swept.prompt_tokens)  # all B sequences' tokens

    most = max(level.streams for level in swept.concurrency)
    sizes = sorted({round(2 ** (exponent / 4)) for exponent in range(0, 4 * math.ceil(math.log2(most)) + 1)}
                   | {most})
    return MeasuredSweep(
        swept.prompt_tokens,
        tuple(SweepPoint(level.streams, level.aggregate_tokens_per_second, predicted(level.streams))
              for level in swept.concurrency),
        tuple((size, predicted(size)) for size in sizes if size <= most),
    )
