"""The roofline model of LLM inference: every number the film shows, from specs alone.

Pure maths (no Manim, no files). Units are SI throughout: seconds, bytes, operations
(one multiply-add is two operations), FLOP/s and bytes/s.

    time  = max(operations / peak FLOP/s, bytes / bandwidth)
    ridge = peak FLOP/s / bandwidth                       (operations per byte)
    prefill of N tokens:   operations = 2PN + 2 L (heads x head_dim) N^2
                           bytes      = weights + N x KV bytes per token (the cache it writes)
    decode step, batch B, C cached tokens per sequence:
                           operations = 2PB
                           bytes      = weights + B C x KV bytes per token
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from render.errors import FilmError
from render.specs.types import DataType, Gpu, Model


@dataclass(frozen=True)
class Step:
    """One forward pass: the work it does and the bytes it moves."""

    operations: float
    bytes: float

    @property
    def ops_per_byte(self) -> float:
        """Arithmetic intensity."""
        return self.operations / self.bytes


@dataclass(frozen=True)
class Timing:
    """A step on a GPU: how long each resource needs, and which one limits it."""

    step: Step
    compute_seconds: float
    memory_seconds: float

    @property
    def seconds(self) -> float:
        return max(self.compute_seconds, self.memory_seconds)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_seconds >= self.memory_seconds else "memory"


def arithmetic_format(gpu: Gpu, dtype: DataType) -> str:
    """The format the matrix multiplies run in on this GPU: FP8 needs FP8 tensor cores."""
    if dtype.arithmetic == "fp8" and gpu.fp8_flops is None:
        return "bf16"  # weight-only FP8: dequantised into BF16 multiplies
    return dtype.arithmetic


def peak_flops(gpu: Gpu, dtype: DataType) -> float:
    return gpu.fp8_flops if arithmetic_format(gpu, dtype) == "fp8" else gpu.bf16_flops


def ridge_ops_per_byte(gpu: Gpu, dtype: DataType) -> float:
    """Where the memory slope meets the compute roof."""
    return peak_flops(gpu, dtype) / gpu.bandwidth


def weight_bytes(model: Model, dtype: DataType) -> float:
    return model.parameters * dtype.bytes_per_weight


def kv_bytes_per_token(model: Model, dtype: DataType) -> float:
    """Keys and values, for every layer and KV head."""
    return 2 * model.layers * model.kv_heads * model.head_dim * dtype.kv_bytes


def kv_cache_bytes(model: Model, dtype: DataType, tokens: float) -> float:
    return tokens * kv_bytes_per_token(model, dtype)


def prefill_linear_operations(model: Model, tokens: float) -> float:
    """Two operations per weight per token."""
    return 2 * model.parameters * tokens


def prefill_attention_operations(model: Model, tokens: float) -> float:
    """Causal attention: scores and weighted values, half of the N x N square each, per layer."""
    return 2 * model.layers * model.attention_width * tokens**2


def prefill(model: Model, dtype: DataType, tokens: float) -> Step:
    operations = prefill_linear_operations(model, tokens) + prefill_attention_operations(model, tokens)
    return Step(operations, weight_bytes(model, dtype) + kv_cache_bytes(model, dtype, tokens))


def prefill_attention_fraction(model: Model, tokens: float) -> float:
    attention = prefill_attention_operations(model, tokens)
    return attention / (attention + prefill_linear_operations(model, tokens))


def decode_step(model: Model, dtype: DataType, batch: int = 1, context: float = 0) -> Step:
    """One token for each of `batch` sequences, each rereading its own `context` cached tokens."""
    return Step(
        2 * model.parameters * batch,
        weight_bytes(model, dtype) + batch * kv_cache_bytes(model, dtype, context),
    )


def time_on(gpu: Gpu, dtype: DataType, step: Step) -> Timing:
    """The roofline: whichever of arithmetic and memory traffic takes longer."""
    return Timing(step, step.operations / peak_flops(gpu, dtype), step.bytes / gpu.bandwidth)


def decode_tokens_per_second(gpu: Gpu, model: Model, dtype: DataType, batch: int = 1, context: float = 0) -> float:
    return batch / time_on(gpu, dtype, decode_step(model, dtype, batch, context)).seconds


def latency(ttft_seconds: float, tpot_seconds: float, output_tokens: int) -> float:
    """What a user waits for a whole answer: TTFT + (n - 1) x TPOT."""
    return ttft_seconds + (output_tokens - 1) * tpot_seconds


def decode_intensity_limit(model: Model, dtype: DataType, context: float) -> float:
    """Decode's operations per byte as the batch grows without bound: 2P / (C x KV bytes).

    Each sequence brings its own cache, so batching cannot climb past this; infinite at C = 0.
    """
    per_sequence_bytes = kv_cache_bytes(model, dtype, context)
    return math.inf if per_sequence_bytes == 0 else 2 * model.parameters / per_sequence_bytes


def batch_size_at_ridge(gpu: Gpu, model: Model, dtype: DataType, context: float) -> int | None:
    """The smallest batch whose decode step reaches the ridge, or None if none ever does.

    Solves 2PB / (W + B C k) >= ridge for B:  B >= ridge W / (2P - ridge C k).
    """
    ridge = ridge_ops_per_byte(gpu, dtype)
    headroom = 2 * model.parameters - ridge * kv_cache_bytes(model, dtype, context)
    if headroom <= 0:
        return None
    batch = math.ceil(ridge * weight_bytes(model, dtype) / headroom)
    # Guard against rounding at the boundary.
    while decode_step(model, dtype, batch, context).ops_per_byte < ridge:
        batch += 1
    return batch


@dataclass(frozen=True)
class Comparison:
    """How `gpu` compares with `other`, as ratios gpu / other (above 1: `gpu` has more)."""

    flops_ratio: float
    bandwidth_ratio: float
    decode_speedup: float
    prefill_speedup: float


def compare(gpu: Gpu, other: Gpu, model: Model, dtype: DataType, prompt_tokens: float) -> Comparison:
    return Comparison(
        flops_ratio=peak_flops(gpu, dtype) / peak_flops(other, dtype),
        bandwidth_ratio=gpu.bandwidth / other.bandwidth,
        decode_speedup=decode_tokens_per_second(gpu, model, dtype) / decode_tokens_per_second(other, model, dtype),
        prefill_speedup=time_on(other, dtype, prefill(model, dtype, prompt_tokens)).seconds
        / time_on(gpu, dtype, prefill(model, dtype, prompt_tokens)).seconds,
    )


def memory_needed(model: Model, dtype: DataType, kv_tokens: float) -> float:
    """Weights plus the KV cache of `kv_tokens` tokens (activations and workspace ignored)."""
    return weight_bytes(model, dtype) + kv_cache_bytes(model, dtype, kv_tokens)


def check_fits(gpu: Gpu, model: Model, dtype: DataType, kv_tokens: float, purpose: str = "") -> None:
    """Refuse a model that cannot be held in one GPU's memory, saying by how much."""
    needed = memory_needed(model, dtype, kv_tokens)
    if needed <= gpu.memory_bytes:
        return
    kv = kv_cache_bytes(model, dtype, kv_tokens)
    for_what = f" for {purpose}" if purpose else ""
    raise FilmError(
        f"{model.name} in {dtype.name} does not fit on one {gpu.name}: it needs "
        f"{needed / 1e9:.1f} GB ({weight_bytes(model, dtype) / 1e9:.1f} GB of weights + "
        f"{kv / 1e9:.1f} GB of KV cache{for_what}), and the GPU has "
        f"{gpu.memory_bytes / 1e9:.1f} GB ({gpu.memory_gib:g} GiB)."
    )
