"""What batching hands over: the weights wall and the chart as it leaves them. Batching draws them; wasted money
starts from them.
"""

from __future__ import annotations

from manim import LEFT, RIGHT, UP

from render.engine.scene import BeatScene
from scenes.figures.charts import RooflineChart
from scenes.figures.chip import WeightsWall, wall_label
from scenes.figures.text import inside_safe_area
from scenes.pictures.roofline import axis_ranges

WALL_WIDTH, WALL_HEIGHT = 2.8, 2.4  # the weights wall batching draws, whose KV stacks it scales by


def batching_wall(scene: BeatScene) -> WeightsWall:
    spec = scene.plan.spec
    wall = WeightsWall(wall_label(scene), width=WALL_WIDTH, height=WALL_HEIGHT, rows=8, cols=7, shares=spec.gpus,
                       experts=spec.experts)
    inside_safe_area(wall.move_to(LEFT * 2.75 + UP * 0.9).label)
    return wall


def batching_chart(scene: BeatScene) -> RooflineChart:
    plan, spec = scene.plan, scene.plan.spec
    x_range, y_range = axis_ranges(plan)
    chart = RooflineChart(spec.peak_flops, spec.memory_bandwidth, x_range, y_range, width=4.6, height=3.2)
    return inside_safe_area(chart.move_to(RIGHT * 3.3 + UP * 0.6))  # (a wider range of intensities adds a decade)


def batching_handover(scene: BeatScene, wall: WeightsWall | None = None, chart: RooflineChart | None = None) -> list:
    """What the wasted-money beat takes on from batching's last picture: the chart's roof and slope (the GPU's
    arithmetic and bandwidth) become its bars for them; after a measured sweep replaced the chart, the wall becomes
    the bandwidth's. The batching beat gives its own wall and chart; the next beat builds just these, so it reads
    no more of the plan than they need."""
    if scene.plan.measured.sweep:
        return [(wall or batching_wall(scene)).bricks]
    chart = chart or batching_chart(scene)
    return [chart.roof, chart.slope]
