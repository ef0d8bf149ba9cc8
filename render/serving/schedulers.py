"""How an instance chooses its steps: one small class per policy over one base (as Vidur's replica schedulers), and
a registry that names them.

    static         a batch of `batch` requests, started when it is full or its first request has waited
                   `max_wait` seconds: one prefill of them all, then decode steps until the longest answer is done
                   (a finished sequence keeps its place, padding, until then); the next batch waits for the end
    continuous     iteration-level scheduling (Orca, vLLM's earlier engine): waiting requests are prefilled as soon as a
                   sequence slot (`max_seqs`: vLLM's max_num_seqs) and cache blocks are free, in a step of their own
                   that pauses the decodes
    chunked        a token budget a step (`max_batched_tokens`: vLLM's max_num_batched_tokens; SARATHI, and vLLM's
                   current engine, which always chunks): every decoding sequence's token first, then pieces of
                   prefills to fill the budget, so a long prompt never stalls decodes
    disaggregated  prefill and decode on separate GPUs (DistServe): `prefill_gpus` / `decode_gpus` GPUs, in
                   instances of the deployment's tensor-parallel size; each request's KV cache crosses the
                   interconnect to a decode instance (render/serving/simulate.py runs the two phases)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from render.serving.engine import Instance


@dataclass(frozen=True)
class Scheduler:
    name = ""
    max_seqs: int = 256                # sequences decoding at once (vLLM's max_num_seqs)
    max_batched_tokens: int = 8192     # tokens a step takes (vLLM's max_num_batched_tokens)

    def step(self, instance: Instance) -> bool:
        """Take the next step (or wait for the next arrival); False once the instance has nothing left."""
        raise NotImplementedError

    def admit_waiting(self, instance: Instance, budget: int) -> list:
        """Waiting requests, first come first served, while a slot, the blocks and the token budget allow (a prompt
        longer than the whole budget goes alone, when nothing else is in the step)."""
        taken = []
        while instance.waiting and len(instance.running) + len(instance.prefilling) + len(taken) < self.max_seqs:
            seq = instance.waiting[0]
            if seq.to_prefill > budget and taken:
                break
            if not instance.admit(seq):
                break
            instance.waiting.popleft()
            taken.append(seq)
            budget -= seq.to_prefill
            if budget <= 0:
                break
        return taken

    def decode_or_wait(self, instance: Instance) -> bool:
        """Nothing to prefill: the decoding sequences' next run of steps, else the clock to the next arrival."""
        if instance.running:
            instance.decode_run(self.stop_for_arrivals(instance))
            return True
        if instance.waiting and not instance.pending:
            raise RuntimeError("a waiting request can never be admitted")  # (simulate() refuses such requests)
        return instance.idle_until_arrival() or bool(instance.waiting)

    def stop_for_arrivals(self, instance: Instance) -> float | None:
        """The moment a decode run must end for the scheduler to see an arrival: the next arrival, where a slot is
        free for it (where none is, only a finishing sequence can change anything)."""
        if len(instance.running) + len(instance.prefilling) >= self.max_seqs:
            return None
        return instance.next_arrival()


@dataclass(frozen=True)
class Continuous(Scheduler):
    name = "continuous"

    def step(self, instance: Instance) -> bool:
        instance.arrive()
        taken = self.admit_waiting(instance, self.max_batched_tokens)
        if taken:
            instance.prefill_step([(seq, seq.to_prefill) for seq in taken], decodes=False)
            return True
        return self.decode_or_wait(instance)


@dataclass(frozen=True)
class Chunked(Scheduler):
    name = "chunked"            # max_batched_tokens a step: the decodes' first, prefill pieces for the rest

    def step(self, instance: Instance) -> bool:
        instance.arrive()
        budget = self.max_batched_tokens - len(instance.running)
        chunks = []
        for seq in instance.prefilling:  # prefills under way first, in order
            if budget <= 0:
                break
            tokens = min(budget, seq.to_prefill - seq.prefilled)
            chunks.append((seq, tokens))
            budget -= tokens
        if budget > 0:
            for seq in self.admit_waiting(instance, budget):
                tokens = min(budget, seq.to_prefill)
                instance.prefilling.append(seq)
                chunks.append((seq, tokens))
                budget -= tokens
                if budget <= 0:
                    break
        if chunks:
            instance.prefill_step(chunks, decodes=True)
            return True
        return self.decode_or_wait(instance)

    def admit_waiting(self, instance: Instance, budget: int) -> list:
        """As the base, but a chunk of a long prompt fits any budget: admitted while slots and blocks allow."""
        taken = []
        while instance.waiting and len(instance.running) + len(instance.prefilling) + len(taken) < self.max_seqs:
            if budget <= 0 or not instance.admit(instance.waiting[0]):
                break
            seq = instance.waiting.popleft()
            taken.append(seq)
            budget -= seq.to_prefill
        return taken


@dataclass(frozen=True)
class Static(Scheduler):
    name = "static"
    batch: int = 8                     # requests a batch
    max_wait: float = 0.5              # seconds the first waiting request waits before a batch starts short

    def step(self, instance: Instance) -> bool:
        instance.arrive()
        if not instance.waiting:
            return instance.idle_until_arrival()
        due = instance.waiting[0].arrival + self.max_wait
        if len(instance.waiting) < self.batch and instance.now < due and instance.pending:
            instance.now = min(due, instance.next_arrival())
            instance.arrive()
            return True
        taken = []
        while instance.waiting and len(taken) < self.batch and instance.admit(instance.waiting[0],
                                                                               instance.waiting[0].answer):
            taken.append(instance.waiting.popleft())
        if not taken:
            raise RuntimeError("a waiting request can never be admitted")
        instance.now += instance.costs.step(chunks=tuple((seq.prompt, 0) for seq in taken))
        for seq in taken:
            seq.generated, seq.first_token = 1, instance.now
        start, context, longest = instance.now, sum(seq.prompt for seq in taken), max(seq.answer for seq in taken)
        ends = start + instance.costs.decode_step_ends(len(taken), context, longest - 1)
        for seq in taken:  # padding: every sequence of the batch steps until the longest answer is done
            instance.now = start + instance.costs.decode_run(len(taken), context, seq.answer - 1)
            seq.generated = seq.answer
            seq.marks = [np.concatenate(([start], ends[:seq.answer - 2], [instance.now]))] if seq.answer > 1 \
                else [start]
            instance.release(seq)
        instance.now = start + instance.costs.decode_run(len(taken), context, longest - 1)
        instance.used = 0
        instance.arrive()
        return True


@dataclass(frozen=True)
class Disaggregated(Scheduler):
    """The two phases' instances are the continuous policy's; simulate() runs them and the transfer between."""

    name = "disaggregated"
    prefill_gpus: int = 1
    decode_gpus: int = 1


SCHEDULERS = {kind.name: kind for kind in (Static, Continuous, Chunked, Disaggregated)}

# How the film and its page name each: in a sentence, in a list after the first ("26 chunked"), and as a label (a
# chart's legend, a page's pill)
WORDS = {"static": "static batching", "continuous": "continuous batching", "chunked": "chunked prefill",
         "disaggregated": "disaggregated prefill and decode"}
SHORT = {"static": "static", "continuous": "continuous", "chunked": "chunked", "disaggregated": "disaggregated"}
LABELS = {"static": "static", "continuous": "continuous", "chunked": "chunked prefill",
          "disaggregated": "disaggregated"}
