"""Two waits: the wait for the first word and the steady stream after it (the chat, the timeline of prefill and
decode, the two jobs and the parts of the GPU they use). The budgets the two waits set close the film
(scenes/two_budgets.py)."""

from __future__ import annotations

from manim import LEFT, RIGHT, UP, AnimationGroup, Create, FadeIn, FadeOut, GrowFromEdge, Indicate, LaggedStart, Write

from render.engine.scene import BeatScene
from scenes.pictures.two_waits import two_waits_picture
from scenes.style import HIGHLIGHT


class TwoWaits(BeatScene):
    """A chat: a long wait for the first word, then a steady stream; each wait is one job of the GPU."""

    successor = "prefill"

    def build(self) -> None:
        picture = two_waits_picture(self)
        self.hand_over(*picture.handed_over)
        self.enter(picture.title, picture.window)
        self.at("paste", FadeIn(picture.question, shift=UP * 0.3), run_time=0.8)
        # Nothing comes back for a while: the cursor blinks while the wait grows on the timeline.
        self.add(picture.cursor)
        waiting = self.seconds_until("stream") - 0.1
        self.at("wait", Create(picture.axis), GrowFromEdge(picture.wait_bar, LEFT), FadeIn(picture.ttft),
                picture.blink(max(1, round(waiting / 0.7)), waiting), run_time=waiting)
        self.at("stream", FadeIn(picture.tpot), run_time=0.3)
        # Then the reply's words at a steady pace, the cursor ahead of them, each with its tick on the timeline: one
        # decode step per token.
        steps = [AnimationGroup(FadeIn(word), FadeIn(tick), picture.cursor.animate.next_to(word, RIGHT, buff=0.06))
                 for word, tick in zip(picture.words, picture.ticks)]
        self.at("stream", LaggedStart(*steps, lag_ratio=1.0), until="two-jobs")
        self.play(FadeOut(picture.cursor), run_time=0.3)
        self.at("prefill", FadeIn(picture.prefill_label, shift=UP * 0.2), run_time=0.6)
        self.at("decode", FadeIn(picture.decode_label, shift=UP * 0.2), run_time=0.6)
        self.at("gpu", FadeIn(picture.chip), FadeIn(picture.wall.bricks), FadeIn(picture.arithmetic),
                FadeIn(picture.bandwidth), run_time=0.8)

        # The payoff: the two waits as one sum, each term lit with the part of the timeline it adds up.
        self.at("speech-end", Write(picture.latency), offset=-0.6, lead=0, run_time=0.9)
        self.play(Indicate(picture.ttft_term, scale_factor=1.25),
                  Indicate(picture.wait_bar, color=HIGHLIGHT, scale_factor=1.0), Indicate(picture.ttft), run_time=0.9)
        self.play(Indicate(picture.tpot_terms, scale_factor=1.15),
                  Indicate(picture.ticks, color=HIGHLIGHT, scale_factor=1.0), Indicate(picture.tpot), run_time=0.9)
