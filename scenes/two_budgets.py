"""Two budgets: what each wait answers to and the levers that move it, then the end card."""

from __future__ import annotations

from dataclasses import dataclass

from manim import DOWN, RIGHT, UP, UR, AnimationGroup, FadeIn, Indicate, LaggedStart, Line, ReplacementTransform, VGroup

from render import formatting as fmt
from render.engine.scene import BeatScene
from scenes.figures.counters import BudgetCard, Lever
from scenes.figures.text import get_text, get_title
from scenes.pictures.cache_rides_along import cache_picture
from scenes.style import (BODY_SIZE, COMPUTE, HIGHLIGHT, MEMORY, MUTED, SAFE_RIGHT, SAFE_TOP, SMALL_SIZE, TEXT,
                          TITLE_SIZE)


@dataclass
class BudgetsPicture:
    """The two budgets as cards, each lever under its card's header (the figure each moves, here), the lever that
    is not one struck through, and the end card that follows."""

    title: object
    ttft: BudgetCard
    tps: BudgetCard
    ttft_levers: list
    tps_levers: list
    not_this: Lever         # faster arithmetic: no lever of tokens per second
    strike: Line
    end_card: VGroup        # what this film was computed for, and where its numbers come from
    capacity: VGroup | None = None  # the extended cut: the capacity its capacity beat found, named again


def budgets_picture(scene: BeatScene) -> BudgetsPicture:
    plan, best = scene.plan, scene.plan.numbers
    n = scene.numbers_here  # the levers' figures: expected ones with EFFICIENCY=, each beside its ceiling
    ttft = BudgetCard("Time to first token", "answers to arithmetic (and attention)", COMPUTE)
    tps = BudgetCard("Tokens per second", "answers to memory bandwidth", MEMORY)
    VGroup(ttft, tps).arrange(RIGHT, buff=0.6).move_to(DOWN * 0.45)  # place the cards side by side
    overhead = plan.choice.efficiency.overhead_seconds if plan.expected else 0
    ttft_levers = [
        ttft.lever("trim the prompt", f"{fmt.duration(n.prefill.seconds, short=True)} for "
                                      f"{fmt.count(n.prefill.tokens)} tokens"
                                      + (f" (+ {fmt.duration(overhead, short=True)} overhead)" if overhead else "")),
        ttft.lever("cache the prompt prefix", "a cached prefix is not prefilled again"),
        ttft.lever("more arithmetic", f"{fmt.teraflops(plan.spec.total_peak_flops, short=True)} on "
                                      f"{plan.choice.times(plan.choice.gpu.short_name)}"),
    ]
    tps_levers = [
        tps.lever("bandwidth", f"{fmt.bandwidth(plan.spec.total_bandwidth, short=True)} → "
                               f"{fmt.tokens_per_second(n.decode.tokens_per_second, short=True)}"
                               + (f" ({fmt.integer(best.decode.tokens_per_second, short=True)} at best)"
                                  if plan.expected else "")),
        # Only a smaller format than the film's own is a lever; weights already the smallest have none.
        *([tps.lever("quantisation", f"{n.quantised.dtype.name} weights → "
                                     f"{fmt.tokens_per_second(n.quantised.tokens_per_second, short=True)}"
                                     f" ({fmt.times(n.quantised.speedup, short=True)})")] if n.quantised else []),
        tps.lever("batching", f"{fmt.count(n.batch.size)} users → "
                              f"{fmt.tokens_per_second(n.batch.tokens_per_second, short=True)}"),
    ]
    not_this = tps.lever("faster arithmetic")
    not_this.words.set_color(MUTED)
    strike = Line(not_this.words.get_left(), not_this.words.get_right(), color=HIGHLIGHT, stroke_width=4)
    not_this.add(strike)  # the strike marks its own words
    return BudgetsPicture(get_title(scene.beat.title), ttft, tps, ttft_levers, tps_levers, not_this, strike,
                          end_card(plan, under_load=not scene.continues),
                          # (only where the film went on to a server under load, so the film as timed never reads the
                          # load group: its scene's reads, shown.json, are as they were)
                          capacity_badge(plan.load) if not scene.continues and plan.load else None)


def capacity_badge(load) -> VGroup:
    """The deployment's capacity at the objectives (the extended cut), top right, above the cards."""
    best, p = load.best, load.parameters
    figure = (f"capacity: {fmt.approx(best.capacity)} requests/s ({best.label})" if best else
              f"capacity: under {fmt.approx(load.rates[0])} requests/s")
    badge = VGroup(get_text(figure, BODY_SIZE, HIGHLIGHT),
                   get_text(f"{fmt.seconds(p.slo_ttft_seconds, short=True)} to the first token, "
                            f"{fmt.milliseconds(p.slo_tpot_seconds, short=True)} a token", SMALL_SIZE, MUTED)
                   ).arrange(DOWN, aligned_edge=RIGHT, buff=0.12)
    return badge.move_to([SAFE_RIGHT, SAFE_TOP, 0], aligned_edge=UR)


def end_card(plan, under_load: bool = False) -> VGroup:
    choice = plan.choice
    load = plan.load if under_load else None
    card = VGroup(
        get_text(plan.title, TITLE_SIZE * 1.4, TEXT, weight="BOLD"),
        get_text(choice.long_label, BODY_SIZE, HIGHLIGHT),
        get_text(f"compared with {choice.times(choice.compare_gpu.name)}", SMALL_SIZE, MUTED),
        get_text(f"measurements: {plan.measured.dataset.route}", SMALL_SIZE, MUTED),
        get_text("every number computed by a roofline model from datasheet peaks (dense) and model configs",
                 SMALL_SIZE, MUTED),
        *([get_text(f"expected figures at {choice.efficiency.shares},", SMALL_SIZE, MUTED),
           get_text(choice.efficiency.source, SMALL_SIZE, MUTED)] if plan.expected else []),
        *([get_text(f"under load: {fmt.count(load.parameters.requests)} requests simulated, Poisson arrivals "
                    f"(seed {fmt.count(load.parameters.seed)})", SMALL_SIZE, MUTED)] if load else []),
        get_text(f"after {plan.source}", SMALL_SIZE, MUTED),
    ).arrange(DOWN, buff=0.28)
    for line in card:
        if line.width > 12.0:
            line.scale_to_fit_width(12.0)
    return card


class TwoBudgets(BeatScene):
    """Two budgets and their levers; then the end card with what the film was computed for."""

    predecessor = "cache-rides-along"

    def build(self) -> None:
        picture = budgets_picture(self)
        ttft, tps = picture.ttft, picture.tps
        boxes_in = [FadeIn(ttft.box), FadeIn(tps.box)]
        if self.continues:
            # One shot with the cache beat: its two decode rates' bars become the budgets' cards (the long prompt's,
            # slowed by what the prompt left in the cache, the first budget's; the short prompt's, the second's).
            short, long = cache_picture(self).handed_over
            self.add(short, long)
            self.play(FadeIn(picture.title), ReplacementTransform(long, ttft.box), ReplacementTransform(short, tps.box),
                      run_time=1.0)
            boxes_in = []
        else:
            self.enter(picture.title)
        self.at("budgets", *boxes_in, FadeIn(ttft.header), FadeIn(tps.header), run_time=0.8)
        self.ambient = lambda: AnimationGroup(Indicate(ttft.name), Indicate(tps.name))
        self.at("ttft", LaggedStart(*[FadeIn(lever, shift=RIGHT * 0.2) for lever in picture.ttft_levers],
                                    lag_ratio=0.35), run_time=1.5)
        self.at("tps", LaggedStart(*[FadeIn(lever, shift=RIGHT * 0.2) for lever in picture.tps_levers],
                                   lag_ratio=0.35),
                *([FadeIn(picture.capacity, shift=DOWN * 0.2)] if picture.capacity else []), run_time=1.5)
        # One lever with its strike (animating a part apart would split the group Manim keeps on screen).
        self.at("not-arithmetic", FadeIn(picture.not_this, shift=RIGHT * 0.2), run_time=0.6)
        self.play(Indicate(picture.strike, scale_factor=1.0), run_time=0.5)

        # The end card: what this film was computed for, and where its numbers come from.
        self.wait_for(0.5)
        self.hold_until("speech-end", offset=0.4)
        self.ambient = None  # the end card stays still, to be read (the storyboard says so: holds)
        self.clear_stage(run_time=0.6)
        self.play(FadeIn(picture.end_card, shift=UP * 0.2), run_time=0.8)
