"""The extended cut's pictures (a server under load, plan.load): the queue of arriving requests with two rows of
sequence slots (static batching's, continuous batching's) and the KV cache's blocks; the steps of one long prompt,
whole and chunked; the chart of the slowest first tokens against the rate, a curve a scheduler. Queue, long prompt
and capacity draw them; each number comes from plan.load, written by render/formatting.py."""

from __future__ import annotations

import math
from dataclasses import dataclass

from manim import DOWN, LEFT, RIGHT, UP, Circle, DashedLine, Dot, Rectangle, RoundedRectangle, VGroup

from render import formatting as fmt
from scenes.figures.charts import LogChart
from scenes.figures.text import get_text, get_title
from scenes.style import (BODY_SIZE, COMPUTE, HIGHLIGHT, IDLE, KV_CACHE, LABEL_SIZE, MEMORY, MUTED, PANEL,
                          SAFE_RIGHT, SCHEDULER_COLOURS, SMALL_SIZE, TEXT)

LEGEND_LEFT = 1.4        # the capacity chart's legend, right of its plot
SLOTS_SHOWN = 8          # a row of sequence slots (static batching's batch, when smaller)
KV_GRID = (8, 16)        # the cache's blocks as drawn: rows, columns (each a share of the real count)


def rate_words(rate: float) -> str:
    return f"{fmt.approx(rate)} requests/s"


# -- the queue ---------------------------------------------------------------------------------------------------


@dataclass
class QueuePicture:
    title: object
    arrivals: VGroup        # a dot a request, queued at the left in arrival order
    rate: object
    static_row: VGroup      # slot boxes
    static_label: object
    idle: object            # "idle while the batch fills"
    continuous_row: VGroup
    continuous_label: object
    waits: VGroup           # p90 first-token waits, static beside continuous
    kv_panel: VGroup        # its frame and caption
    kv_blocks: VGroup       # the blocks, each filled in turn
    kv_label: object
    rows: VGroup            # the two rows, their labels and the waits: in the middle alone, left of the cache beside it
    aside: object           # the shift that moves the rows aside for the cache (the two then in the middle together)


CACHE_GAP = 1.2          # between the rows and the cache, once it is drawn
STREAM_WIDTH = 10.8      # the arriving requests' row, across the frame
CHART_HEIGHT = 4.75      # the capacity chart's
# The beat's title, at the top left, weighs on the frame's left: each picture's middle sits this far right of the
# frame's (the film's beats are balanced within 6% of the width, titles included: tests/test_film.py)
BALANCE = 0.5


def slot_row(count: int, y: float) -> VGroup:
    return VGroup(*[RoundedRectangle(corner_radius=0.07, width=0.5, height=0.5, stroke_color=MUTED,
                                     stroke_width=2, fill_color=IDLE, fill_opacity=1) for _ in range(count)]
                  ).arrange(RIGHT, buff=0.12).move_to([0, y, 0])


def queue_picture(scene, title: str | None = None) -> QueuePicture:
    """`title`: the beat's own unless given (its successor rebuilds this picture under this beat's title)."""
    plan, load = scene.plan, scene.plan.load
    title = get_title(title or scene.beat.title, plan.choice.label)
    shown = len(load.arrivals)
    # The stream: the first requests, spaced as they arrived (the gaps the plan's arrivals give), across the frame.
    first, last = load.arrivals[0], load.arrivals[shown - 1]
    span = max(last - first, 1e-9)
    arrivals = VGroup(*[Dot(radius=0.12, color=TEXT).move_to([STREAM_WIDTH * (0.5 - (at - first) / span), 1.6, 0])
                        for at in load.arrivals])  # (the first at the right: the queue's head, the later behind it)
    rate = get_text(rate_words(load.rate), LABEL_SIZE, TEXT).next_to(arrivals, UP, buff=0.25).align_to(arrivals, RIGHT)
    slots = min(SLOTS_SHOWN, load.parameters.static_batch)
    static_row = slot_row(slots, 0.0)
    continuous_row = slot_row(SLOTS_SHOWN, -1.6)
    batch = load.parameters.static_batch
    shown = "" if slots == batch else f" ({fmt.count(slots)} shown)"
    static_label = get_text(f"static batching: a batch of {fmt.count(batch)}{shown}", SMALL_SIZE, MUTED) \
        .next_to(static_row, UP, buff=0.15) \
        .align_to(static_row, LEFT)
    continuous_label = get_text("continuous batching", SMALL_SIZE, MEMORY).next_to(continuous_row, UP, buff=0.15) \
        .align_to(continuous_row, LEFT)
    idle = get_text("idle while the batch fills", SMALL_SIZE, MUTED).next_to(static_row, DOWN, buff=0.12) \
        .align_to(static_row, LEFT)
    static, continuous = load.static, load.continuous
    waits = VGroup(
        get_text(f"slowest tenth's first token: {fmt.seconds(static.ttft_p90_seconds, short=True)} static",
                 SMALL_SIZE, MUTED),
        get_text(f"{fmt.seconds(continuous.ttft_p90_seconds, short=True)} continuous", SMALL_SIZE, MEMORY),
    ).arrange(DOWN, aligned_edge=LEFT, buff=0.12).next_to(continuous_row, DOWN, buff=0.35).align_to(continuous_row,
                                                                                                    LEFT)
    grid, columns = KV_GRID
    kv_blocks = VGroup(*[Rectangle(width=0.2, height=0.2, stroke_color=MUTED, stroke_width=1, fill_color=PANEL,
                                   fill_opacity=1) for _ in range(grid * columns)]
                       ).arrange_in_grid(grid, columns, buff=0.05)
    frame = RoundedRectangle(corner_radius=0.12, width=kv_blocks.width + 0.4, height=kv_blocks.height + 0.4,
                             stroke_color=KV_CACHE, stroke_width=2).move_to(kv_blocks)
    caption = get_text("KV cache", LABEL_SIZE, KV_CACHE).next_to(frame, UP, buff=0.15).align_to(frame, LEFT)
    kv_label = get_text(f"{fmt.count(load.kv_blocks)} blocks of {fmt.count(load.block_tokens)} tokens", SMALL_SIZE,
                        MUTED) \
        .next_to(frame, DOWN, buff=0.15).align_to(frame, LEFT)
    # The rows right of the middle while they are alone (twice BALANCE: the few requests over them weigh little); the
    # cache beside them, the two in the middle together once it comes.
    rows = VGroup(static_label, static_row, idle, continuous_label, continuous_row, waits)
    rows.move_to([2 * BALANCE, rows.get_center()[1], 0])
    cache = VGroup(caption, frame, kv_blocks, kv_label)
    left = BALANCE - (rows.width + CACHE_GAP + cache.width) / 2
    cache.move_to([left + rows.width + CACHE_GAP + cache.width / 2, rows.get_center()[1], 0])
    aside = RIGHT * (left - rows.get_left()[0])
    return QueuePicture(title, arrivals, rate, static_row, static_label, idle, continuous_row, continuous_label,
                        waits, VGroup(frame, caption), kv_blocks, kv_label, rows, aside)


# -- one long prompt ---------------------------------------------------------------------------------------------


@dataclass
class StepsPicture:
    title: object
    whole_label: object
    decodes_before: VGroup      # decode steps, each a token for every sequence
    stall: VGroup               # the long prefill as one step, to the same scale as far as the frame allows
    stall_label: object
    waiting: object             # "every answer waits"
    chunked_label: object
    chunked_steps: VGroup       # decode steps each carrying a piece of the prompt
    chunked_note: object
    step_label: object
    alone: object               # the shift that puts the decode steps in the middle until the long prompt comes


STEP_WIDTH = 0.36               # a decode step as drawn
MIN_PART = 0.07                 # the thinnest part of a chunked step drawn
STALL_MOST = 7.4                # the widest the stall is drawn (its true scale when it fits)


def step_box(width: float, colour: str, y: float, x: float) -> Rectangle:
    return Rectangle(width=width, height=0.6, stroke_color=PANEL, stroke_width=1.5, fill_color=colour,
                     fill_opacity=1).move_to([x + width / 2, y, 0])


def steps_picture(scene, title: str | None = None) -> StepsPicture:
    load = scene.plan.load
    title = get_title(title or scene.beat.title, scene.plan.choice.label)
    top, bottom = 0.9, -1.7
    # The stall to scale against a decode step where the frame allows, else as wide as it can be (said in words); the
    # row of steps centred, six decode steps before it and three after.
    width = min(STALL_MOST, STEP_WIDTH * load.stall_seconds / load.decode_step_seconds)
    left = BALANCE - (9 * STEP_WIDTH + width) / 2
    whole_label = get_text(f"one step at a time: {fmt.milliseconds(load.decode_step_seconds, short=True)} a decode "
                           f"step, {fmt.count(load.batch)} answers", SMALL_SIZE, MUTED).move_to([BALANCE, top + 0.6, 0])
    before = VGroup(*[step_box(STEP_WIDTH, MEMORY, top, left + index * STEP_WIDTH) for index in range(6)])
    stall_box = step_box(width, COMPUTE, top, before.get_right()[0])
    after = VGroup(*[step_box(STEP_WIDTH, MEMORY, top, stall_box.get_right()[0] + index * STEP_WIDTH)
                     for index in range(3)])
    stall = VGroup(stall_box, after)
    stall_label = get_text(f"{fmt.count(load.long_prompt_tokens)}-token prefill: "
                           f"{fmt.duration(load.stall_seconds, short=True)}", SMALL_SIZE, TEXT).move_to(stall_box)
    if stall_label.width > stall_box.width - 0.2:
        stall_label.next_to(stall_box, UP, buff=0.12)
    waiting = get_text("every answer's next token waits", SMALL_SIZE, HIGHLIGHT).next_to(stall_box, DOWN, buff=0.15)
    # A piece rides on each step: the step as long as it takes (to scale against the decode step), split between the
    # decodes' tokens and the prompt's piece as the step's token budget is; the row centred too.
    grown = min(0.9, STEP_WIDTH * load.chunked_step_seconds / load.decode_step_seconds)
    piece_share = load.piece_tokens / (load.piece_tokens + load.batch)
    shown = min(load.chunks, max(3, int((12.4 - 2 * BALANCE - 0.5) // (grown + 0.02))))
    x = BALANCE - shown * grown / 2
    chunked_label = get_text(f"chunked: {fmt.count(load.chunks)} pieces beside the decodes", SMALL_SIZE, COMPUTE) \
        .move_to([BALANCE, bottom + 0.6, 0])
    chunked_steps = VGroup()
    for _ in range(shown):
        decodes = min(grown - MIN_PART, max(MIN_PART, grown * (1 - piece_share)))  # (each part seen, however thin)
        decode = step_box(decodes, MEMORY, bottom, x)
        piece = step_box(grown - decodes, COMPUTE, bottom, x + decodes)
        chunked_steps.add(VGroup(decode, piece))
        x += grown
    chunked_note = get_text("…" if shown < load.chunks else "", SMALL_SIZE, MUTED).next_to(chunked_steps, RIGHT,
                                                                                          buff=0.1)
    step_label = get_text(f"longest step: {fmt.milliseconds(load.chunked_step_seconds, short=True)}", SMALL_SIZE,
                          TEXT).next_to(chunked_steps, DOWN, buff=0.2)
    return StepsPicture(title, whole_label, before, stall, stall_label, waiting, chunked_label, chunked_steps,
                        chunked_note, step_label, RIGHT * (BALANCE - before.get_center()[0]))


# -- capacity ----------------------------------------------------------------------------------------------------


@dataclass
class CapacityPicture:
    title: object
    chart: LogChart
    slo_line: object
    slo_label: object
    curves: dict             # scheduler -> its curve
    knees: dict              # scheduler -> (a dot at its capacity, its label), for those with one
    legend: VGroup
    plot: VGroup             # the chart, its objective and curves: in the middle alone, left of the legend beside it
    aside: object            # the shift that moves the plot aside for the legend (the two then in the middle together)


def nice_ticks(low: float, high: float) -> list[tuple[float, str]]:
    found = []
    for exponent in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10 ** exponent
            if low <= value <= high:
                found.append((value, fmt.approx(value) if value < 1 else f"{value:g}"))
    return found


def capacity_picture(scene) -> CapacityPicture:
    load = scene.plan.load
    title = get_title(scene.beat.title, scene.plan.choice.label)
    slo = load.parameters.slo_ttft_seconds
    rates = load.rates
    values = [value for found in load.schedulers for value in found.p90_ttft_curve if value > 0]
    y_low = min(min(values), slo) / 1.5
    y_high = max(max(values), slo) * 1.5
    capacities = [found.capacity for found in load.schedulers if found.capacity is not None]
    x_range = (rates[0] / 1.1, max([rates[-1], *capacities]) * 1.1)
    chart = LogChart(x_range, (y_low, y_high), "requests a second", "slowest tenth's first token (s)",
                     nice_ticks(*x_range), nice_ticks(y_low, y_high), width=5.0, height=CHART_HEIGHT)
    chart.move_to([-2.2, -0.35, 0])
    slo_line = DashedLine(chart.point(x_range[0], slo), chart.point(x_range[1], slo), color=HIGHLIGHT,
                          stroke_width=2)
    slo_label = get_text(f"objective: {fmt.seconds(slo, short=True)}", SMALL_SIZE, HIGHLIGHT) \
        .next_to(slo_line, DOWN, buff=0.08).align_to(slo_line, LEFT).shift(RIGHT * 0.15)
    curves, knees = {}, {}
    for found in load.schedulers:
        points = [(rate, value) for rate, value in zip(rates, found.p90_ttft_curve) if value > 0]
        curves[found.name] = chart.polyline(points, SCHEDULER_COLOURS[found.name], stroke_width=5)
        if found.capacity is not None and x_range[0] <= found.capacity <= x_range[1]:
            # on its curve, whichever objective binds (below the dashed line where tokens after the first do)
            at = load.knee_seconds(found)
            dot = Circle(radius=0.09, color=SCHEDULER_COLOURS[found.name], fill_opacity=1) \
                .move_to(chart.point(found.capacity, at))
            knees[found.name] = dot
    legend = VGroup()
    for found in load.schedulers:
        capacity = f"< {fmt.approx(load.rates[0])}/s" if found.capacity is None else f"{fmt.approx(found.capacity)}/s"
        words = VGroup(get_text(f"{found.label}: {capacity}", BODY_SIZE, TEXT))
        if found.capacity is not None and found.gpus > scene.plan.choice.gpus:  # (compared a GPU at a time)
            words.add(get_text(f"on {fmt.count(found.gpus)} GPUs: {fmt.approx(found.capacity_per_gpu)}/s a GPU",
                               SMALL_SIZE, MUTED))
            words.arrange(DOWN, aligned_edge=LEFT, buff=0.08)
        dot = Dot(radius=0.08, color=SCHEDULER_COLOURS[found.name]).next_to(words[0], LEFT, buff=0.15)
        legend.add(VGroup(dot, words))
    legend.arrange(DOWN, aligned_edge=LEFT, buff=0.22)
    room = SAFE_RIGHT - 0.1 - LEGEND_LEFT
    if legend.width > room:  # a long capacity (and its GPUs) on a deployment of many
        legend.scale(room / legend.width)
    legend.move_to([LEGEND_LEFT, -0.6, 0], aligned_edge=LEFT)
    heading = get_text("capacity", BODY_SIZE, MUTED).next_to(legend, UP, buff=0.3).align_to(legend, LEFT)
    # The chart and the legend right of the middle together (twice BALANCE, as far as the frame allows: the chart's
    # tick labels weigh on the left); the chart alone there until the legend comes.
    plot = VGroup(chart, slo_line, slo_label, *curves.values())
    together = VGroup(plot, heading, legend)
    shift = min(2 * BALANCE - together.get_center()[0], SAFE_RIGHT - 0.1 - together.get_right()[0])
    VGroup(together, *knees.values()).shift(RIGHT * shift)
    # (alone, its axes three times as far right: its tick labels and the axis's title hang left of them, its heaviest
    # line, static batching's, runs along its top from the left)
    aside = RIGHT * (chart.axes.get_center()[0] - 3 * BALANCE)
    return CapacityPicture(title, chart, slo_line, slo_label, curves, knees, VGroup(heading, legend), plot, aside)

