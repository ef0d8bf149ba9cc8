"""Prefill: the sluice. The whole prompt floods through the chip at once, every core lit, one sweep of the
weights wall serving every token; the counters become the division that made the time to first token."""

from __future__ import annotations

from dataclasses import dataclass

from manim import (DOWN, LEFT, RIGHT, UP, FadeIn, FadeOut, FadeTransform, Indicate, Rectangle, ReplacementTransform,
                   Square, VGroup, Write)

from render import formatting as fmt
from render.engine.scene import BeatScene
from render.engine.scene import AMBIENT_SECONDS as AMBIENT
from scenes.figures.counters import Counter
from scenes.pictures.prefill import PrefillEnding, prefill_ending
from scenes.pictures.stage import TOKENS_AT, Stage, at_best, get_counter_row
from scenes.pictures.two_waits import two_waits_picture
from scenes.style import COMPUTE, HIGHLIGHT, TEXT


@dataclass
class PrefillPicture:
    """Everything the prefill beat shows: the prompt's tokens behind their gate, the two counters, and the last
    picture they all become (`ending`)."""

    ending: PrefillEnding
    tokens: VGroup
    gate: Rectangle
    operations: Counter
    seconds: Counter
    counters: VGroup
    experts_read: float     # a mixture of experts: the experts the prompt's tokens wake, per layer

    @property
    def stage(self) -> Stage:
        return self.ending.stage

    def sweep(self, run_time: float = 1.2):
        """One read of the wall: every token of the prompt served at once."""
        return self.stage.wall.sweep(run_time=run_time, experts=self.experts_read)


def prefill_picture(scene: BeatScene) -> PrefillPicture:
    prefill, here = scene.plan.numbers.prefill, scene.numbers_here.prefill
    ending = prefill_ending(scene, scene.beat.title)
    ending.stage.chip.cores.set_fill(ending.stage.chip.idle_color)
    tokens = VGroup(*[Square(0.16, stroke_width=0, fill_color=COMPUTE, fill_opacity=0.9) for _ in range(40)])
    tokens.arrange_in_grid(8, 5, buff=0.06).move_to(TOKENS_AT)
    gate = Rectangle(width=0.12, height=tokens.height + 0.5, stroke_width=0, fill_color=TEXT, fill_opacity=0.9)
    gate.next_to(tokens, RIGHT, buff=0.2)
    operations = Counter("operations", fmt.large, color=COMPUTE)
    # Ideally the first token's whole wait; with EFFICIENCY= the prefill alone (the overhead comes on top).
    seconds = Counter(at_best(scene, "prefill", fmt.duration(prefill.seconds, short=True)) if scene.plan.expected
                      else "time to first token", lambda v: fmt.duration(v, short=True), color=COMPUTE)
    counters = get_counter_row((operations, prefill.ops), (seconds, here.seconds))
    return PrefillPicture(ending, tokens, gate, operations, seconds, counters, prefill.experts_read)


class Prefill(BeatScene):
    """The sluice: the prompt's tokens wait at a gate, then flood through every core together."""

    predecessor, successor = "two-waits", "decode"

    def build(self) -> None:
        prefill, here = self.plan.numbers.prefill, self.numbers_here.prefill
        picture = prefill_picture(self)
        ending, stage, tokens, operations, seconds = (picture.ending, picture.stage, picture.tokens,
                                                      picture.operations, picture.seconds)
        tokens_in = FadeIn(tokens, shift=RIGHT * 0.3)
        if self.continues:
            # One shot with the opening: its small chip grows into the stage's, and the pasted report moves to
            # where the prompt waits, to become its tokens.
            before = two_waits_picture(self)
            chip, document = before.chip, before.document
            self.add(document, chip)
            self.play(FadeIn(stage.title), ReplacementTransform(chip.package, stage.chip.package),
                      ReplacementTransform(chip.cores, stage.chip.cores), FadeIn(stage.chip.label),
                      FadeIn(stage.wall, shift=LEFT * 0.3), FadeIn(stage.link),
                      document.animate.scale_to_fit_width(tokens.width).move_to(tokens), run_time=1.0)
            self.carry_on_with(*stage.parts, document)
            tokens_in = FadeTransform(document, tokens)
        else:
            self.enter(*stage.parts)
        self.add(picture.counters)

        self.at("one-pass", tokens_in, FadeIn(picture.gate), run_time=0.8)
        self.ambient = lambda: Indicate(tokens, color=HIGHLIGHT, scale_factor=1.04)  # the prompt waits at the gate
        self.at("tokens", Write(ending.tokens_label), Indicate(tokens, color=HIGHLIGHT, scale_factor=1.05),
                run_time=0.8)
        # The gate opens: all tokens pour into the chip at once, every core lights, one sweep of the wall.
        self.at("ops", FadeOut(picture.gate, shift=UP * 0.5),
                tokens.animate.move_to(stage.chip.cores).scale(0.4).set_opacity(0),
                stage.chip.light(1.0), picture.sweep(), operations.appear(),
                operations.count_to(prefill.ops), Write(ending.work), run_time=1.4)
        self.ambient = lambda: picture.sweep(AMBIENT)
        self.at("peak", FadeIn(ending.peak, shift=DOWN * 0.2), run_time=0.6)
        self.at("time", seconds.appear(), seconds.count_to(here.seconds), run_time=1.2)
        self.at("busy", FadeIn(ending.bound, scale=1.1), FadeIn(ending.busy), run_time=0.6)

        # The payoff: the counters assemble into the sum they came from, and one more read of the
        # wall serves every token at once.
        self.hold_for_payoff(1.2, offset=0.2)
        for counter in (operations, seconds):
            counter.suspend_updating()
        result = ending.result
        self.play(FadeTransform(operations.value, result.numerator), FadeTransform(seconds.value, result.result),
                  *[FadeIn(part) for part in result.rest()], FadeOut(operations.caption), FadeOut(seconds.caption),
                  run_time=1.2)
        self.remove(tokens)
        self.repeat_until("end", lambda: (picture.sweep(), Indicate(result.formula, color=HIGHLIGHT,
                                                                    scale_factor=1.04)),
                          run_time=1.2, leaving=1.3)
