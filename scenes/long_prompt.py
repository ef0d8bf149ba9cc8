"""One long prompt (the extended cut): prefilled in one step it stalls every answer's next token; chunked prefill
(SARATHI, vLLM's chunked prefill) cuts it into pieces that ride along with the decodes, each step a little longer."""

from __future__ import annotations

from manim import DOWN, LEFT, UP, FadeIn, GrowFromEdge, Indicate, LaggedStart

from render.engine.scene import BeatScene
from scenes.figures.text import retitle
from scenes.pictures.under_load import queue_picture, steps_picture
from scenes.style import HIGHLIGHT


class LongPrompt(BeatScene):
    """The steps of one long prompt among the decodes: whole, then chunked."""

    predecessor, successor = "queue", "capacity"

    def build(self) -> None:
        picture = steps_picture(self)
        picture.decodes_before.shift(picture.alone)  # (in the middle until the long prompt comes)
        self.hand_over(picture.title)
        if self.continues:
            before = queue_picture(self, self.beat.previous_title).title
            self.add(before)
            self.play(retitle(before, picture.title), run_time=0.8)
            self.carry_on_with(picture.title)
        else:
            self.enter(picture.title)
        self.play(FadeIn(picture.whole_label),
                  LaggedStart(*[GrowFromEdge(step, LEFT) for step in picture.decodes_before], lag_ratio=0.5),
                  run_time=1.2)
        self.ambient = lambda: Indicate(picture.decodes_before, color=HIGHLIGHT, scale_factor=1.0)
        stall_box, after = picture.stall
        self.at("long", picture.decodes_before.animate.shift(-picture.alone), GrowFromEdge(stall_box, LEFT),
                run_time=1.2)
        self.at("stall", FadeIn(picture.stall_label), FadeIn(picture.waiting, shift=UP * 0.2),
                LaggedStart(*[GrowFromEdge(step, LEFT) for step in after], lag_ratio=0.5), run_time=1.2)
        self.ambient = lambda: Indicate(picture.waiting, scale_factor=1.0)
        self.at("chunks", FadeIn(picture.chunked_label),
                LaggedStart(*[GrowFromEdge(step, LEFT) for step in picture.chunked_steps], lag_ratio=0.25),
                FadeIn(picture.chunked_note), run_time=2.4)
        self.ambient = lambda: Indicate(picture.chunked_steps, color=HIGHLIGHT, scale_factor=1.0)
        self.at("step", FadeIn(picture.step_label, shift=DOWN * 0.2), run_time=0.8)
        self.hold_until("end")
