"""Sluice and tap: prefill floods the whole prompt through at once; decode drips one token at a time.

Both beats share one layout, so the chip and the weights wall stay where they are between them.
"""

from __future__ import annotations

from manim import (Indicate, DOWN, LEFT, RIGHT, UP, Arrow, FadeIn, FadeOut, Rectangle, Square, Succession,
                   VGroup, Write, rate_functions)

from render import formatting as fmt
from scenes.base import BeatScene
from scenes.helpers import Chip, Counter, WeightsWall, get_pill, get_text, get_title
from scenes.style import COMPUTE, HIGHLIGHT, LABEL_SIZE, MEMORY, MUTED, SMALL_SIZE, TEXT

CHIP_AT = LEFT * 1.9 + UP * 0.5
WALL_AT = RIGHT * 3.9 + UP * 0.35
TOKENS_AT = LEFT * 5.3 + UP * 0.5
COUNTERS_AT = RIGHT * 3.3 + DOWN * 2.55


def get_stage(scene: BeatScene) -> tuple[VGroup, Chip, WeightsWall]:
    """The title, the chip and the weights wall, where both beats keep them."""
    plan = scene.plan
    title = get_title(scene.beat.title, plan.choice.label)
    chip = Chip(plan.spec.sm_count, f"{plan.choice.gpu.short_name} · {fmt.count(plan.spec.sm_count)} SMs")
    chip.move_to(CHIP_AT)
    wall = WeightsWall(f"{fmt.gigabytes(plan.spec.weight_bytes, short=True)} of weights")
    wall.move_to(WALL_AT)
    return title, chip, wall


def enter_stage(scene: BeatScene) -> tuple[Chip, WeightsWall, Arrow]:
    """Both beats open the same way: the title, the chip, the wall and the bus between them fade in."""
    title, chip, wall = get_stage(scene)
    link = get_link(chip, wall)
    scene.enter(title, chip, wall, link)
    return chip, wall, link


def get_counter_row(*counters: Counter) -> VGroup:
    """Counters side by side under the wall (two per row when there are more than two)."""
    row = VGroup(*counters)
    if len(counters) > 2:
        row.arrange_in_grid(rows=2, buff=(0.5, 0.3))
    else:
        row.arrange(RIGHT, buff=0.8)
    return row.move_to(COUNTERS_AT)


def get_link(chip: Chip, wall: WeightsWall) -> Arrow:
    """The memory bus: weights flow from the wall into the chip."""
    return Arrow(wall.bricks.get_left(), chip.package.get_right(), buff=0.15, color=MEMORY, stroke_width=5)


class Prefill(BeatScene):
    """The sluice: the prompt's tokens wait at a gate, then flood through every core together."""

    def build(self) -> None:
        prefill, spec = self.plan.numbers.prefill, self.plan.spec
        chip, wall, link = enter_stage(self)

        tokens = VGroup(*[Square(0.16, stroke_width=0, fill_color=COMPUTE, fill_opacity=0.9) for _ in range(40)])
        tokens.arrange_in_grid(8, 5, buff=0.06).move_to(TOKENS_AT)
        gate = Rectangle(width=0.12, height=tokens.height + 0.5, stroke_width=0, fill_color=TEXT, fill_opacity=0.9)
        gate.next_to(tokens, RIGHT, buff=0.2)
        token_label = get_text(f"{fmt.count(prefill.tokens)} tokens", LABEL_SIZE, COMPUTE)
        token_label.next_to(tokens, UP, buff=0.25)

        operations = Counter("operations", fmt.large, color=COMPUTE)
        seconds = Counter("time to first token", lambda v: fmt.duration(v, short=True), color=COMPUTE)
        counters = get_counter_row(operations, seconds)
        self.add(counters)

        self.at("one-pass", FadeIn(tokens, shift=RIGHT * 0.3), FadeIn(gate), run_time=0.8)
        self.at("tokens", Write(token_label), Indicate(tokens, color=HIGHLIGHT, scale_factor=1.05), run_time=0.8)
        # The gate opens: all tokens pour into the chip at once, every core lights, one sweep of the wall.
        self.at("ops",
                FadeOut(gate, shift=UP * 0.5),
                tokens.animate.move_to(chip.cores).scale(0.4).set_opacity(0),
                chip.light(1.0),
                wall.sweep(run_time=1.2),
                operations.appear(),
                operations.count_to(prefill.ops),
                run_time=1.4)
        peak = get_pill(f"peak {fmt.teraflops(spec.peak_flops, short=True)}", COMPUTE)
        peak.next_to(chip.package, UP, buff=0.2)
        self.at("peak", FadeIn(peak, shift=DOWN * 0.2), run_time=0.6)
        self.at("time", seconds.appear(), seconds.count_to(prefill.seconds), run_time=1.2)
        bound = get_pill("compute-bound", COMPUTE).next_to(chip, DOWN, buff=0.3)
        busy = get_text(f"{fmt.percent(prefill.compute_utilisation, short=True)} of the arithmetic busy",
                        SMALL_SIZE, MUTED).next_to(bound, DOWN, buff=0.15)
        self.at("busy", FadeIn(bound, scale=1.1), FadeIn(busy), run_time=0.6)


class Decode(BeatScene):
    """The tap: one token at a time, each one a full read of the wall for a sliver of arithmetic."""

    def build(self) -> None:
        decode, spec = self.plan.numbers.decode, self.plan.spec
        chip, wall, link = enter_stage(self)

        drop_start = chip.package.get_top() + UP * 1.0
        read = Counter("bytes read per token", lambda v: fmt.gigabytes(v, short=True), color=MEMORY)
        operations = Counter("operations per token", fmt.large, color=COMPUTE)
        step = Counter("time per token", lambda v: fmt.milliseconds(v, short=True), color=MEMORY)
        rate = Counter("tokens per second", lambda v: fmt.tokens_per_second(v, short=True).split()[0], color=HIGHLIGHT)
        counters = get_counter_row(read, operations, step, rate)
        self.add(counters)

        def drop() -> Succession:
            token = Square(0.22, stroke_width=0, fill_color=HIGHLIGHT, fill_opacity=1).move_to(drop_start)
            return Succession(FadeIn(token, run_time=0.15),
                              token.animate(run_time=0.45, rate_func=rate_functions.rush_into).move_to(chip.package.get_top()),
                              FadeOut(token, run_time=0.1))

        self.at("drip", drop(), run_time=0.7)
        self.at("weights", wall.sweep(run_time=1.3), read.appear(), read.count_to(decode.bytes_per_token), run_time=1.3)
        self.at("ops", chip.light(decode.compute_utilisation), operations.appear(),
                operations.count_to(decode.ops_per_token), run_time=1.0)
        idle = get_text(f"{fmt.percent(decode.compute_utilisation, short=True)} of the arithmetic busy",
                        SMALL_SIZE, MUTED).next_to(chip, DOWN, buff=0.2)
        self.play(FadeIn(idle), run_time=0.4)
        bandwidth = get_pill(fmt.bandwidth(spec.memory_bandwidth, short=True), MEMORY).next_to(link, UP, buff=0.15)
        self.at("bandwidth", FadeIn(bandwidth, shift=DOWN * 0.2), link.animate.set_color(HIGHLIGHT), run_time=0.6)
        self.at("time", step.appear(), step.count_to(decode.step_seconds), drop(), wall.sweep(run_time=0.9),
                run_time=1.0)
        bound = get_pill("memory-bound", MEMORY).next_to(idle, DOWN, buff=0.2)
        self.at("rate", rate.appear(), rate.count_to(decode.tokens_per_second), FadeIn(bound), drop(),
                wall.sweep(run_time=0.9), run_time=1.0)
        # The tap keeps dripping: one token, one full read, until the beat hands over.
        while self.seconds_until("end") > 1.3:
            self.play(drop(), wall.sweep(run_time=1.0), run_time=1.0)

