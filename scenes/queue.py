"""When the queue fills (the extended cut): requests arrive at random; static batching's slots sit idle while its
batch fills, continuous batching fills a freed slot at the next step (Orca's iteration-level scheduling), and the KV
cache fills block by block (vLLM's paged blocks)."""

from __future__ import annotations

from manim import DOWN, LEFT, AnimationGroup, FadeIn, Indicate, LaggedStart, Succession, VGroup

from render.engine.scene import BeatScene
from scenes.pictures.under_load import queue_picture
from scenes.style import HIGHLIGHT, KV_CACHE, MEMORY


class Queue(BeatScene):
    """A stream of requests meets two ways of batching them, and the cache they fill."""

    successor = "long-prompt"

    def build(self) -> None:
        picture = queue_picture(self)
        self.hand_over(picture.title)
        self.enter(picture.title)
        dots = picture.arrivals
        self.at("arrivals", LaggedStart(*[FadeIn(dot, shift=LEFT * -0.6) for dot in dots], lag_ratio=0.25),
                FadeIn(picture.rate), run_time=2.0)
        self.ambient = lambda: Indicate(dots, color=HIGHLIGHT, scale_factor=1.0)
        # Static: the batch's slots take requests one by one and wait, idle, until the batch is full.
        static = picture.static_row
        self.at("static", FadeIn(picture.static_label), FadeIn(static), run_time=0.6)
        taken = dots[:len(static)]
        self.play(LaggedStart(*[dot.animate.move_to(slot) for dot, slot in zip(taken, static)], lag_ratio=0.6),
                  FadeIn(picture.idle), run_time=2.2)
        self.play(*[slot.animate.set_fill(MEMORY) for slot in static], run_time=0.5)
        self.bring_to_front(*taken)
        # Continuous: each freed slot takes the next request at the next step.
        row = picture.continuous_row
        self.at("continuous", FadeIn(picture.continuous_label), FadeIn(row), run_time=0.6)
        rest = dots[len(static):]
        fills = [AnimationGroup(slot.animate.set_fill(MEMORY), dot.animate.move_to(slot))
                 for dot, slot in zip(rest, row)]
        self.play(LaggedStart(*fills, lag_ratio=0.3), run_time=1.6)
        refills = []
        for dot, slot in zip(rest[len(row):], row):
            refills.append(Succession(slot.animate(run_time=0.2).set_fill(KV_CACHE),
                                      AnimationGroup(slot.animate.set_fill(MEMORY), dot.animate.move_to(slot))))
        if refills:
            self.play(LaggedStart(*refills, lag_ratio=0.35), FadeIn(picture.waits, shift=DOWN * 0.2), run_time=2.0)
        else:
            self.play(FadeIn(picture.waits, shift=DOWN * 0.2), run_time=0.6)
        self.ambient = lambda: Indicate(picture.waits[1], color=HIGHLIGHT, scale_factor=1.0)
        # The cache: the rows step aside for it; each admitted sequence takes blocks as it grows, block by block.
        blocks = picture.kv_blocks
        placed = VGroup(*taken, *rest[:2 * len(row)])  # (the requests now in the rows' slots)
        self.at("blocks", picture.rows.animate.shift(picture.aside), placed.animate.shift(picture.aside),
                FadeIn(picture.kv_panel, shift=picture.aside), FadeIn(blocks, shift=picture.aside),
                FadeIn(picture.kv_label, shift=picture.aside), run_time=0.9)
        self.play(LaggedStart(*[block.animate.set_fill(KV_CACHE) for block in blocks], lag_ratio=0.08),
                  run_time=min(4.0, max(1.0, self.seconds_until("end") - 1.6)))
        self.ambient = lambda: Indicate(picture.kv_blocks, color=HIGHLIGHT, scale_factor=1.0)
        self.hold_until("end")
