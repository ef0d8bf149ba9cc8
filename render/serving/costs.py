"""What a serving step costs, from the roofline module alone (render/specs/roofline.py): no second set of formulas.

A step's seconds are `rl.time_on(rl.forward_step(…))` on the deployment as it runs (at its ceilings, or at the
shares `EFFICIENCY=` gives), plus a fixed overhead per step (the engine's scheduling, 0 unless given). A run of k
decode steps over the same sequences is the same sum in closed form: each step reads the weights once and every
sequence's cache, which grows by one token a sequence a step, so its memory time is a line in the step's index and
its arithmetic a constant; the roofline takes the larger of the two at every step.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from render.errors import FilmError
from render.specs import roofline as rl
from render.specs.types import Deployment


@dataclass(frozen=True)
class Costs:
    deployment: Deployment          # as it runs: its GPU at the achieved shares where an efficiency is given
    step_overhead: float = 0.0      # seconds each step spends outside the roofline (scheduling, launches)
    request_overhead: float = 0.0   # seconds each request waits outside the engine (network, template): TTFT's

    @classmethod
    def of(cls, deployment: Deployment, compute: float = 1.0, memory: float = 1.0, request_overhead: float = 0.0,
           step_overhead: float = 0.0, overlap: float = 1.0, decode_overlap: float | None = None) -> "Costs":
        gpu = deployment.gpu if (compute, memory, overlap, decode_overlap) == (1.0, 1.0, 1.0, None) \
            else rl.achieved(deployment.gpu, compute, memory, overlap, decode_overlap)
        return cls(replace(deployment, gpu=gpu), step_overhead, request_overhead)

    def step(self, decodes: int = 0, decode_context: float = 0, chunks: tuple[tuple[int, int], ...] = ()) -> float:
        """One step's seconds: `decodes` sequences over `decode_context` cached tokens in all, and prefill chunks."""
        return self.stepper.seconds(decodes, decode_context, chunks) + self.step_overhead

    @functools.cached_property
    def stepper(self) -> rl.Stepper:
        return rl.Stepper(self.deployment)  # (rl.time_on(…, rl.forward_step(…)), its constants worked out once)

    @functools.cached_property
    def kv_bytes_per_token_per_gpu(self) -> float:
        d = self.deployment
        return rl.kv_bytes_per_token_per_gpu(d.model, d.dtype, d.gpus)

    @functools.cached_property
    def _terms(self) -> dict[int, tuple[float, float, float, float]]:
        return {}

    def decode_terms(self, batch: int) -> tuple[float, float, float, float]:
        """For a decode step of `batch` sequences: (arithmetic seconds, weight seconds, seconds per cached token,
        fixed seconds: the all-reduces and the step overhead), each exactly as rl.time_on computes it."""
        known = self._terms.get(batch)
        if known is not None:
            return known
        d = self.deployment
        step = rl.decode_step(d, batch, 0)
        timing = rl.time_on(d, step)
        self._terms[batch] = terms = (timing.compute_seconds, timing.memory_seconds,
                                      self.kv_bytes_per_token_per_gpu / d.gpu.bandwidth,
                                      timing.communication_seconds + self.step_overhead)
        return terms

    def decode_run(self, batch: int, context: float, steps: int) -> float:
        """Seconds of `steps` decode steps of `batch` sequences whose caches start at `context` tokens in all and
        grow by `batch` a step: sum over j < steps of max(a, m_j) + (1 - overlap)·min(a, m_j) + fixed, where a is
        the arithmetic's seconds and m_j = (W + (context + j·batch)·k) / M the memory traffic's."""
        if steps <= 0:
            return 0.0
        compute, weights, per_token, fixed = self.decode_terms(batch)
        hidden = 1 - self.deployment.gpu.step_overlap(False)  # the shorter part's share not hidden under the longer
        start = weights + context * per_token  # the first step's memory seconds (bytes / bandwidth, as time_on)
        rise = batch * per_token
        # Steps before `crossing` are bound by arithmetic, the rest by memory traffic.
        if rise <= 0:
            crossing = steps if compute > start else 0
        else:
            crossing = min(steps, max(0, math.ceil((compute - start) / rise))) if compute > start else 0
        memory_steps = steps - crossing
        early = crossing * start + rise * crossing * (crossing - 1) / 2  # memory seconds of steps 0 … crossing-1
        late = memory_steps * start + rise * (crossing + steps - 1) * memory_steps / 2  # of crossing … steps-1
        return crossing * compute + hidden * early + late + hidden * memory_steps * compute + steps * fixed

    def decode_step_seconds(self, terms, context, index, batch) -> np.ndarray:
        """Decode steps' seconds one at a time (decode_run's terms: max(a, m_j) + (1 - overlap)·min(a, m_j) + fixed,
        m_j = (W + (context + j·batch)·k) / M), for arrays alike of decode_terms' four, cached contexts, step indices j
        and batches (or one run's, broadcast)."""
        compute, weights, per_token, fixed = terms
        memory = weights + (context + index * batch) * per_token
        hidden = 1 - self.deployment.gpu.step_overlap(False)
        return np.maximum(compute, memory) + hidden * np.minimum(compute, memory) + fixed

    def decode_step_ends(self, batch: int, context: float, steps: int) -> np.ndarray:
        """When each of `steps` decode steps ends, in seconds from the first one's start: the times the batch's tokens
        come out."""
        return np.cumsum(self.decode_step_seconds(self.decode_terms(batch), context, np.arange(steps), batch))

    def steps_until(self, batch: int, context: float, seconds: float, most: int) -> int:
        """The fewest decode steps (at least 1, at most `most`) that take `seconds` or more: a run stops at the first
        step boundary after a moment (an arrival) the scheduler must see."""
        if self.decode_run(batch, context, most) < seconds:
            return most
        low, high = 1, most
        while low < high:
            middle = (low + high) // 2
            if self.decode_run(batch, context, middle) >= seconds:
                high = middle
            else:
                low = middle + 1
        return low

    def transfer(self, tokens: int) -> float:
        """Seconds to send `tokens` tokens of KV cache to another group of GPUs: each GPU its share, over its link."""
        return tokens * self.kv_bytes_per_token_per_gpu / self.deployment.gpu.interconnect_bandwidth


BLOCK_TOKENS = 16  # a KV block's tokens (vLLM's default)


class CacheTooSmall(FilmError):
    """A request of `prompt` and `answer` tokens that a KV cache of `held` tokens cannot hold: the message names the
    command's settings; a page says it in a reader's words from the same three numbers."""

    def __init__(self, message: str, prompt: int = 0, answer: int = 0, held: int = 0):
        super().__init__(message)
        self.prompt, self.answer, self.held = prompt, answer, held


def kv_blocks(deployment: Deployment, block_tokens: int = BLOCK_TOKENS, memory_share: float = 0.9) -> int:
    """The KV cache's capacity in blocks of `block_tokens` tokens (as vLLM's paged cache): each GPU's memory at
    `memory_share` (the rest is activations, workspace, the CUDA context), less its share of the weights, at the KV
    format's bytes per token (Vidur's memory planner, with the roofline's bytes)."""
    model, dtype, gpus = deployment.model, deployment.dtype, deployment.gpus
    free = deployment.gpu.memory_bytes * memory_share - rl.weight_bytes(model, dtype) / gpus
    per_block = block_tokens * rl.kv_bytes_per_token_per_gpu(model, dtype, gpus)
    return max(0, int(free // per_block))
