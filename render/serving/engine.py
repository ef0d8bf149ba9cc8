"""One serving instance (a group of GPUs holding the model) running a stream of requests, step by step.

The instance keeps what a serving engine keeps: a queue of waiting requests (first come, first served; a
pre-empted one goes back to its front), the sequences decoding, the prefills under way, and a KV cache of a fixed
number of blocks. Its scheduler (render/serving/schedulers.py) chooses each step: a prefill, a mix of prefill chunks
and decodes, or a run of decode steps, which the instance takes in one go up to the next moment anything can change
(a sequence finishing, an arrival it could admit, the cache filling). A growing decode that finds no free block
pre-empts the sequence admitted last, whose blocks are freed and whose prompt and tokens so far are computed again
when it is admitted again (vLLM's recompute), so every token is generated once.

Decoding sequences advance together, so their state is kept by the instance's step counter: a sequence that
joined at step s with g tokens has g + (now's step − s), and finishes at a step known when it joins. For the same
reason the blocks they hold are counted without visiting each: a sequence's cache is `base + step` tokens, where its
`base` is fixed while it decodes, so the instance keeps the bases' whole blocks and a count of their remainders (a
block's 16 tokens: 16 counts), and the blocks of all of them at any step are a sum over those 16 counts.
"""

from __future__ import annotations

import functools
import heapq
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from render.serving.costs import Costs


@dataclass(eq=False)
class Sequence:
    index: int             # the request's place in the workload
    arrival: float         # when it reaches this instance
    prompt: int
    answer: int
    generated: int = 0     # tokens emitted (while decoding: as of `joined`)
    to_prefill: int = 0    # tokens its (re)prefill computes; 0 once they are all in the cache
    prefilled: int = 0     # of those, computed so far (a chunked prefill goes in pieces)
    first_token: float | None = None
    finish: float | None = None
    joined: int = 0        # the instance's decode step when it joined the decoding sequences
    admitted: int = 0      # admission order: the last admitted is pre-empted first
    epoch: int = -1        # which of its joins the instance's finishing queue entry is for (a pre-empted one rejoins)
    preemptions: int = 0
    blocks: int = 0        # as admitted, or (decoding) as of the instance's last count where one came after its join
    base: int = 0          # while decoding: its cached tokens less the instance's step (constant as it decodes)
    counted: int = 0       # the instance's count of blocks when it joined (a later one counted it)
    marks: list = field(default_factory=list)  # its tokens, in order: a time, or (first, last) decode steps it took

    def __post_init__(self):
        self.to_prefill = self.to_prefill or self.prompt


class Instance:
    """The instance's state and the moves every scheduler is made of."""

    def __init__(self, costs: Costs, capacity_blocks: int, block_tokens: int, max_seqs: int,
                 max_batched_tokens: int, arrivals: list[Sequence]):
        self.costs = costs
        self.capacity = capacity_blocks
        self.watermark = max(1, capacity_blocks // 100)
        self.block_tokens = block_tokens
        self.max_seqs = max_seqs
        self.max_batched_tokens = max_batched_tokens
        self.pending = deque(sorted(arrivals, key=lambda seq: (seq.arrival, seq.index)))  # not yet arrived
        self.waiting: deque[Sequence] = deque()
        self.prefilling: list[Sequence] = []       # admitted, their prefill under way (chunked)
        self.running: dict[Sequence, None] = {}    # decoding, in admission order
        self.finishing: list[tuple[int, int, Sequence]] = []  # (decode step it finishes at, join, sequence)
        self.joins = 0
        self.now = 0.0
        self.steps = 0                 # decode steps taken
        self.context = 0               # the decoding sequences' cached tokens, all together
        self.used = 0                  # blocks held
        self.admissions = 0
        self.done: list[Sequence] = []
        self.whole_blocks = 0          # the decoding sequences' bases: their whole blocks, all together
        self.remainders = [0] * block_tokens  # how many decoding sequences' bases leave each remainder of a block
        self.counts = 0                # the decoding sequences' blocks counted (at the end of each decode run)
        self.counted_at = 0            # the step of the last count
        self.runs: list[tuple] = []    # each run of decode steps: (steps, start, end, batch, context), in order

    # -- what is there ----------------------------------------------------------------------------------------

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_tokens)

    def generated(self, seq: Sequence) -> int:
        return seq.generated + (self.steps - seq.joined)

    def arrive(self) -> None:
        while self.pending and self.pending[0].arrival <= self.now:
            self.waiting.append(self.pending.popleft())

    def next_arrival(self) -> float | None:
        return self.pending[0].arrival if self.pending else None

    def busy(self) -> bool:
        return bool(self.pending or self.waiting or self.prefilling or self.running)

    def idle_until_arrival(self) -> bool:
        """Nothing to do: the clock moves to the next arrival (False: nothing will arrive)."""
        if not self.pending:
            return False
        self.now = max(self.now, self.pending[0].arrival)
        self.arrive()
        return True

    # -- admission ----------------------------------------------------------------------------------------

    def admit(self, seq: Sequence, extra_tokens: int = 1) -> bool:
        """Reserve the blocks a sequence's prefill (and its next token) needs; False where they are not free, less
        a watermark of 1% left for the decoding sequences to grow into (vLLM's), so a pre-empted sequence is not
        admitted again into the room it has just given back."""
        need = self.blocks_for(seq.to_prefill + extra_tokens)
        if self.used + need > self.capacity - (self.watermark if self.running else 0):
            return False
        seq.blocks = need
        self.used += need
        seq.admitted = self.admissions
        self.admissions += 1
        return True

    def emit_first(self, seq: Sequence) -> None:
        """A prefill's last piece computed: the sequence's next token is out, and it decodes (or is done)."""
        seq.generated += 1
        seq.marks.append(self.now)
        seq.to_prefill = seq.prefilled = 0
        if seq.first_token is None:
            seq.first_token = self.now
        if seq.generated >= seq.answer:
            self.release(seq)
        else:
            self.join(seq)

    def join(self, seq: Sequence) -> None:
        seq.joined = self.steps
        self.running[seq] = None
        self.context += seq.prompt + seq.generated - 1
        seq.base = seq.prompt + seq.generated - self.steps
        seq.counted = self.counts
        whole, remainder = divmod(seq.base, self.block_tokens)
        self.whole_blocks += whole
        self.remainders[remainder] += 1
        seq.epoch = self.joins
        self.joins += 1
        heapq.heappush(self.finishing, (self.steps + seq.answer - seq.generated, seq.epoch, seq))

    def release(self, seq: Sequence) -> None:
        seq.finish = self.now
        self.used -= seq.blocks
        seq.blocks = 0
        self.done.append(seq)

    def leave_running(self, seq: Sequence) -> None:
        if self.counts > seq.counted:  # its blocks as the last count found them
            seq.blocks = -(-(seq.base + self.counted_at) // self.block_tokens)
        whole, remainder = divmod(seq.base, self.block_tokens)
        self.whole_blocks -= whole
        self.remainders[remainder] -= 1
        seq.generated = self.generated(seq)
        if self.steps > seq.joined:
            seq.marks.append((seq.joined + 1, self.steps))
        del self.running[seq]
        self.context -= seq.prompt + seq.generated - 1

    def running_blocks(self, step: int) -> int:
        """The blocks the decoding sequences hold at decode step `step`: each sequence's ceil((base + step) / 16),
        summed from the bases' whole blocks and the count of each remainder."""
        size = self.block_tokens
        whole, offset = divmod(step, size)
        decoding = len(self.running)
        total = self.whole_blocks + whole * decoding
        # ceil((remainder + offset) / size): 0 only for remainder and offset 0; 2 where their sum passes a block
        if offset == 0:
            return total + decoding - self.remainders[0]
        return total + decoding + sum(self.remainders[size + 1 - offset:])

    # -- steps ----------------------------------------------------------------------------------------------

    def prefill_step(self, chunks: list[tuple[Sequence, int]], decodes: bool) -> None:
        """One step: each chunk's tokens of its sequence's prefill, and (where `decodes`) one token of every
        decoding sequence."""
        batch = len(self.running) if decodes else 0
        work = tuple((tokens, seq.prefilled) for seq, tokens in chunks)
        self.now += self.costs.step(batch, self.context if batch else 0, work)
        if batch:
            self.runs.append((1, self.now, self.now, 0, 0))  # (one step: it ends now)
            self.steps += 1
            self.context += batch
            self.finish_due()
        for seq, tokens in chunks:
            seq.prefilled += tokens
            if seq.prefilled >= seq.to_prefill:
                if seq in self.prefilling:
                    self.prefilling.remove(seq)
                self.emit_first(seq)
        self.arrive()

    def decode_run(self, stop_at: float | None) -> None:
        """Decode steps of every decoding sequence, until one finishes, or the first step boundary after `stop_at`
        (an arrival the scheduler could admit), or the cache cannot hold another token (then a pre-emption)."""
        self.drop_stale()
        batch = len(self.running)
        most = self.finishing[0][0] - self.steps
        if stop_at is not None:
            most = min(most, self.costs.steps_until(batch, self.context, stop_at - self.now, most))
        most = self.steps_that_fit(most)
        if most == 0:
            self.preempt()
            return
        start = self.now
        self.now += self.costs.decode_run(batch, self.context, most)
        self.runs.append((most, start, self.now, batch, self.context))
        self.steps += most
        self.context += batch * most
        self.counts += 1  # every decoding sequence's blocks counted again, at this step
        self.counted_at = self.steps
        self.used = self.running_blocks(self.steps) + sum(seq.blocks for seq in self.prefilling)
        self.finish_due()
        self.arrive()

    def steps_that_fit(self, most: int) -> int:
        """The most decode steps (up to `most`) whose growing caches the free blocks hold."""
        held = sum(seq.blocks for seq in self.prefilling)

        def fits(steps: int) -> bool:  # after them, each holds room for its length + steps tokens
            return held + self.running_blocks(self.steps + steps) <= self.capacity

        if fits(most):
            return most
        low, high = 0, most - 1
        while low < high:
            middle = (low + high + 1) // 2
            if fits(middle):
                low = middle
            else:
                high = middle - 1
        return low

    @functools.cached_property
    def ends(self) -> np.ndarray:
        """When each decode step ended (step s at ends[s]; read once the instance is done): every run's steps one by
        one (Costs.decode_step_ends' terms, all runs at once), each run's last at the end decode_run summed for it."""
        if not self.runs:
            return np.zeros(1)
        steps, start, end, batch, context = (np.array(column) for column in zip(*self.runs))
        steps = steps.astype(int)
        at = 1 + np.cumsum(steps) - steps          # each run's first step
        ends = np.zeros(self.steps + 1)
        ends[at + steps - 1] = end                  # each run's last step: where the run ended
        inner = np.where(batch > 0, steps - 1, 0)   # the steps before it
        if inner.sum():
            terms = np.array([self.costs.decode_terms(int(size)) if size else (0.0, 0.0, 0.0, 0.0) for size in batch])
            run = np.repeat(np.arange(len(steps)), inner)
            first = np.cumsum(inner) - inner
            step = np.arange(inner.sum()) - first[run]
            total = np.cumsum(self.costs.decode_step_seconds(terms[run].T, context[run], step, batch[run]))
            before = np.where(first > 0, total[np.maximum(first - 1, 0)], 0.0)
            ends[at[run] + step] = start[run] + total - before[run]
        return ends

    def token_times(self, seq: Sequence) -> np.ndarray:
        """When each of a sequence's tokens came out of this instance, in order."""
        ends = self.ends
        pieces = [ends[mark[0]:mark[1] + 1] if isinstance(mark, tuple) else np.asarray(mark, float).reshape(-1)
                  for mark in seq.marks]
        return np.concatenate(pieces) if pieces else np.zeros(0)

    def finish_due(self) -> None:
        while self.finishing and self.finishing[0][0] <= self.steps:
            _, epoch, seq = heapq.heappop(self.finishing)
            if seq in self.running and seq.epoch == epoch:
                self.leave_running(seq)
                self.release(seq)

    def drop_stale(self) -> None:
        while self.finishing and (self.finishing[0][2] not in self.running
                                  or self.finishing[0][2].epoch != self.finishing[0][1]):
            heapq.heappop(self.finishing)

    def preempt(self) -> None:
        """No block for the next token: the sequence admitted last gives its blocks back, to be computed again."""
        victim = max(self.running, key=lambda seq: seq.admitted)
        self.leave_running(victim)
        self.used -= victim.blocks
        victim.blocks = 0
        victim.to_prefill = victim.prompt + victim.generated  # the prompt and the tokens so far, as one prompt
        victim.prefilled = 0
        victim.preemptions += 1
        self.waiting.appendleft(victim)
        self.drop_stale()
