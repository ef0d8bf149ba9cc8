"""A workload served by a deployment under a scheduler: every request's arrival, first token and last token.

Seeded and deterministic: the same requests, deployment and scheduler give the same result, bit for bit. The
figures a load test reports (render/serving/metrics.py) are read from what this returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from render.errors import FilmError
from render.serving.costs import BLOCK_TOKENS, CacheTooSmall, Costs, kv_blocks
from render.serving.engine import Instance, Sequence
from render.serving.schedulers import Continuous, Disaggregated, Scheduler
from render.serving.watch import Watch
from render.serving.workload import Request



TOKENS_KEPT = 10_000_000  # a run's tokens whose times are kept (80 MB of gaps): past it, no ITL


@dataclass(frozen=True)
class Served:
    """What happened to each request (arrays in the workload's order; seconds from its start)."""

    arrival: np.ndarray
    first_token: np.ndarray      # when its first token left the engine (before the request's own overhead)
    finish: np.ndarray           # when its last did
    prompt_tokens: np.ndarray
    answer_tokens: np.ndarray
    preemptions: np.ndarray
    generated: np.ndarray        # tokens each request's answer was given (pre-empted ones are not given again)
    request_overhead: float      # each request's wait outside the engine (network, template): in TTFT and end-to-end
    scheduler: str
    capacity_blocks: int
    itl: np.ndarray = field(default_factory=lambda: np.zeros(0))  # every gap between two of a request's tokens, in
    itl_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # order; and each request's count
    itl_kept: bool = True  # False: a run of more than TOKENS_KEPT tokens, whose tokens' times are not kept

    def request_itl(self, index: int) -> np.ndarray:
        """The gaps between request `index`'s tokens."""
        starts = self.itl_starts
        return self.itl[starts[index]:starts[index] + self.itl_counts[index]]

    @property
    def itl_starts(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.itl_counts)[:-1])) if len(self.itl_counts) else self.itl_counts

    @property
    def ttft(self) -> np.ndarray:
        return self.first_token - self.arrival + self.request_overhead

    @property
    def e2e(self) -> np.ndarray:
        return self.finish - self.arrival + self.request_overhead

    @property
    def tpot(self) -> np.ndarray:
        """Seconds per output token after the first, for the requests with more than one."""
        many = self.answer_tokens > 1
        return (self.finish[many] - self.first_token[many]) / (self.answer_tokens[many] - 1)


def simulate(requests: tuple[Request, ...], costs: Costs, scheduler: Scheduler, capacity_blocks: int | None = None,
             block_tokens: int = BLOCK_TOKENS, watch: Watch | None = None) -> Served:
    """Serve `requests` (in arrival order) on one instance of the deployment, or, disaggregated, on its prefill and
    decode instances. `watch`: told of every step (progress past a few seconds, and a bound)."""
    if not requests:
        raise FilmError("a load needs at least one request")
    capacity = kv_blocks(costs.deployment, block_tokens) if capacity_blocks is None else capacity_blocks
    largest = max(requests, key=lambda request: request.prompt_tokens + request.answer_tokens)
    held = capacity * block_tokens
    if (largest.prompt_tokens + largest.answer_tokens + 1) > held:
        raise CacheTooSmall(f"a request of {largest.prompt_tokens:,} prompt and {largest.answer_tokens:,} answer "
                            f"tokens needs more KV cache than the deployment holds ({held:,} tokens after the "
                            f"weights): give shorter lengths, more GPUS= or a KV_DTYPE= that takes less",
                            largest.prompt_tokens, largest.answer_tokens, held)
    sequences = [Sequence(index, request.arrival, request.prompt_tokens, request.answer_tokens)
                 for index, request in enumerate(requests)]
    if isinstance(scheduler, Disaggregated):
        times = serve_disaggregated(sequences, costs, scheduler, capacity, block_tokens, watch)
    else:
        instance = Instance(costs, capacity, block_tokens, scheduler.max_seqs, scheduler.max_batched_tokens,
                            sequences)
        while scheduler.step(instance):
            if watch is not None:
                watch.tick(len(instance.running))

        def times() -> list[np.ndarray]:
            return [instance.token_times(seq) for seq in sequences]
    kept = sum(seq.generated for seq in sequences) <= TOKENS_KEPT
    gaps, counts = token_gaps(times()) if kept else (np.zeros(0), np.zeros(len(sequences), int))
    return Served(np.array([seq.arrival for seq in sequences]), np.array([seq.first_token for seq in sequences]),
                  np.array([seq.finish for seq in sequences]), np.array([seq.prompt for seq in sequences]),
                  np.array([seq.answer for seq in sequences]), np.array([seq.preemptions for seq in sequences]),
                  np.array([seq.generated for seq in sequences]), costs.request_overhead, scheduler.name, capacity,
                  gaps, counts, kept)


def token_gaps(times: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Every gap between two tokens of one request, request after request, and how many each request has: each
    request's np.diff, made as one difference of all the times with those across two requests left out."""
    lengths = np.array([len(each) for each in times], dtype=int)
    joined = np.concatenate(times) if times else np.zeros(0)
    starts = np.cumsum(lengths) - lengths  # each request's first token
    across = np.zeros(max(len(joined) - 1, 0), dtype=bool)
    across[starts[(starts > 0) & (starts < len(joined))] - 1] = True  # (a request's last token to the next's first)
    return np.diff(joined)[~across], np.maximum(lengths - 1, 0)


class PrefillOnly(Continuous):
    """A prefill instance's policy: prefills as the continuous policy takes them; each sequence leaves with its
    first token (its answer, for this instance, is one token)."""


@dataclass(frozen=True)
class DecodeOnly(Continuous):
    """A decode instance's policy: a sequence arrives with its prompt's cache (sent from a prefill instance) and its
    first token, and joins the decoding sequences at the next step boundary where a slot and the blocks are free."""

    def step(self, instance: Instance) -> bool:
        instance.arrive()
        while instance.waiting and len(instance.running) < self.max_seqs:
            seq = instance.waiting[0]
            if seq.to_prefill:  # pre-empted here: its cache is computed again on this instance
                if not instance.admit(seq):
                    break
                instance.waiting.popleft()
                instance.prefill_step([(seq, seq.to_prefill)], decodes=False)
                return True
            if not instance.admit(seq, seq.prompt + seq.generated):
                break
            instance.waiting.popleft()
            instance.join(seq)
        return self.decode_or_wait(instance)


def serve_disaggregated(sequences: list[Sequence], costs: Costs, scheduler: Disaggregated, capacity: int,
                        block_tokens: int, watch: Watch | None = None) -> Callable[[], list[np.ndarray]]:
    """Prefill instances take the requests in turn (round robin, by arrival); each prefilled request's cache is sent
    to a decode instance (in turn), which it joins when the transfer is done. Returns what gives each request's token
    times (asked only of a run whose times are kept)."""
    size = costs.deployment.gpus
    for flag, gpus in (("--prefill-gpus", scheduler.prefill_gpus), ("--decode-gpus", scheduler.decode_gpus)):
        if gpus < size or gpus % size:
            raise FilmError(f"{flag} {gpus}: give a multiple of the deployment's {size} GPU"
                            f"{'s' if size > 1 else ''} (each instance holds the whole model)")
    prefill_instances, decode_instances = scheduler.prefill_gpus // size, scheduler.decode_gpus // size
    policy = PrefillOnly(scheduler.max_seqs, scheduler.max_batched_tokens)
    handed = []
    for number in range(prefill_instances):
        mine = [Sequence(seq.index, seq.arrival, seq.prompt, 1) for seq in sequences[number::prefill_instances]]
        instance = Instance(costs, capacity, block_tokens, scheduler.max_seqs, scheduler.max_batched_tokens, mine)
        while policy.step(instance):
            if watch is not None:
                watch.tick(len(instance.running))
        handed += mine
    for prefilled in handed:
        original = sequences[prefilled.index]
        original.first_token = prefilled.first_token
        original.preemptions = prefilled.preemptions
    decoding = [Sequence(seq.index, seq.first_token + costs.transfer(seq.prompt), seq.prompt, seq.answer, generated=1)
                for seq in sorted(sequences, key=lambda seq: (seq.first_token, seq.index))]
    for seq in decoding:
        seq.to_prefill = 0
    policy = DecodeOnly(scheduler.max_seqs, scheduler.max_batched_tokens)
    decoded: list[tuple[Instance, list[Sequence]]] = []
    for number in range(decode_instances):
        mine = decoding[number::decode_instances]
        instance = Instance(costs, capacity, block_tokens, scheduler.max_seqs, scheduler.max_batched_tokens, mine)
        while policy.step(instance):
            if watch is not None:
                watch.tick(len(instance.running))
        for seq in mine:
            sequences[seq.index].finish = seq.finish
            sequences[seq.index].generated = seq.generated
            sequences[seq.index].preemptions += seq.preemptions
        decoded.append((instance, mine))

    def times() -> list[np.ndarray]:
        found: list[np.ndarray] = [np.zeros(0)] * len(sequences)
        for instance, mine in decoded:
            for seq in mine:
                found[seq.index] = np.concatenate(([sequences[seq.index].first_token], instance.token_times(seq)))
        return found

    return times
