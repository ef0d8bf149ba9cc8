"""The cache rides along: the endpoint's decode, slower with a long prompt by as much as the prompt's KV cache adds
to every step; the wall of weights with that cache stacked on it to scale, and the fit of both rates.

It continues the measured beat's shot: the waits' bars become the rates' bars under the same provenance.
"""

from __future__ import annotations

from manim import (DOWN, LEFT, UP, FadeIn, FadeOut, GrowFromEdge, Indicate, LaggedStart, ReplacementTransform, VGroup,
                   Write)

from render.engine.scene import BeatScene
from scenes.figures.text import retitle
from scenes.pictures.cache_rides_along import cache_picture
from scenes.pictures.measured import measured_ending
from scenes.style import HIGHLIGHT


class CacheRidesAlong(BeatScene):
    """Decode on the endpoint: slower with a long prompt, by as much as its KV cache adds to every step."""

    predecessor, successor = "measured", "two-budgets"

    def build(self) -> None:
        picture = cache_picture(self)
        title, short, long, limit = picture.title, picture.short, picture.long, picture.limit
        self.hand_over(*picture.handed_over)
        if self.continues:
            # One shot with the measured beat: the provenance stays, the waits become speeds.
            before = measured_ending(self, self.beat.previous_title)
            self.add(*before.parts)
            # The bars' shapes move on their own, under the splits that lie over them (a play brings what it
            # animates to the front unless it is on screen already); their words cross-fade where they stand.
            rects = VGroup()
            for group in before.groups:
                for bar in group.bars:
                    rects.add(bar.rect)
                    bar.remove(bar.rect)
            self.add(rects)
            self.bring_to_front(before.splits, before.network)
            self.play(ReplacementTransform(rects, VGroup(short.rect, long.rect)), FadeOut(before.splits),
                      FadeOut(before.network), FadeOut(before.chart), *[FadeOut(group) for group in before.groups],
                      *[FadeIn(words) for bar in (short, long) for words in (bar.label, bar.value)],
                      retitle(before.title, title), run_time=1.0)
            self.carry_on_with(title, before.provenance, short, long)
            self.at("rate", Write(limit), FadeIn(picture.limit_label), Indicate(short.rect, scale_factor=1.0),
                    run_time=1.0)
        else:
            self.enter(title, picture.provenance)
            self.at("rate", short.grow(), Write(limit), FadeIn(picture.limit_label), run_time=1.0)
        self.play(FadeIn(picture.share), run_time=0.4)
        self.ambient = lambda: Indicate(short.rect, color=HIGHLIGHT, scale_factor=1.0)
        long_in = Indicate(long.rect, scale_factor=1.0) if self.continues else long.grow()
        self.at("slower", long_in, FadeIn(picture.slower, shift=LEFT * 0.2), run_time=1.0)

        self.play(FadeIn(picture.wall), run_time=0.5)
        self.ambient = lambda: picture.read_once(with_cache=False)  # each decode step reads the weights again
        self.at("kv", GrowFromEdge(picture.kv, DOWN), FadeIn(picture.kv_label), run_time=0.9)
        self.ambient = picture.read_once  # ... and the cache riding on them
        self.at("ratio", FadeIn(picture.more, shift=UP * 0.2), Write(picture.ratio), run_time=0.8)
        if len(picture.fitted):
            self.play(LaggedStart(*[FadeIn(line, shift=LEFT * 0.2) for line in picture.fitted], lag_ratio=0.5),
                      run_time=1.0)
        # The payoff: every decode step sweeps the weights and the cache riding on them.
        self.repeat_until("end", lambda: (picture.read_once(), Indicate(long.rect, color=HIGHLIGHT, scale_factor=1.0)),
                          run_time=1.2, leaving=1.3)
