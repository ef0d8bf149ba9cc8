"""Decode: the tap. One token a step, each step a full sweep of the weights wall with one core lit; the
counters become bytes ÷ bandwidth and the rate they allow."""

from __future__ import annotations

from dataclasses import dataclass

from manim import (DOWN, UP, AnimationGroup, FadeIn, FadeOut, FadeTransform, Square, Succession, VGroup, Write,
                   rate_functions)

from render import formatting as fmt
from render.engine.scene import BeatScene
from render.engine.scene import AMBIENT_SECONDS as AMBIENT
from scenes.figures.counters import Counter
from scenes.figures.text import retitle
from scenes.pictures.decode import DecodeEnding, decode_ending
from scenes.pictures.prefill import prefill_ending
from scenes.pictures.stage import DECODE_SHIFT, Stage, get_counter_row
from scenes.style import COMPUTE, HIGHLIGHT, MEMORY


@dataclass
class DecodePicture:
    """Everything the decode beat shows: the stage with its lights out, the four counters, the tap's drops, and
    the last picture they become (`ending`)."""

    ending: DecodeEnding
    read: Counter
    operations: Counter
    step: Counter
    rate: Counter
    counters: VGroup
    drop_start: object      # where each token drops from, above the chip
    experts_read: float     # a mixture of experts: the experts one token wakes, per layer

    @property
    def stage(self) -> Stage:
        return self.ending.stage

    def drop(self) -> Succession:
        """One token falls from the tap into the chip."""
        token = Square(0.22, stroke_width=0, fill_color=HIGHLIGHT, fill_opacity=1).move_to(self.drop_start)
        return Succession(FadeIn(token, run_time=0.15),
                          token.animate(run_time=0.45,
                                        rate_func=rate_functions.rush_into).move_to(self.stage.chip.package.get_top()),
                          FadeOut(token, run_time=0.1))

    def read_once(self, run_time: float):
        """One token's read of the wall (on a mixture of experts, only its experts)."""
        return self.stage.wall.sweep(run_time=run_time, experts=self.experts_read)


def decode_picture(scene: BeatScene) -> DecodePicture:
    decode, here, expected = scene.plan.numbers.decode, scene.numbers_here.decode, scene.plan.expected
    ending = decode_ending(scene, scene.beat.title)
    ending.stage.chip.cores.set_fill(ending.stage.chip.idle_color)
    ending.stage.link.set_color(MEMORY)
    read = Counter("bytes read per token", lambda v: fmt.gigabytes(v, short=True), color=MEMORY)
    operations = Counter("operations per token", fmt.large, color=COMPUTE)
    step = Counter("time per token here" if expected else "time per token",
                   lambda v: fmt.milliseconds(v, short=True), color=MEMORY)
    rate = Counter("tokens/s here" if expected else "tokens per second",
                   lambda v: fmt.tokens_per_second(v, short=True).split()[0], color=HIGHLIGHT)
    counters = get_counter_row((read, decode.bytes_per_token), (operations, decode.ops_per_token),
                               (step, here.step_seconds), (rate, here.tokens_per_second))
    if not expected:
        counters.shift(DECODE_SHIFT)
    return DecodePicture(ending, read, operations, step, rate, counters,
                         ending.stage.chip.package.get_top() + UP * 1.0, decode.experts_read)


class Decode(BeatScene):
    """The tap: one token at a time, each one a full read of the wall for a sliver of arithmetic."""

    predecessor, successor = "prefill", "roofline"

    def build(self) -> None:
        decode, here = self.plan.numbers.decode, self.numbers_here.decode
        picture = decode_picture(self)
        ending, stage, drop, read_once = picture.ending, picture.stage, picture.drop, picture.read_once
        read, operations, step, rate = picture.read, picture.operations, picture.step, picture.rate
        if self.continues:
            # One shot with prefill: its picture, then the lights go out and the flood becomes a drip.
            before = prefill_ending(self, self.beat.previous_title)
            self.add(*before.parts)
            self.play(retitle(before.stage.title, stage.title), before.stage.chip.idle(),
                      *[FadeOut(part) for part in (before.tokens_label, before.work, before.peak, before.bound,
                                                   before.busy, before.result.formula)], run_time=0.8)
            if not self.plan.expected:  # the stage slides to decode's place (see DECODE_SHIFT)
                self.carry_on_with(*stage.parts[:1], *before.stage.parts[1:])
                self.play(*[old.animate.move_to(new) for old, new in zip(before.stage.parts[1:], stage.parts[1:])],
                          run_time=0.5)
            self.carry_on_with(*stage.parts)
        else:
            self.enter(*stage.parts)
        self.add(picture.counters)

        self.at("drip", drop(), run_time=0.7)
        self.ambient = lambda: AnimationGroup(drop(), read_once(AMBIENT))  # the tap drips on
        self.at("weights", read_once(1.3), read.appear(), read.count_to(decode.bytes_per_token), run_time=1.3)
        self.at("ops", stage.chip.light(decode.compute_utilisation), operations.appear(),
                operations.count_to(decode.ops_per_token), run_time=1.0)
        self.play(FadeIn(ending.idle), run_time=0.4)
        self.at("bandwidth", FadeIn(ending.bandwidth, shift=DOWN * 0.2), stage.link.animate.set_color(HIGHLIGHT),
                run_time=0.6)
        self.at("time", step.appear(), step.count_to(here.step_seconds), drop(), read_once(0.9),
                Write(ending.per_token), run_time=1.0)
        self.at("rate", rate.appear(), rate.count_to(here.tokens_per_second), FadeIn(ending.bound), FadeIn(ending.best),
                drop(), read_once(0.9), run_time=1.0)

        # The payoff: the counters become the division that made them, while the tap keeps dripping.
        self.hold_for_payoff(1.2)
        for counter in (read, operations, step, rate):
            counter.suspend_updating()
        result = ending.result
        self.play(FadeTransform(read.value, result.numerator), FadeTransform(step.value, result.result),
                  FadeTransform(rate.value, result.outcome),
                  *[FadeIn(part) for part in result.rest(result.numerator, result.result, result.outcome)],
                  FadeOut(operations.value), *[FadeOut(counter.caption) for counter in (read, operations, step, rate)],
                  drop(), read_once(1.2), run_time=1.2)
        self.repeat_until("end", lambda: (drop(), read_once(1.0)), run_time=1.0, leaving=1.1)
