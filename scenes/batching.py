"""Batching: many users share one read of the weights, and decode climbs the memory slope."""

from __future__ import annotations

import math

from manim import DOWN, LEFT, RIGHT, UP, FadeIn, FadeOut, LaggedStart, Rectangle, VGroup, Write

from render import formatting as fmt
from scenes.base import BeatScene
from scenes.helpers import Counter, RooflineChart, WeightsWall, get_caption, get_text, get_title
from scenes.the_roofline import axis_ranges
from scenes.style import SAFE_LEFT, HIGHLIGHT, KV_CACHE, LABEL_SIZE, MEMORY, SMALL_SIZE

WALL_WIDTH, WALL_HEIGHT = 2.8, 2.4


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


class Batching(BeatScene):
    """64 users: one sweep of the wall serves them all; the step barely grows, throughput soars."""

    def build(self) -> None:
        plan, spec = self.plan, self.plan.spec
        decode, batch = plan.numbers.decode, plan.numbers.batch
        title = get_title(self.beat.title, plan.choice.label)
        wall = WeightsWall(f"{fmt.gigabytes(spec.weight_bytes, short=True)} of weights", width=WALL_WIDTH,
                           height=WALL_HEIGHT, rows=8, cols=7)
        wall.move_to(LEFT * 4.1 + UP * 0.9)
        x_range, y_range = axis_ranges(plan)
        chart = RooflineChart(spec.peak_flops, spec.memory_bandwidth, x_range, y_range, width=5.0, height=3.2)
        chart.move_to(RIGHT * 3.1 + UP * 0.4)
        self.enter(title, wall, chart)

        point = chart.dot(decode.ops_per_byte, MEMORY, "batch 1", DOWN + RIGHT)
        self.play(FadeIn(point), run_time=0.5)

        stacks = get_kv_block(batch, wall)
        users_label = get_text(f"{fmt.count(batch.size)} users, "
                               f"{fmt.count(batch.context_tokens)} cached tokens each",
                               SMALL_SIZE, KV_CACHE).next_to(VGroup(wall.bricks, stacks), DOWN, buff=0.25)
        step = Counter("time per step", lambda v: fmt.milliseconds(v, short=True), start=decode.step_seconds,
                       color=MEMORY)
        throughput = Counter("tokens per second", lambda v: fmt.tokens_per_second(v, short=True),
                             start=decode.tokens_per_second, color=HIGHLIGHT)
        counters = VGroup(step, throughput).arrange(RIGHT, buff=0.8).next_to(users_label, DOWN, buff=0.4)
        counters.align_to([SAFE_LEFT + 0.3, 0, 0], LEFT)
        self.add(counters)
        self.play(step.appear(), throughput.appear(), run_time=0.5)

        self.at("users", LaggedStart(*[FadeIn(stack, shift=UP * 0.1) for stack in stacks], lag_ratio=0.02),
                FadeIn(users_label), run_time=1.2)
        self.at("one-read", wall.sweep(run_time=1.2, extra=stacks), run_time=1.2)
        batched = chart.dot(batch.ops_per_byte, MEMORY,
                            f"batch {fmt.count(batch.size)}\n{fmt.ops_per_byte(batch.ops_per_byte, short=True)}",
                            DOWN + RIGHT)
        self.at("step", step.count_to(batch.step_seconds), point[0].animate.move_to(batched[0].get_center()),
                FadeOut(point[1]), run_time=1.4)
        self.play(FadeIn(batched[1]), run_time=0.3)
        self.at("throughput", throughput.count_to(batch.tokens_per_second), wall.sweep(run_time=1.0, extra=stacks),
                run_time=1.4)

        # The closing remark: even as many users as the ridge's value leave decode below the ridge.
        ridge = chart.ridge_marker(f"ridge {fmt.integer(spec.ridge_ops_per_byte)}")
        remark = get_caption(self.beat.captions["remark"], HIGHLIGHT, LABEL_SIZE, width=11.5)
        remark.to_edge(DOWN, buff=0.55)
        many = chart.dot(batch.ridge_value_ops_per_byte, MEMORY, "", DOWN)[0].set_color(HIGHLIGHT)
        self.at("speech-end", FadeIn(ridge), FadeIn(many, scale=1.5), Write(remark), offset=-1.0, lead=0)
        while self.seconds_until("end") > 1.4:
            self.play(wall.sweep(run_time=1.2, extra=stacks), run_time=1.2)

