"""The cache beat's picture: the two decode rates under the ceiling, the slowdown, the wall with the long prompt's
KV cache stacked on it to scale, and the fit. The cache beat draws it; two budgets opens on its bars.
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import DOWN, LEFT, RIGHT, UP, DashedLine, Rectangle, VGroup

from render import formatting as fmt, formulas
from render.engine.scene import BeatScene
from scenes.figures.chip import WeightsWall
from scenes.figures.counters import Bar
from scenes.figures.text import get_formula, get_pill, get_provenance, get_text, get_title, tex_text
from scenes.pictures.measured import BAR_LENGTH, prompt_name
from scenes.style import HIGHLIGHT, KV_CACHE, MEMORY, MUTED, SMALL_SIZE

CACHE_SUBTITLE = "decode rate = 1 ÷ time per output token, against the roofline's ceiling"


@dataclass
class CachePicture:
    """Everything the cache beat shows: the two decode rates under the ceiling, the slowdown, the wall of weights
    with the long prompt's KV cache stacked on it to scale, what the cache adds to a step, and the fit."""

    title: object
    provenance: VGroup
    short: Bar
    long: Bar
    limit: DashedLine
    limit_label: object
    share: object           # the short prompt's rate as a share of the ceiling
    slower: object
    wall: WeightsWall
    kv: Rectangle
    kv_label: object
    more: object            # + the cache's share of a step's bytes
    ratio: object           # cache ÷ weights ≈ that share
    fitted: VGroup          # the fit's share of bandwidth and KV slope, a line each (empty without a fit)

    def read_once(self, with_cache: bool = True):
        """One decode step's read: the weights, and the cache riding on them."""
        return self.wall.sweep(run_time=1.2, extra=VGroup(self.kv)) if with_cache else self.wall.sweep(run_time=1.2)

    @property
    def handed_over(self) -> list:
        """What the two budgets take on: the two decode rates' bars become the frames of the budgets' cards."""
        return [self.short.rect, self.long.rect]


def cache_picture(scene: BeatScene) -> CachePicture:
    measured = scene.plan.measured
    ceiling = measured.ceiling_tokens_per_second
    scale = BAR_LENGTH / ceiling
    short_rate, long_rate = measured.short.decode_tokens_per_second, measured.long.decode_tokens_per_second
    # The values inside the bars: right of them runs the ceiling line.
    estimated = measured.dataset.prompt_tokens_estimated
    short = Bar(prompt_name(measured.short.prompt_tokens, estimated), fmt.tokens_per_second(short_rate, short=True),
                scale * short_rate, MEMORY, value_inside=True)
    long = Bar(prompt_name(measured.long.prompt_tokens, estimated), fmt.tokens_per_second(long_rate, short=True),
               scale * long_rate, KV_CACHE, value_inside=True)
    bars = VGroup(short, long).arrange(DOWN, buff=0.35, aligned_edge=LEFT).move_to(UP * 0.85)
    bars.align_to([-4.75, 0, 0], LEFT)  # labels, bars and the ceiling's marks across the frame, right of its title
    limit_x = short.rect.get_left()[0] + BAR_LENGTH
    limit = DashedLine([limit_x, bars.get_top()[1] + 0.35, 0], [limit_x, bars.get_bottom()[1] - 0.2, 0],
                       color=HIGHLIGHT)
    limit_label = get_text(f"ceiling {fmt.tokens_per_second(ceiling, short=True)}", SMALL_SIZE, HIGHLIGHT)
    limit_label.next_to(limit, UP, buff=0.1)
    share = get_text(f"{fmt.integer(short_rate, short=True)} is "
                     f"{fmt.percent(measured.ceiling_fraction, short=True)} of the ceiling", SMALL_SIZE, MUTED)
    share.next_to(limit_label, UP, buff=0.08)
    slower = get_pill(f"−{fmt.percent(measured.slowdown, short=True)}", KV_CACHE)
    slower.next_to(limit, RIGHT, buff=0.3).set_y(long.get_y())

    # The wall of weights, and the long prompt's KV cache stacked onto it, to scale.
    wall = WeightsWall(f"{fmt.gigabytes(measured.weight_bytes, short=True)} of weights",
                       width=3.0, height=1.6, rows=6, cols=8).move_to(DOWN * 1.05 + LEFT * 0.8)
    kv_height = 1.6 * measured.long_kv_ratio
    kv = Rectangle(width=3.0, height=max(0.04, kv_height), stroke_width=0, fill_color=KV_CACHE, fill_opacity=0.9)
    kv.next_to(wall.bricks, UP, buff=0.04)
    wall.label.next_to(wall.bricks, LEFT, buff=0.3)
    kv_label = get_text(f"+ {fmt.gigabytes(measured.long_kv_bytes, short=True)} of KV cache",
                        SMALL_SIZE, KV_CACHE).next_to(kv, RIGHT, buff=0.3)
    ratio = get_formula(formulas.CACHE_SHARE, "=",
                        rf"\frac{{{tex_text(fmt.gigabytes(measured.long_kv_bytes, short=True))}}}"
                        rf"{{{tex_text(fmt.gigabytes(measured.weight_bytes, short=True))}}}",
                        r"\approx", (tex_text(fmt.percent(measured.long_kv_ratio, short=True)), KV_CACHE), size=30)
    more = get_pill(f"+{fmt.percent(measured.long_kv_ratio, short=True)} bytes per step", KV_CACHE)
    more.next_to(kv_label, DOWN, buff=0.2, aligned_edge=LEFT)
    ratio.next_to(more, DOWN, buff=0.25, aligned_edge=LEFT)
    # The fit of every decode rate: the share of bandwidth reached, and what each cached token adds to a step
    # against what its KV bytes would at that share.
    fit, fitted = measured.fit, VGroup()
    if fit and fit.memory_efficiency:
        # (the bandwidth reached, not its share: a second percentage beside "156 is 75% of the ceiling" reads as
        # the same figure)
        lines = [(f"fit: {fmt.bandwidth(fit.achieved_bandwidth, short=True)} of the "
                  f"{fmt.bandwidth(measured.gpu.bandwidth, short=True)} reached", MEMORY)]
        if fit.kv_slope_seconds_per_token:
            slope = fit.kv_slope_seconds_per_token
            lines += [(f"each cached token: +{fmt.nanoseconds(slope.value, slope.uncertainty)} a step", KV_CACHE),
                      (f"its KV bytes alone: {fmt.nanoseconds(fit.kv_slope_predicted_seconds_per_token)}", MUTED)]
        fitted = VGroup(*[get_text(line, SMALL_SIZE, color) for line, color in lines])
        # Above the bars it explains, left of the ceiling's words.
        fitted.arrange(DOWN, aligned_edge=LEFT, buff=0.08).next_to(short, UP, buff=0.3).align_to(short, LEFT)
    return CachePicture(get_title(scene.beat.title, CACHE_SUBTITLE), get_provenance(measured), short, long, limit,
                        limit_label, share, slower, wall, kv, kv_label, more, ratio, fitted)
