"""The roofline: where decode and prefill sit on one GPU's limits.

Decode's operating point flies in from the decode beat's chip; the GPU pills morph the chart; it ends on the
picture the batching beat starts from (`roofline_ending`, in scenes/pictures/roofline.py).
"""

from __future__ import annotations

from manim import DOWN, LEFT, RIGHT, UP, Create, FadeIn, FadeOut, FadeTransform, Indicate, Transform, VGroup, Write

from render import formatting as fmt
from render.engine.scene import BeatScene
from scenes.figures.counters import Labelled
from scenes.figures.text import get_pill, retitle, slide_clear_of
from scenes.pictures.decode import decode_ending
from scenes.pictures.roofline import gpu_badge, ridge_formula, roofline_ending
from scenes.style import COMPUTE, HIGHLIGHT, MEMORY


class Roofline(BeatScene):
    """The roofline is drawn; decode lands low on the slope, prefill on the roof, past the ridge."""

    predecessor, successor = "decode", "batching"

    def build(self) -> None:
        plan, spec = self.plan, self.plan.spec
        ending = roofline_ending(self, self.beat.title)
        chart = ending.chart
        frame = VGroup(chart.axes, chart.ticks, chart.x_title, chart.y_title)
        decode_dot, decode_label = ending.decode.mark, ending.decode.label
        self.enter_from_decode(ending, frame)
        self.play(Create(chart.slope), run_time=0.8)
        # The roofline's rule beside it as it is drawn: the roof, the slope and the min that joins them.
        self.play(Create(chart.roof), FadeIn(ending.badge), Write(ending.attainable), run_time=0.8)

        decode_dot_in = [] if self.continues else [FadeIn(decode_dot, scale=1.4)]
        self.at("decode", *decode_dot_in, FadeIn(decode_label), Indicate(decode_dot, scale_factor=1.6), run_time=0.7)
        self.ambient = lambda: Indicate(decode_dot, scale_factor=1.6)  # the operating point waits on the slope
        slope_label = get_pill("memory-bound", MEMORY).next_to(chart.slope.point_from_proportion(0.5), DOWN + RIGHT,
                                                                buff=0.1)
        self.at("slope", Indicate(chart.slope, color=HIGHLIGHT, scale_factor=1.0), FadeIn(slope_label), run_time=0.8)
        self.at("prefill", FadeIn(ending.prefill, scale=1.4), run_time=0.7)
        on_roof = plan.numbers.prefill.ops_per_byte >= spec.ridge_ops_per_byte
        roof_label = get_pill("compute-bound" if on_roof else "still memory-bound", COMPUTE if on_roof else MEMORY)
        # Above prefill's label, ending where it ends: the GPU's badge stands right of it.
        roof_label.next_to(ending.prefill.label, UP, buff=0.15).align_to(ending.prefill.label, RIGHT)
        slide_clear_of(roof_label, ending.title)
        where = chart.roof if on_roof else chart.slope  # the narration says which it sits on
        self.at("roof", Indicate(where, color=HIGHLIGHT, scale_factor=1.0), FadeIn(roof_label),
                Indicate(ending.attainable, scale_factor=1.05), run_time=0.9)
        if plan.achieved:  # what this deployment reaches, under the datasheet's line
            self.play(Create(ending.achieved.mark), FadeIn(ending.achieved.label), run_time=0.8)
        self.at("ridge", Create(ending.ridge.mark), Write(ending.ridge.label), Write(ending.ridge_sum),
                FadeOut(slope_label), run_time=1.0)

        # The GPU pills: the same model on other GPUs moves the ridge, both points and the sum; then home.
        self.hold_for_payoff(0.4)
        self.play(FadeOut(roof_label), Indicate(decode_dot, scale_factor=1.6), run_time=0.4)
        home = (plan.choice.gpu.short_name, spec.peak_flops, spec.memory_bandwidth, spec.ridge_ops_per_byte)
        stops = [(pill.name, pill.peak_flops, pill.memory_bandwidth, pill.ridge_ops_per_byte) for pill in plan.pills]
        if not stops or self.seconds_until("end") < 1.2:
            # No pills: the decode point pulses on its slope.
            self.repeat_until("end", lambda: (Indicate(decode_dot, scale_factor=1.8), Indicate(ending.ridge.label)),
                              run_time=0.9, leaving=1.0)
            return
        self.tour_the_gpus(ending, [*stops, home])

    def enter_from_decode(self, ending, frame) -> None:
        """One shot with decode: its picture fades, and its operating point flies into the chart (else the chart's
        frame enters)."""
        if not self.continues:
            self.enter(ending.title, frame)
            return
        before = decode_ending(self, self.beat.previous_title)
        self.add(*before.parts)
        flying = before.lit_core.copy()
        self.add(flying)
        self.play(retitle(before.stage.title, ending.title), FadeIn(frame),
                  *[FadeOut(part) for part in before.parts[1:]], Transform(flying, ending.decode.mark.copy()),
                  run_time=1.2)
        self.carry_on_with(ending.title, frame, ending.decode.mark)

    def tour_the_gpus(self, ending, stops: list[tuple]) -> None:
        """The GPU pills, the film's own last: the same model on each moves the ridge, both points and the sum, in
        equal shares of the time left."""
        plan, n, chart = self.plan, self.plan.numbers, ending.chart
        step = (self.seconds_until("end") - 0.05) / len(stops)
        badge, ridge, ridge_sum = ending.badge, ending.ridge, ending.ridge_sum
        for index, (name, peak, bandwidth, ridge_value) in enumerate(stops):
            # The reached roof is this GPU's (its shares were measured here): it leaves with the first pill, returns
            # home.
            achieved = ([FadeOut(ending.achieved)] if index == 0 else
                        [FadeIn(ending.achieved)] if index == len(stops) - 1 else []) if plan.achieved else []
            moves = [point.animate.shift(chart.point(intensity, min(peak, bandwidth * intensity))
                                         - point.mark.get_center())
                     for point, intensity in ((ending.decode, n.decode.ops_per_byte),
                                              (ending.prefill, n.prefill.ops_per_byte))]
            new_sum = ridge_formula(peak, bandwidth, ridge_value).move_to(ridge_sum, aligned_edge=LEFT)
            new_badge = gpu_badge(name, ridge_value, chart)
            morph = chart.morph_to(peak, bandwidth)
            new_ridge = chart.ridge_marker(f"ridge {fmt.integer(ridge_value, short=True)}")
            # Lines move; words cross-fade (a morph between two numbers reads as noise).
            self.play(morph, FadeTransform(badge, new_badge), Transform(ridge.mark, new_ridge.mark),
                      FadeTransform(ridge.label, new_ridge.label), FadeTransform(ridge_sum, new_sum), *moves, *achieved,
                      run_time=step * 0.8)
            badge, ridge_sum = new_badge, new_sum
            ridge = Labelled(ridge.mark, new_ridge.label)
            self.wait_for(step * 0.2)
