"""The roofline model of LLM inference: every number the film shows, from specs alone.

Pure maths (no Manim, no files). Units are SI throughout: seconds, bytes, operations
(one multiply-add is two operations), FLOP/s and bytes/s. A `Deployment` is a model in a data
type, tensor-parallel over T GPUs, each with peak F, bandwidth M and interconnect bandwidth β
(one direction) and all-reduce latency α.

    time  = max(operations per GPU / F, bytes per GPU / M) + communication   (no overlap assumed)
    ridge = F / M                                                  (operations per byte, per GPU)
    P_active: parameters a token uses (all of them for a dense model); W: weight bytes
    k: KV bytes per token; per GPU k_T = k ceil(kv_heads / T) / kv_heads (heads are split, and
       replicated when T exceeds them; latent attention's one shared latent is not split)
    W_read(n): the weight bytes n tokens read; for a mixture of experts (E experts, K per token),
       shared weights + L_moe E (1 - (1 - K/E)^n) x expert bytes, the experts n tokens touch; every
       row of the input embedding table (the source's convention), or, where the deployment says so,
       only the n rows its tokens gather (V - n rows fewer, for an untied table of V rows)
    prefill of N tokens:   operations = 2 P_active N + 2 L (heads x head_dim) N^2, split over T
                           bytes/GPU  = W_read(N) / T + N k_T (the cache it writes)
    decode step, batch B, C cached tokens per sequence:
                           operations = 2 P_active B, split over T
                           bytes/GPU  = W_read(B) / T + B C k_T
    a serving step (forward_step): B decodes over C cached tokens in all, and prefill chunks of n new tokens after
    c cached: the two above added, n tokens costing 2 P_active n + 2 L (heads x head_dim) ((c + n)^2 - c^2) and
    (c + n) k_T; the weights read once for all the step's tokens
    communication of n tokens (two all-reduces a layer, ring):
                           2 L (α + 2 (T - 1) / T x n d a / β), a = 2 activation bytes; 0 for T = 1
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from render.errors import DoesNotFit, FilmError
from render.specs.architecture import count_parameters
from render.specs.types import DataType, Deployment, Gpu, Model

ACTIVATION_BYTES = 2  # BF16 activations cross the interconnect whatever the weights' format
LARGEST_GPU_COUNT = 8  # one server: what "the smallest GPU count that fits" searches


@dataclass(frozen=True)
class Step:
    """One forward pass: the work it does, the bytes each GPU moves and the tokens it carries."""

    operations: float      # the whole step, all GPUs together
    bytes: float           # what each GPU reads from (and writes to) its memory
    tokens: float = 1      # tokens passing through: what the all-reduces carry
    gpus: int = 1
    prefilling: bool = False  # a prompt's tokens pass through (the GPU's prefill overlap; else decode's)

    @property
    def operations_per_gpu(self) -> float:
        return self.operations / self.gpus

    @property
    def ops_per_byte(self) -> float:
        """Arithmetic intensity on each GPU: where the step sits on one GPU's roofline."""
        return self.operations_per_gpu / self.bytes


@dataclass(frozen=True)
class Timing:
    """A step on its GPUs: how long each resource needs, which one limits it, and the all-reduces."""

    step: Step
    compute_seconds: float
    memory_seconds: float
    communication_seconds: float = 0.0
    overlap: float = 1.0  # the GPU's (Gpu.overlap): 1, the shorter of the two hides under the longer

    @property
    def seconds(self) -> float:
        return step_seconds(self.compute_seconds, self.memory_seconds, self.communication_seconds, self.overlap)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_seconds >= self.memory_seconds else "memory"

    @property
    def communication_fraction(self) -> float:
        return self.communication_seconds / self.seconds


def step_seconds(compute: float, memory: float, communication: float, overlap: float) -> float:
    """The longer of arithmetic and memory traffic, the shorter's part not hidden under it, and the all-reduces."""
    longer, shorter = (compute, memory) if compute >= memory else (memory, compute)
    return longer + (1 - overlap) * shorter + communication


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


@functools.lru_cache(maxsize=256)  # (a serving simulation asks it for every step; a model is frozen)
def active_parameters(model: Model) -> float:
    """What one token computes with: the published total less the routed experts it skips."""
    count = count_parameters(model)
    return model.parameters - (count.total - count.active)


SIXTEEN_BIT_BYTES = 2


def embedding_parameters(model: Model) -> int:
    """The input embedding table and the output head (one matrix when they are tied)."""
    return model.vocab_size * model.hidden_size * (1 if model.tied_embeddings else 2)


def weight_bytes(model: Model, dtype: DataType, embeddings_in_format: bool | None = None) -> float:
    """Every parameter in the data type's format, except the embeddings and output head where the data type keeps
    them at 16 bits (`embeddings_in_format`: the data type's own setting unless given)."""
    kept = dtype.embeddings_in_format if embeddings_in_format is None else embeddings_in_format
    if kept or dtype.bytes_per_weight >= SIXTEEN_BIT_BYTES:
        return model.parameters * dtype.bytes_per_weight
    embeddings = embedding_parameters(model)
    return (model.parameters - embeddings) * dtype.bytes_per_weight + embeddings * SIXTEEN_BIT_BYTES


def experts_touched(model: Model, tokens: float) -> float:
    """Distinct experts per MoE layer that `tokens` tokens use, each picking K of E at random:
    E (1 - (1 - K/E)^n). K for one token, all E for many."""
    if not model.is_moe:
        return 0.0
    if tokens <= 0:
        return 0.0
    return model.experts * (1 - (1 - model.experts_per_token / model.experts) ** tokens)


def input_embedding_bytes(model: Model, dtype: DataType) -> float:
    """The input embedding table's bytes (in the data type's format, or at 16 bits where it keeps them so)."""
    per_weight = dtype.bytes_per_weight if dtype.embeddings_in_format else max(dtype.bytes_per_weight,
                                                                                SIXTEEN_BIT_BYTES)
    return model.vocab_size * model.hidden_size * per_weight


def rows_not_gathered(model: Model, dtype: DataType, tokens: float) -> float:
    """The input embedding table's bytes a step of `tokens` tokens does not read when it gathers its rows (nothing
    where the table is the output head too, which is read whole)."""
    if model.tied_embeddings:
        return 0.0
    return input_embedding_bytes(model, dtype) * max(0.0, 1 - tokens / model.vocab_size)


def weight_bytes_read(model: Model, dtype: DataType, tokens: float, embedding_rows: bool = False) -> float:
    """W_read(n): the weight bytes a step of `tokens` tokens reads (all of them for a dense model, unless it gathers
    only its rows of the input embedding table: `embedding_rows`)."""
    gathered = rows_not_gathered(model, dtype, tokens) if embedding_rows else 0.0
    if not model.is_moe:
        return weight_bytes(model, dtype) - gathered
    count = count_parameters(model)
    shared = model.parameters - count.routed  # the published total's rounding counts as shared
    expert_reads = count.moe_layers * experts_touched(model, tokens) * count.per_expert
    return (shared + expert_reads) * dtype.bytes_per_weight + weight_bytes(model, dtype) \
        - model.parameters * dtype.bytes_per_weight - gathered  # (embeddings kept at 16 bits, where they are)


def kv_bytes_per_token(model: Model, dtype: DataType) -> float:
    """Keys and values for every layer and KV head; latent attention caches one latent and a rotary key."""
    if model.is_mla:
        return model.layers * (model.kv_lora_rank + model.qk_rope_head_dim) * dtype.kv_bytes
    return 2 * model.layers * model.kv_heads * model.head_dim * dtype.kv_bytes


def kv_bytes_per_token_per_gpu(model: Model, dtype: DataType, gpus: int) -> float:
    """k_T: the KV heads are split over the GPUs (and replicated when there are more GPUs than heads)."""
    whole = kv_bytes_per_token(model, dtype)
    if model.is_mla or gpus == 1:
        return whole
    return whole * math.ceil(model.kv_heads / gpus) / model.kv_heads


def kv_cache_bytes(model: Model, dtype: DataType, tokens: float) -> float:
    return tokens * kv_bytes_per_token(model, dtype)


def prefill_linear_operations(model: Model, tokens: float) -> float:
    """Two operations per weight a token uses, per token."""
    return 2 * active_parameters(model) * tokens


def prefill_attention_operations(model: Model, tokens: float) -> float:
    """Causal attention: scores and weighted values, half of the N x N square each, per layer."""
    return 2 * model.layers * model.attention_width * tokens**2


def prefill_attention_fraction(model: Model, tokens: float) -> float:
    attention = prefill_attention_operations(model, tokens)
    return attention / (attention + prefill_linear_operations(model, tokens))


def forward_step(deployment: Deployment, decodes: int = 0, decode_context: float = 0,
                 chunks: tuple[tuple[float, float], ...] = ()) -> Step:
    """One forward pass of a serving engine's batch: `decodes` sequences making a token each, rereading
    `decode_context` cached tokens between them, and prefill `chunks`, each (new tokens, tokens of its prompt already
    cached). A chunk's attention is the part of its prompt's causal square it adds; it reads the cache before it and
    writes its own. A prefill is one whole chunk, a decode step decodes alone: both are this formula."""
    return Stepper(deployment).step(decodes, decode_context, chunks)


class Stepper:
    """forward_step and time_on for one deployment, its constants worked out once: a serving simulation asks for
    hundreds of thousands of steps of the same deployment (render/serving/costs.py), each the same arithmetic in the
    same order as forward_step and time_on give (they are this)."""

    def __init__(self, deployment: Deployment):
        model, dtype, gpu = deployment.model, deployment.dtype, deployment.gpu
        self.deployment = deployment
        self.gpus = deployment.gpus
        self.model = model
        self.linear = prefill_linear_operations(model, 1)    # operations a token's weights need (2 P_active)
        self.kv_per_gpu = kv_bytes_per_token_per_gpu(model, dtype, deployment.gpus)
        self.peak, self.bandwidth = peak_flops(gpu, dtype), gpu.bandwidth
        self.overlap, self.decode_overlap = gpu.step_overlap(True), gpu.step_overlap(False)
        self._weights: dict[float, float] = {}               # tokens -> W_read(tokens) / T
        self._communication: dict[float, float] = {}         # tokens -> the step's all-reduces' seconds

    def weights_per_gpu(self, tokens: float) -> float:
        found = self._weights.get(tokens)
        if found is None:
            d = self.deployment
            found = self._weights[tokens] = weight_bytes_read(d.model, d.dtype, tokens, d.embedding_rows) / self.gpus
        return found

    def work(self, decodes: int, decode_context: float, chunks: tuple[tuple[float, float], ...]) -> tuple:
        """The step's (operations, bytes per GPU, tokens)."""
        tokens = decodes + sum(new for new, _ in chunks)
        operations = self.linear * tokens
        cached = decode_context
        for new, before in chunks:
            operations += prefill_attention_operations(self.model, before + new) \
                - prefill_attention_operations(self.model, before)
            cached += before + new
        return operations, self.weights_per_gpu(tokens) + cached * self.kv_per_gpu, tokens

    def step(self, decodes: int = 0, decode_context: float = 0, chunks: tuple[tuple[float, float], ...] = ()) -> Step:
        return Step(*self.work(decodes, decode_context, chunks), self.gpus, bool(chunks))

    def seconds(self, decodes: int = 0, decode_context: float = 0,
                chunks: tuple[tuple[float, float], ...] = ()) -> float:
        """time_on(deployment, forward_step(deployment, …)).seconds."""
        operations, per_gpu, tokens = self.work(decodes, decode_context, chunks)
        communication = self._communication.get(tokens)
        if communication is None:
            communication = self._communication[tokens] = communication_seconds(self.deployment, tokens)
        return step_seconds(operations / self.gpus / self.peak, per_gpu / self.bandwidth, communication,
                            self.overlap if chunks else self.decode_overlap)


def prefill(deployment: Deployment, tokens: float) -> Step:
    return forward_step(deployment, chunks=((tokens, 0),))


def decode_step(deployment: Deployment, batch: int = 1, context: float = 0) -> Step:
    """One token for each of `batch` sequences, each rereading its own `context` cached tokens."""
    return forward_step(deployment, decodes=batch, decode_context=batch * context)


def communication_seconds(deployment: Deployment, tokens: float) -> float:
    """Tensor parallelism's two all-reduces per layer (after attention and after the MLP), each a
    fixed latency plus a ring's 2 (T - 1) / T of the activations over one GPU's link."""
    gpus = deployment.gpus
    if gpus == 1:
        return 0.0
    gpu, model = deployment.gpu, deployment.model
    transfer = 2 * (gpus - 1) / gpus * tokens * model.hidden_size * ACTIVATION_BYTES / gpu.interconnect_bandwidth
    return 2 * model.layers * (gpu.allreduce_latency_seconds + transfer)


def achieved(gpu: Gpu, compute: float, memory: float, overlap: float = 1.0, decode_overlap: float | None = None) -> Gpu:
    """The GPU as a deployment reaches it: `compute` of its peak arithmetic and `memory` of its bandwidth (the
    interconnect as it is), `overlap` of the shorter of the two hidden under the longer (1, the roofline's ideal) in a
    step carrying a prompt, `decode_overlap` in one that only decodes (None: the same). Every formula run on it gives
    expected figures rather than ceilings."""
    return replace(gpu, bf16_flops=gpu.bf16_flops * compute,
                   fp8_flops=None if gpu.fp8_flops is None else gpu.fp8_flops * compute,
                   bandwidth=gpu.bandwidth * memory, overlap=overlap, decode_overlap=decode_overlap)


def time_on(deployment: Deployment, step: Step) -> Timing:
    """The roofline: whichever of arithmetic and memory traffic takes longer (and the part of the other the GPU does
    not overlap with it: none at the ceilings), then the all-reduces."""
    gpu, dtype = deployment.gpu, deployment.dtype
    return Timing(step, step.operations_per_gpu / peak_flops(gpu, dtype), step.bytes / gpu.bandwidth,
                  communication_seconds(deployment, step.tokens), gpu.step_overlap(step.prefilling))


def decode_tokens_per_second(deployment: Deployment, batch: int = 1, context: float = 0) -> float:
    return batch / time_on(deployment, decode_step(deployment, batch, context)).seconds


def latency(ttft_seconds: float, tpot_seconds: float, output_tokens: int) -> float:
    """What a user waits for a whole answer: TTFT + (n - 1) x TPOT."""
    return ttft_seconds + (output_tokens - 1) * tpot_seconds


def decode_intensity_limit(deployment: Deployment, context: float) -> float:
    """Decode's operations per byte on each GPU as the batch grows without bound:
    2 P_active / (T C k_T). Each sequence brings its own cache, so batching cannot climb past
    this; infinite at C = 0."""
    model, dtype, gpus = deployment.model, deployment.dtype, deployment.gpus
    per_sequence_bytes = context * kv_bytes_per_token_per_gpu(model, dtype, gpus)
    return math.inf if per_sequence_bytes == 0 else 2 * active_parameters(model) / gpus / per_sequence_bytes


LARGEST_BATCH = 10**9


def batch_size_at_ridge(deployment: Deployment, context: float) -> int | None:
    """The smallest batch whose decode step reaches the ridge, or None if none ever does.

    Intensity grows with the batch (towards `decode_intensity_limit`), so the answer is found by
    bisection; for a dense model it is the closed form B >= ridge W / (2P - ridge T C k_T)."""
    ridge = ridge_ops_per_byte(deployment.gpu, deployment.dtype)
    if decode_intensity_limit(deployment, context) <= ridge:
        return None

    def reaches(batch: int) -> bool:
        return decode_step(deployment, batch, context).ops_per_byte >= ridge

    high = 1
    while not reaches(high):
        high *= 2
        if high > LARGEST_BATCH:
            return None
    low = high // 2  # reaches(low) is false, or low is 0
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return high


@dataclass(frozen=True)
class Comparison:
    """How `gpu` compares with `other` (as many of each), as ratios gpu / other (above 1: `gpu` has more)."""

    flops_ratio: float
    bandwidth_ratio: float
    decode_speedup: float
    prefill_speedup: float


def compare(deployment: Deployment, other: Gpu, prompt_tokens: float) -> Comparison:
    theirs = deployment.on(other)
    gpu, dtype = deployment.gpu, deployment.dtype
    return Comparison(
        flops_ratio=peak_flops(gpu, dtype) / peak_flops(other, dtype),
        bandwidth_ratio=gpu.bandwidth / other.bandwidth,
        decode_speedup=decode_tokens_per_second(deployment) / decode_tokens_per_second(theirs),
        prefill_speedup=time_on(theirs, prefill(theirs, prompt_tokens)).seconds
        / time_on(deployment, prefill(deployment, prompt_tokens)).seconds,
    )


def memory_needed_per_gpu(deployment: Deployment, kv_tokens: float) -> float:
    """Each GPU's share of the weights plus its share of `kv_tokens` tokens of KV cache
    (activations and workspace ignored)."""
    model, dtype, gpus = deployment.model, deployment.dtype, deployment.gpus
    return weight_bytes(model, dtype) / gpus + kv_tokens * kv_bytes_per_token_per_gpu(model, dtype, gpus)


def fits(deployment: Deployment, kv_tokens: float) -> bool:
    return (deployment.model.attention_heads % deployment.gpus == 0
            and memory_needed_per_gpu(deployment, kv_tokens) <= deployment.gpu.memory_bytes)


def smallest_gpu_count(deployment: Deployment, kv_tokens: float, largest: int = LARGEST_GPU_COUNT) -> int | None:
    """The fewest GPUs (that divide the heads) this deployment fits on, up to `largest`; None if none."""
    for gpus in range(1, largest + 1):
        if fits(replace(deployment, gpus=gpus), kv_tokens):
            return gpus
    return None


def check_gpu_count(deployment: Deployment) -> None:
    gpus, heads = deployment.gpus, deployment.model.attention_heads
    if gpus < 1:
        raise FilmError(f"GPUS={gpus}: a deployment needs at least one GPU")
    if heads % gpus:
        divisors = [t for t in range(1, LARGEST_GPU_COUNT + 1) if heads % t == 0]
        raise DoesNotFit(f"GPUS={gpus} does not divide {deployment.model.name}'s {heads} attention heads, so tensor "
                        f"parallelism cannot split them evenly; use GPUS={' or '.join(map(str, divisors))}")


def check_fits(deployment: Deployment, kv_tokens: float, purpose: str = "") -> None:
    """Refuse a deployment that cannot be held in its GPUs' memory, saying by how much."""
    check_gpu_count(deployment)
    needed = memory_needed_per_gpu(deployment, kv_tokens)
    gpu, model, dtype, gpus = deployment.gpu, deployment.model, deployment.dtype, deployment.gpus
    if needed <= gpu.memory_bytes:
        return
    kv = kv_tokens * kv_bytes_per_token_per_gpu(model, dtype, gpus)
    for_what = f" for {purpose}" if purpose else ""
    on = f"one {gpu.name}" if gpus == 1 else f"{gpus} × {gpu.name}"
    each = "" if gpus == 1 else " per GPU"
    raise DoesNotFit(
        f"{model.name} in {dtype.name} does not fit on {on}: it needs "
        f"{needed / 1e9:.1f} GB{each} ({weight_bytes(model, dtype) / gpus / 1e9:.1f} GB of weights + "
        f"{kv / 1e9:.1f} GB of KV cache{for_what}), and the GPU has "
        f"{gpu.memory_bytes / 1e9:.1f} GB ({gpu.memory_gib:g} GiB)."
    )
