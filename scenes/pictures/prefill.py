"""Prefill's last picture: every core lit, one sweep of the wall, the counters become the division that made the
time to first token. Prefill animates towards it; decode starts from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import DOWN, UP

from render import formatting as fmt, formulas
from render.engine.scene import BeatScene
from scenes.figures.text import get_formula, get_pill, get_text
from scenes.pictures.stage import FORMULA_AT, TOKENS_AT, Division, Stage, get_division, get_stage, times_gpus
from scenes.style import COMPUTE, LABEL_SIZE, MEMORY, MUTED, SMALL_SIZE


@dataclass
class PrefillEnding:
    """Prefill's last picture: every core lit, and its counters assembled into their formula."""

    stage: Stage
    tokens_label: object
    work: object        # operations = 2PN + 2LdN²
    peak: object
    bound: object
    busy: object
    result: Division    # 33 trillion ÷ 989 TFLOP/s ≈ 34 ms

    @property
    def parts(self) -> list:
        return [*self.stage.parts, self.tokens_label, self.work, self.peak, self.bound, self.busy, self.result.formula]


def prefill_ending(scene: BeatScene, title: str) -> PrefillEnding:
    plan, prefill = scene.plan, scene.plan.numbers.prefill
    stage = get_stage(scene, title)
    stage.chip.cores.set_fill(COMPUTE)
    tokens_label = get_text(f"{fmt.count(prefill.tokens)} tokens", LABEL_SIZE, COMPUTE)
    tokens_label.move_to(TOKENS_AT + UP * 1.25)
    work = get_formula(formulas.PREFILL_WORK)
    work.move_to(FORMULA_AT)
    peak = get_pill(f"peak {times_gpus(scene, fmt.teraflops(plan.spec.peak_flops, short=True))}", COMPUTE)
    stage.above_chips(peak)
    compute_bound = prefill.compute_seconds >= prefill.memory_seconds
    bound = get_pill("compute-bound" if compute_bound else "memory-bound", COMPUTE if compute_bound else MEMORY)
    bound.next_to(stage.chip, DOWN, buff=0.3)
    busy = get_text(f"{fmt.percent(prefill.compute_utilisation, short=True)} of the arithmetic busy",
                    SMALL_SIZE, MUTED).next_to(bound, DOWN, buff=0.15)
    efficiency = plan.choice.efficiency
    if compute_bound:
        division = (fmt.large(prefill.ops), fmt.teraflops(plan.spec.peak_flops, short=True))
        share = efficiency.compute if efficiency else None
    else:  # a memory-bound prefill waits on its bytes, not its arithmetic
        division = (fmt.gigabytes(prefill.bytes_all_gpus, short=True),
                    fmt.bandwidth(plan.spec.memory_bandwidth, short=True))
        share = efficiency.memory if efficiency else None
    here = scene.numbers_here.prefill
    result = get_division(scene, *division, here.communication_seconds, fmt.duration(here.seconds, short=True),
                          COMPUTE, share=share)
    return PrefillEnding(stage, tokens_label, work, peak, bound, busy, result)
