"""Wasted money's last picture: a long prompt's prefill split into its linear layers and attention. Wasted money
draws it; the measured beat starts from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import DOWN, RIGHT, UP, Rectangle, VGroup

from render import formatting as fmt, formulas
from render.engine.scene import BeatScene
from scenes.figures.text import get_formula, get_text, slide_clear_of, term
from scenes.style import COMPUTE, KV_CACHE, LABEL_SIZE, MUTED, SMALL_SIZE, TEXT


@dataclass
class LongPromptPicture:
    """A long prompt's prefill as one bar split into the linear layers, attention and (on several GPUs) the
    all-reduces, each labelled, over the formula of its work."""

    heading: object
    linear: Rectangle
    attention: Rectangle
    talking: Rectangle          # between GPUs: the all-reduces after the arithmetic (a sliver on one GPU)
    linear_label: object
    attention_label: object
    talking_label: object       # empty on one GPU
    work: object                # operations = 2PN + 2LdN²
    note: object

    def handed_over(self, talking: bool) -> list:
        """What the measured beat takes on: the long prompt's bar becomes its longest prompt's ideal prefill."""
        return [self.linear, self.attention, *([self.talking] if talking else [])]

    @property
    def linear_term(self) -> VGroup:
        """operations = 2PN: what the linear layers do."""
        return term(self.work, r"\text{operations}", "=", "2PN")

    @property
    def attention_terms(self) -> VGroup:
        """+ 2LdN²: attention's square of the prompt."""
        return term(self.work, "+", "2LdN^2")

    @property
    def attention_term(self):
        return term(self.work, "2LdN^2")


def long_prompt_picture(scene: BeatScene, ours: str) -> LongPromptPicture:
    plan, long_prompt = scene.plan, scene.numbers_here.long_prompt
    total, width = long_prompt.seconds, 9.0

    def segment(length: float, color: str) -> Rectangle:
        return Rectangle(width=length, height=0.8, stroke_width=0, fill_color=color, fill_opacity=0.9)

    linear = segment(width * long_prompt.linear_seconds / total, COMPUTE)
    attention = segment(width * long_prompt.attention_seconds / total, KV_CACHE)
    # On several GPUs the all-reduces add their own time, after the arithmetic.
    talking = segment(max(1e-3, width * long_prompt.communication_seconds / total), MUTED)
    stacked = VGroup(linear, attention, talking).arrange(RIGHT, buff=0).move_to(UP * 0.15 + RIGHT * 1.0)
    heading = get_text(f"a {fmt.count(long_prompt.tokens)}-token prompt on {ours}: prefill "
                       f"{fmt.duration(total, short=True)}"
                       + (f" here ({fmt.duration(plan.numbers.long_prompt.seconds, short=True)} at best)"
                          if plan.expected else ""),
                       LABEL_SIZE, TEXT).next_to(stacked, UP, buff=0.35)
    linear_label = get_text(f"linear layers {fmt.duration(long_prompt.linear_seconds, short=True)}",
                            SMALL_SIZE, COMPUTE).next_to(linear, DOWN, buff=0.2)
    attention_label = get_text(
        f"attention {fmt.duration(long_prompt.attention_seconds, short=True)} "
        f"({fmt.percent(long_prompt.attention_share, short=True)})", SMALL_SIZE, KV_CACHE)
    attention_label.next_to(attention, DOWN, buff=0.2).align_to(attention, RIGHT)
    # Under a thin attention segment (the all-reduces after it take much of the bar) it moves right,
    # past the linear layers' label.
    slide_clear_of(attention_label, linear_label, margin=0.3)
    talking_label = VGroup()
    if long_prompt.communication_seconds:
        talking_label = get_text(f"between GPUs {fmt.duration(long_prompt.communication_seconds, short=True)}",
                                 SMALL_SIZE, MUTED).next_to(attention_label, DOWN, buff=0.12).align_to(talking, RIGHT)
    # The work itself: two operations per weight per token, and attention's square of the prompt.
    work = get_formula(formulas.PREFILL_WORK)
    work.next_to(VGroup(linear_label, attention_label, talking_label), DOWN, buff=0.55)
    note = get_text("attention grows with the square of the prompt", SMALL_SIZE, MUTED).next_to(work, DOWN, buff=0.25)
    return LongPromptPicture(heading, linear, attention, talking, linear_label, attention_label, talking_label, work,
                             note)
