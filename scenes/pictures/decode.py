"""Decode's last picture: one core lit, the bus at full speed, the counters become bytes ÷ bandwidth and the rate
they allow. Decode animates towards it; the roofline starts from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import DOWN, LEFT, UP, VGroup

from render import formatting as fmt, formulas
from render.engine.scene import BeatScene
from scenes.figures.text import get_formula, get_pill, get_text, inside_safe_area, tex_text
from scenes.pictures.stage import (DECODE_SHIFT, FORMULA_AT, FORMULA_WIDTH, Division, Stage, get_division, get_stage,
                                   times_gpus)
from scenes.style import HIGHLIGHT, MEMORY, MUTED, SMALL_SIZE


@dataclass
class DecodeEnding:
    """Decode's last picture: one core lit, the bus at full speed, the counters become their formula."""

    stage: Stage
    idle: object
    bandwidth: object
    bound: object
    per_token: object   # t = weight bytes ÷ bandwidth
    result: Division    # 16 GB ÷ 3.35 TB/s ≈ 4.8 ms → 209 tokens/s
    best: object        # EFFICIENCY=: the ceilings the expected counters fall short of, under the bound (else empty)

    @property
    def parts(self) -> list:
        return [*self.stage.parts, self.idle, self.bandwidth, self.bound, self.per_token, self.result.formula,
                self.best]

    @property
    def lit_core(self):
        return self.stage.chip.cores[0]


def decode_ending(scene: BeatScene, title: str) -> DecodeEnding:
    plan, decode = scene.plan, scene.plan.numbers.decode
    stage = get_stage(scene, title)
    stage.chip.light_now(decode.compute_utilisation)
    stage.link.set_color(HIGHLIGHT)
    idle = get_text(f"{fmt.percent(decode.compute_utilisation, short=True)} of the arithmetic busy",
                    SMALL_SIZE, MUTED).next_to(stage.chip, DOWN, buff=0.2)
    bandwidth = get_pill(times_gpus(scene, fmt.bandwidth(plan.spec.memory_bandwidth, short=True)), MEMORY)
    bandwidth.next_to(stage.link, UP, buff=0.15)
    gap_left, gap_right = stage.chip.package.get_right()[0], stage.wall.bricks.get_left()[0]
    if bandwidth.width <= gap_right - gap_left - 0.1:
        bandwidth.set_x((gap_left + gap_right) / 2)  # between, not over, them
    else:  # many chips leave too narrow a gap: above the chips, ending before the wall's label
        stage.above_chips(bandwidth, end=min(gap_right, stage.wall.label.get_left()[0]) - 0.15)
    bound = get_pill("memory-bound", MEMORY).next_to(idle, DOWN, buff=0.2)
    best = VGroup()
    if plan.expected:  # left of the bound, muted: what the counters fall short of
        best = get_text(f"at best {fmt.milliseconds(decode.step_seconds, short=True)} a token,\n"
                        f"{fmt.tokens_per_second(decode.tokens_per_second, short=True)}", SMALL_SIZE, MUTED)
        inside_safe_area(best.next_to(bound, LEFT, buff=0.35))
    per_token = get_formula(formulas.token_time(bool(plan.spec.experts), plan.spec.gpus))
    if per_token.width > FORMULA_WIDTH:  # beside the counters, not under them
        per_token.scale_to_fit_width(FORMULA_WIDTH)
    per_token.move_to(FORMULA_AT)
    here, efficiency = scene.numbers_here.decode, plan.choice.efficiency
    result = get_division(scene, fmt.gigabytes(decode.bytes_per_token, short=True),
                          fmt.bandwidth(plan.spec.memory_bandwidth, short=True), here.communication_seconds,
                          fmt.milliseconds(here.step_seconds, short=True), MEMORY,
                          then=(r"\Rightarrow", (tex_text(fmt.tokens_per_second(here.tokens_per_second, short=True)),
                                                  HIGHLIGHT)), share=efficiency.memory if efficiency else None)
    ending = DecodeEnding(stage, idle, bandwidth, bound, per_token, result, best)
    if not plan.expected:  # (with EFFICIENCY= the ceilings' note left of the bound already weighs the left)
        VGroup(*ending.parts[1:]).shift(DECODE_SHIFT)
    return ending
