"""Batching: many users share one read of the weights, and decode climbs the memory slope."""

from __future__ import annotations

import math
from dataclasses import dataclass

from manim import (DOWN, LEFT, RIGHT, UP, Create, Dot, FadeIn, FadeOut, FadeTransform, Indicate, LaggedStart, Rectangle,
                   ReplacementTransform, VGroup, Write)

from render import formatting as fmt, formulas
from render.engine.scene import BeatScene
from scenes.figures.charts import LogChart, RooflineChart, decades, power_label, powers_of_ten
from scenes.figures.chip import WeightsWall
from scenes.figures.counters import Counter, Labelled
from scenes.figures.text import (get_caption, get_formula, get_provenance, get_text, get_title, inside_safe_area,
                                 retitle, slide_clear_of, tex_text)
from scenes.pictures.batching import WALL_HEIGHT, WALL_WIDTH, batching_chart, batching_handover, batching_wall
from scenes.pictures.roofline import roofline_ending
from scenes.style import HIGHLIGHT, KV_CACHE, LABEL_SIZE, MEMORY, SMALL_SIZE




def get_kv_block(batch, wall: WeightsWall) -> VGroup:
    """One KV stack per sequence, together as many bytes, relative to the wall, as the plan says."""
    users = batch.size
    columns = min(users, 16)
    rows = math.ceil(users / columns)
    share = batch.kv_ratio  # the cache beside the weights it rides along with
    block_height = WALL_HEIGHT * 0.9
    stack_width = 0.9 / columns
    stack_height = max(0.02, share * WALL_WIDTH * WALL_HEIGHT / users / stack_width)
    stacks = VGroup(*[Rectangle(width=stack_width * 0.75, height=min(stack_height, block_height / rows * 0.9),
                                stroke_width=0, fill_color=KV_CACHE, fill_opacity=0.9) for _ in range(users)])
    stacks.arrange_in_grid(rows, columns, buff=(stack_width * 0.25, 0.06), cell_alignment=DOWN)
    return stacks.next_to(wall.bricks, RIGHT, buff=0.2).align_to(wall.bricks, DOWN)


class SweepChart(VGroup):
    """A measured concurrency sweep: the endpoint's tokens per second at each number of streams, beside
    the roofline's aggregate throughput at each batch size (log-log), and where the figures come from."""

    def __init__(self, measured, width: float, height: float, **kwargs):
        super().__init__(**kwargs)
        sweep = measured.sweep
        most = sweep.curve[-1][0]
        values = [value for _, value in sweep.curve] + [point.measured_tokens_per_second for point in sweep.points]
        y_range = decades(values)
        x_ticks = [(2 ** exponent, fmt.count(2 ** exponent)) for exponent in range(0, int(math.log2(most)) + 1, 1)]
        self.chart = LogChart((1, most), y_range, "streams at once (batch size, log)",
                              "tokens/s, all streams (log)", x_ticks,
                              powers_of_ten(y_range, power_label), width, height)
        self.curve = self.chart.polyline(sweep.curve, MEMORY)
        self.dots = VGroup(*[Dot(self.chart.point(point.streams, point.measured_tokens_per_second), radius=0.1,
                                 color=HIGHLIGHT) for point in sweep.points])
        self.curve_legend = get_text(f"roofline, {measured.gpu.short_name}", SMALL_SIZE, MEMORY)
        self.dots_legend = get_text(f"measured, {fmt.count(sweep.prompt_tokens)}-token prompts", SMALL_SIZE, HIGHLIGHT)
        self.legend = VGroup(self.curve_legend, self.dots_legend).arrange(DOWN, aligned_edge=LEFT, buff=0.08)
        self.legend.next_to(self.chart.y_axis, RIGHT, buff=0.25).align_to(self.chart.y_axis, UP)
        self.add(self.chart, self.curve, self.dots, self.legend)


@dataclass
class BatchingPicture:
    """Everything the batching beat shows: the wall with every user's KV stack beside it, the chart with the
    decode point (batch 1, then the batch), the two counters and the bytes one step reads."""

    title: object
    wall: WeightsWall
    chart: RooflineChart
    point: Labelled         # batch 1: its dot travels to the batch's point
    batched: Labelled       # the batch's point; its label stays where it lands
    stacks: VGroup          # one KV stack per user
    users_label: object
    step: Counter
    throughput: Counter
    counters: VGroup
    per_step: object        # bytes per step = W + B·C·k ...
    per_step_values: object  # ... = the weights' bytes + the caches'
    experts_read: float     # a mixture of experts: the experts the batch's tokens wake, per layer

    @property
    def bytes_sum(self) -> VGroup:
        return VGroup(self.per_step, self.per_step_values)

    def read_once(self, run_time: float):
        """One step's read of the wall, which serves every user (and wakes their experts)."""
        return self.wall.sweep(run_time=run_time, extra=self.stacks, experts=self.experts_read)


def batching_picture(scene: BeatScene) -> BatchingPicture:
    plan, spec = scene.plan, scene.plan.spec
    decode, batch = plan.numbers.decode, plan.numbers.batch
    here = scene.numbers_here  # the counters say what the narration says: expected figures with EFFICIENCY=
    title = get_title(scene.beat.title, plan.choice.label)
    wall, chart = batching_wall(scene), batching_chart(scene)
    point = chart.dot(decode.ops_per_byte, MEMORY, "batch 1", DOWN + RIGHT)
    stacks = get_kv_block(batch, wall)
    users_label = get_text(f"{fmt.count(batch.size)} users, "
                           f"{fmt.count(batch.context_tokens)} cached tokens each",
                           SMALL_SIZE, KV_CACHE).next_to(VGroup(wall.bricks, stacks), DOWN, buff=0.25)
    suffix = " here" if plan.expected else ""
    step = Counter(f"time per step{suffix}", lambda v: fmt.milliseconds(v, short=True),
                   start=here.decode.step_seconds, color=MEMORY)
    throughput = Counter(f"tokens per second{suffix}", lambda v: fmt.tokens_per_second(v, short=True),
                         start=here.decode.tokens_per_second, color=HIGHLIGHT)
    # The counters under the chart whose point they follow; the bytes a step reads under the wall they count.
    counters = VGroup(step, throughput).arrange(RIGHT, buff=0.8).next_to(chart.x_title, DOWN, buff=0.35)
    counters.set_x(chart.axes.get_x())
    # Inside the safe area at the values they end on (a six-digit rate is wide) and start from.
    for values in ((here.batch.step_seconds, here.batch.tokens_per_second),
                   (here.decode.step_seconds, here.decode.tokens_per_second)):
        step.showing(values[0])
        throughput.showing(values[1])
        inside_safe_area(counters)
    # What one step reads: the weights once, and every sequence's own cache.
    per_step = get_formula(formulas.bytes_per_step(bool(spec.experts)))  # W_read: the experts its batch wakes
    per_step_values = get_formula("=", (tex_text(fmt.gigabytes(batch.weight_bytes_read, short=True)), MEMORY), "+",
                                  (tex_text(fmt.gigabytes(batch.kv_bytes, short=True)), KV_CACHE))
    bytes_sum = VGroup(per_step, per_step_values).arrange(DOWN, aligned_edge=LEFT, buff=0.2)
    bytes_sum.next_to(users_label, DOWN, buff=0.35).set_x(VGroup(wall.bricks, stacks).get_x())
    batched = chart.dot(batch.ops_per_byte, MEMORY,
                        f"batch {fmt.count(batch.size)}\n{fmt.ops_per_byte(batch.ops_per_byte, short=True)}",
                        UP + LEFT)
    slide_clear_of(batched.label, chart.y_axis)  # a point near the left: off the axis, above the slope still
    return BatchingPicture(title, wall, chart, point, batched, stacks, users_label, step, throughput, counters,
                           per_step, per_step_values, batch.experts_read)


class Batching(BeatScene):
    """64 users: one sweep of the wall serves them all; the step barely grows, throughput soars."""

    predecessor, successor = "roofline", "wasted-money"

    def build(self) -> None:
        plan, spec, batch, here = self.plan, self.plan.spec, self.plan.numbers.batch, self.numbers_here
        picture = batching_picture(self)
        title, wall, chart, point, batched = picture.title, picture.wall, picture.chart, picture.point, picture.batched
        step, throughput, read_once = picture.step, picture.throughput, picture.read_once
        self.hand_over(*batching_handover(self, wall, chart))
        if self.continues:
            # One shot with the roofline: its chart moves aside, keeping the decode point, and the wall returns.
            before = roofline_ending(self, self.beat.previous_title)
            self.add(*before.parts)
            self.play(retitle(before.title, title), ReplacementTransform(before.chart, chart),
                      before.decode.mark.animate.move_to(point.mark.get_center()),
                      FadeTransform(before.decode.label, point.label),
                      *[FadeOut(part) for part in (before.badge, before.prefill, before.ridge, before.attainable,
                                                   before.ridge_sum, before.achieved)], run_time=1.0)
            self.carry_on_with(title, chart, point)
            self.play(FadeIn(wall, shift=RIGHT * 0.3), run_time=0.5)
        else:
            self.enter(title, wall, chart)
            self.play(FadeIn(point), run_time=0.5)
        self.add(picture.counters)
        self.play(step.appear(), throughput.appear(), run_time=0.5)

        self.ambient = lambda: Indicate(point.mark, scale_factor=1.6)
        self.at("users", LaggedStart(*[FadeIn(stack, shift=UP * 0.1) for stack in picture.stacks], lag_ratio=0.02),
                FadeIn(picture.users_label), run_time=1.2)
        self.ambient = lambda: read_once(1.2)
        self.at("one-read", read_once(1.2), Write(picture.per_step), run_time=1.2)
        self.play(FadeIn(picture.per_step_values, shift=UP * 0.1), run_time=0.5)
        self.at("step", step.count_to(here.batch.step_seconds), point.mark.animate.move_to(batched.mark.get_center()),
                FadeOut(point.label), run_time=1.4)
        self.play(FadeIn(batched.label), run_time=0.3)
        self.at("throughput", throughput.count_to(here.batch.tokens_per_second), read_once(1.0), run_time=1.4)

        if plan.measured.sweep:
            # A measured sweep: the endpoint's throughput at each number of streams, beside the roofline's.
            sweep = SweepChart(plan.measured, width=4.6, height=3.0).move_to(chart.axes)
            inside_safe_area(sweep)
            provenance = get_provenance(plan.measured)
            # The counters take the sum's place under the wall, clear of the provenance along the bottom.
            under_wall = picture.counters.copy().next_to(picture.users_label, DOWN, buff=0.12)
            under_wall.set_x(VGroup(wall.bricks, picture.stacks).get_x())
            self.play(FadeOut(VGroup(chart, point.mark, batched.label, picture.bytes_sum)), FadeIn(sweep.chart),
                      FadeIn(provenance), picture.counters.animate.move_to(inside_safe_area(under_wall)),
                      run_time=0.8)
            self.play(Create(sweep.curve), FadeIn(sweep.curve_legend), run_time=0.8)
            self.play(LaggedStart(*[FadeIn(dot, scale=1.5) for dot in sweep.dots], lag_ratio=0.4),
                      FadeIn(sweep.dots_legend), run_time=0.8)
        else:
            # The closing remark: even as many users as the ridge's value leave decode below the ridge.
            ridge = chart.ridge_marker(f"ridge {fmt.integer(spec.ridge_ops_per_byte, short=True)}")
            remark = get_caption(self.beat.captions["remark"], HIGHLIGHT, LABEL_SIZE, width=11.5)
            remark.to_edge(DOWN, buff=0.55)
            many = chart.dot(batch.ridge_value_ops_per_byte, MEMORY, "", DOWN).mark.set_color(HIGHLIGHT)
            self.at("speech-end", FadeIn(ridge), FadeIn(many, scale=1.5), Write(remark), offset=-1.0, lead=0)
        # The payoff: the sweep keeps serving every user's stack, one read a step.
        self.repeat_until("end", lambda: (read_once(1.2), Indicate(picture.stacks, color=HIGHLIGHT, scale_factor=1.0)),
                          run_time=1.2, leaving=1.4)
