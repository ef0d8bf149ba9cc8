"""Sluice and tap: prefill floods the whole prompt through at once; decode drips one token at a time.

Both beats share one stage, the chip and the weights wall, and are one shot: prefill ends on its
picture, and decode starts from it, turns the lights off and opens the tap. Each beat's last
picture is built by one function here (`prefill_ending`, `decode_ending`), which the beat itself
animates towards and the next beat starts from.
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import (DOWN, LEFT, RIGHT, UP, AnimationGroup, Arrow, FadeIn, FadeOut, FadeTransform, Indicate, Rectangle,
                   ReplacementTransform, Square, Succession, VGroup, Write, rate_functions)

from render import formatting as fmt, formulas
from scenes.base import BeatScene
from scenes.helpers import (Chip, Counter, WeightsWall, get_formula, get_pill, get_text, get_title, inside_safe_area,
                            retitle, slide_clear_of, tex_text, wall_label)
from scenes.base import AMBIENT_SECONDS as AMBIENT
from scenes.style import COMPUTE, HIGHLIGHT, LABEL_SIZE, MEMORY, MUTED, SMALL_SIZE, TEXT
from scenes.two_waits import two_waits_picture

CHIP_AT = LEFT * 1.9 + UP * 0.5
WALL_AT = RIGHT * 3.9 + UP * 0.35
TOKENS_AT = LEFT * 5.3 + UP * 0.5
COUNTERS_AT = RIGHT * 3.3 + DOWN * 2.55
FORMULA_AT = LEFT * 1.9 + DOWN * 2.95  # the beat's formula, under the chip ...
FORMULA_WIDTH = 4.4                     # ... and clear of the counters
DIVISION_WIDTH = 5.8                    # the sum the counters become
# Decode has no tokens left of the chip and its counters under the wall: its picture stands further left,
# so its weight sits near the frame's centre (the stage slides there as prefill hands over). Not with EFFICIENCY=,
# whose note of the ceilings stands left of the chip.
DECODE_SHIFT = LEFT * 0.8


@dataclass
class Stage:
    """What both beats show: the title, the chip, the weights wall and the bus between them."""

    title: object
    chip: Chip
    wall: WeightsWall
    link: Arrow

    @property
    def parts(self) -> list:
        return [self.title, self.chip, self.wall, self.link]

    def above_chips(self, label, end: float | None = None):
        """`label` just above the chips (its right edge at `end`, if given), slid right of the title's
        context line where a long one would touch it."""
        label.next_to(self.chip.package, UP, buff=0.2)
        if end is not None:
            label.set_x(end - label.width / 2)
        return slide_clear_of(label, self.title)


def get_stage(scene: BeatScene, title: str) -> Stage:
    plan, spec = scene.plan, scene.plan.spec
    gpus = spec.gpus
    gpu = plan.choice.gpu  # its cores in the vendor's own term: "132 SMs", "304 CUs"
    chip_label = (f"{plan.choice.times(gpu.short_name)} · {fmt.count(spec.sm_count)} {gpu.compute_unit}s"
                  + (" each" if gpus > 1 else ""))
    chip = Chip(spec.sm_count, chip_label, count=gpus)
    chip.move_to(CHIP_AT)
    wall = WeightsWall(wall_label(scene), shares=gpus, experts=spec.experts).move_to(WALL_AT)
    inside_safe_area(wall.label)  # "1,342 GB of weights · 256 experts" is wider than the wall
    link = Arrow(wall.bricks.get_left(), chip.package.get_right(), buff=0.15, color=MEMORY, stroke_width=5)
    return Stage(get_title(title, plan.choice.label), chip, wall, link)


def at_best(scene: BeatScene, caption: str, best: str) -> str:
    """A counter's caption: with EFFICIENCY= its value is what the deployment gives here, and the ceiling follows."""
    return f"{caption} here\n{best} at best" if scene.plan.expected else caption


def times_gpus(scene: BeatScene, text: str) -> str:
    """A per-GPU figure as the deployment has it: itself on one GPU, 'T × it' on T of them."""
    gpus = scene.plan.spec.gpus
    return text if gpus == 1 else f"{gpus} × {text}"


@dataclass
class Division:
    """A time as the division that made it (plus the all-reduces on several GPUs), then its result:
    operations ÷ peak ≈ time (⇒ what follows it, for decode the rate). `value` indexes the result in `formula`."""

    formula: object
    value: int

    @property
    def numerator(self):
        return self.formula[0]

    @property
    def result(self):
        return self.formula[self.value]

    @property
    def outcome(self):
        """The last part: the rate a decode step's time gives (the result itself where nothing follows)."""
        return self.formula[len(self.formula) - 1]

    def rest(self, *named) -> list:
        """The parts that are none of `named` (by default, the numerator and the result)."""
        named = named or (self.numerator, self.result)
        return [part for part in self.formula if all(part is not other for other in named)]


def get_division(scene: BeatScene, numerator: str, denominator: str, communication: float, result: str,
                 color: str, then: tuple = (), share: float | None = None) -> Division:
    """With `share` (EFFICIENCY=), the denominator is the part of the ceiling the deployment reaches."""
    gpus = scene.plan.spec.gpus
    below = tex_text(denominator) if gpus == 1 else rf"{gpus} \times {tex_text(denominator)}"
    if share is not None:
        below = rf"{tex_text(fmt.percent(share, short=True))} \times {below}"
    parts: list = [rf"\frac{{{tex_text(numerator)}}}{{{below}}}"]
    if scene.plan.spec.gpus > 1:
        parts += ["+", (tex_text(fmt.milliseconds(communication, short=True)), MUTED)]
    parts += [r"\approx", (tex_text(result), color)]
    value = len(parts) - 1
    parts += list(then)
    formula = get_formula(*parts)
    if formula.width > DIVISION_WIDTH and then:  # what follows goes on a second line
        VGroup(*formula[value + 1:]).next_to(VGroup(*formula[:value + 1]), DOWN, buff=0.2)
    if formula.width > DIVISION_WIDTH:  # a fast choice's numbers run long: keep the sum inside the frame
        formula.scale_to_fit_width(DIVISION_WIDTH)
    return Division(formula.move_to(COUNTERS_AT), value)


def get_counter_row(*counters: tuple[Counter, float]) -> VGroup:
    """Counters side by side under the wall (two per row when there are more than two), each
    with the value it will reach: a long final value moves the row right, clear of the formula."""
    row = VGroup(*[counter for counter, _ in counters])
    if len(counters) > 2:
        row.arrange_in_grid(rows=2, buff=(0.5, 0.3))
    else:
        row.arrange(RIGHT, buff=0.8)
    row.move_to(COUNTERS_AT)
    left = min(counter.caption.get_x() - counter.final_width(value) / 2 for counter, value in counters)
    clear_of_formula = FORMULA_AT[0] + FORMULA_WIDTH / 2 + 0.3
    if left < clear_of_formula:
        row.shift(RIGHT * (clear_of_formula - left))
    return row


# -- prefill ---------------------------------------------------------------------------------------


@dataclass
class PrefillEnding:
    """Prefill's last picture: every core lit, and its counters assembled into their formula."""

    stage: Stage
    tokens_label: object
    work: object        # operations = 2PN + 2LdN²
    peak: object
    bound: object
    busy: object
    result: Division    # 33 trillion ÷ 989 TFLOP/s ≈ 34 ms

    @property
    def parts(self) -> list:
        return [*self.stage.parts, self.tokens_label, self.work, self.peak, self.bound, self.busy, self.result.formula]


def prefill_ending(scene: BeatScene, title: str) -> PrefillEnding:
    plan, prefill = scene.plan, scene.plan.numbers.prefill
    stage = get_stage(scene, title)
    stage.chip.cores.set_fill(COMPUTE)
    tokens_label = get_text(f"{fmt.count(prefill.tokens)} tokens", LABEL_SIZE, COMPUTE)
    tokens_label.move_to(TOKENS_AT + UP * 1.25)
    work = get_formula(formulas.PREFILL_WORK)
    work.move_to(FORMULA_AT)
    peak = get_pill(f"peak {times_gpus(scene, fmt.teraflops(plan.spec.peak_flops, short=True))}", COMPUTE)
    stage.above_chips(peak)
    compute_bound = prefill.compute_seconds >= prefill.memory_seconds
    bound = get_pill("compute-bound" if compute_bound else "memory-bound", COMPUTE if compute_bound else MEMORY)
    bound.next_to(stage.chip, DOWN, buff=0.3)
    busy = get_text(f"{fmt.percent(prefill.compute_utilisation, short=True)} of the arithmetic busy",
                    SMALL_SIZE, MUTED).next_to(bound, DOWN, buff=0.15)
    efficiency = plan.choice.efficiency
    if compute_bound:
        division = (fmt.large(prefill.ops), fmt.teraflops(plan.spec.peak_flops, short=True))
        share = efficiency.compute if efficiency else None
    else:  # a memory-bound prefill waits on its bytes, not its arithmetic
        division = (fmt.gigabytes(prefill.bytes_all_gpus, short=True),
                    fmt.bandwidth(plan.spec.memory_bandwidth, short=True))
        share = efficiency.memory if efficiency else None
    here = scene.numbers_here.prefill
    result = get_division(scene, *division, here.communication_seconds, fmt.duration(here.seconds, short=True),
                          COMPUTE, share=share)
    return PrefillEnding(stage, tokens_label, work, peak, bound, busy, result)


@dataclass
class PrefillPicture:
    """Everything the prefill beat shows: the prompt's tokens behind their gate, the two counters, and the last
    picture they all become (`ending`)."""

    ending: PrefillEnding
    tokens: VGroup
    gate: Rectangle
    operations: Counter
    seconds: Counter
    counters: VGroup
    experts_read: float     # a mixture of experts: the experts the prompt's tokens wake, per layer

    @property
    def stage(self) -> Stage:
        return self.ending.stage

    def sweep(self, run_time: float = 1.2):
        """One read of the wall: every token of the prompt served at once."""
        return self.stage.wall.sweep(run_time=run_time, experts=self.experts_read)


def prefill_picture(scene: BeatScene) -> PrefillPicture:
    prefill, here = scene.plan.numbers.prefill, scene.numbers_here.prefill
    ending = prefill_ending(scene, scene.beat.title)
    ending.stage.chip.cores.set_fill(ending.stage.chip.idle_color)
    tokens = VGroup(*[Square(0.16, stroke_width=0, fill_color=COMPUTE, fill_opacity=0.9) for _ in range(40)])
    tokens.arrange_in_grid(8, 5, buff=0.06).move_to(TOKENS_AT)
    gate = Rectangle(width=0.12, height=tokens.height + 0.5, stroke_width=0, fill_color=TEXT, fill_opacity=0.9)
    gate.next_to(tokens, RIGHT, buff=0.2)
    operations = Counter("operations", fmt.large, color=COMPUTE)
    # Ideally the first token's whole wait; with EFFICIENCY= the prefill alone (the overhead comes on top).
    seconds = Counter(at_best(scene, "prefill", fmt.duration(prefill.seconds, short=True)) if scene.plan.expected
                      else "time to first token", lambda v: fmt.duration(v, short=True), color=COMPUTE)
    counters = get_counter_row((operations, prefill.ops), (seconds, here.seconds))
    return PrefillPicture(ending, tokens, gate, operations, seconds, counters, prefill.experts_read)


class Prefill(BeatScene):
    """The sluice: the prompt's tokens wait at a gate, then flood through every core together."""

    predecessor, successor = "two-waits", "decode"

    def build(self) -> None:
        prefill, here = self.plan.numbers.prefill, self.numbers_here.prefill
        picture = prefill_picture(self)
        ending, stage, tokens, operations, seconds = (picture.ending, picture.stage, picture.tokens,
                                                      picture.operations, picture.seconds)
        tokens_in = FadeIn(tokens, shift=RIGHT * 0.3)
        if self.continues:
            # One shot with the opening: its small chip grows into the stage's, and the pasted report moves to
            # where the prompt waits, to become its tokens.
            before = two_waits_picture(self)
            chip, document = before.chip, before.document
            self.add(document, chip)
            self.play(FadeIn(stage.title), ReplacementTransform(chip.package, stage.chip.package),
                      ReplacementTransform(chip.cores, stage.chip.cores), FadeIn(stage.chip.label),
                      FadeIn(stage.wall, shift=LEFT * 0.3), FadeIn(stage.link),
                      document.animate.scale_to_fit_width(tokens.width).move_to(tokens), run_time=1.0)
            self.carry_on_with(*stage.parts, document)
            tokens_in = FadeTransform(document, tokens)
        else:
            self.enter(*stage.parts)
        self.add(picture.counters)

        self.at("one-pass", tokens_in, FadeIn(picture.gate), run_time=0.8)
        self.ambient = lambda: Indicate(tokens, color=HIGHLIGHT, scale_factor=1.04)  # the prompt waits at the gate
        self.at("tokens", Write(ending.tokens_label), Indicate(tokens, color=HIGHLIGHT, scale_factor=1.05),
                run_time=0.8)
        # The gate opens: all tokens pour into the chip at once, every core lights, one sweep of the wall.
        self.at("ops", FadeOut(picture.gate, shift=UP * 0.5),
                tokens.animate.move_to(stage.chip.cores).scale(0.4).set_opacity(0),
                stage.chip.light(1.0), picture.sweep(), operations.appear(),
                operations.count_to(prefill.ops), Write(ending.work), run_time=1.4)
        self.ambient = lambda: picture.sweep(AMBIENT)
        self.at("peak", FadeIn(ending.peak, shift=DOWN * 0.2), run_time=0.6)
        self.at("time", seconds.appear(), seconds.count_to(here.seconds), run_time=1.2)
        self.at("busy", FadeIn(ending.bound, scale=1.1), FadeIn(ending.busy), run_time=0.6)

        # The payoff: the counters assemble into the sum they came from, and one more read of the
        # wall serves every token at once.
        self.hold_for_payoff(1.2, offset=0.2)
        for counter in (operations, seconds):
            counter.suspend_updating()
        result = ending.result
        self.play(FadeTransform(operations.value, result.numerator), FadeTransform(seconds.value, result.result),
                  *[FadeIn(part) for part in result.rest()], FadeOut(operations.caption), FadeOut(seconds.caption),
                  run_time=1.2)
        self.remove(tokens)
        self.repeat_until("end", lambda: (picture.sweep(), Indicate(result.formula, color=HIGHLIGHT,
                                                                    scale_factor=1.04)),
                          run_time=1.2, leaving=1.3)


# -- decode ----------------------------------------------------------------------------------------


@dataclass
class DecodeEnding:
    """Decode's last picture: one core lit, the bus at full speed, the counters become their formula."""

    stage: Stage
    idle: object
    bandwidth: object
    bound: object
    per_token: object   # t = weight bytes ÷ bandwidth
    result: Division    # 16 GB ÷ 3.35 TB/s ≈ 4.8 ms → 209 tokens/s
    best: object        # EFFICIENCY=: the ceilings the expected counters fall short of, under the bound (else empty)

    @property
    def parts(self) -> list:
        return [*self.stage.parts, self.idle, self.bandwidth, self.bound, self.per_token, self.result.formula,
                self.best]

    @property
    def lit_core(self):
        return self.stage.chip.cores[0]


def decode_ending(scene: BeatScene, title: str) -> DecodeEnding:
    plan, decode = scene.plan, scene.plan.numbers.decode
    stage = get_stage(scene, title)
    stage.chip.light_now(decode.compute_utilisation)
    stage.link.set_color(HIGHLIGHT)
    idle = get_text(f"{fmt.percent(decode.compute_utilisation, short=True)} of the arithmetic busy",
                    SMALL_SIZE, MUTED).next_to(stage.chip, DOWN, buff=0.2)
    bandwidth = get_pill(times_gpus(scene, fmt.bandwidth(plan.spec.memory_bandwidth, short=True)), MEMORY)
    bandwidth.next_to(stage.link, UP, buff=0.15)
    gap_left, gap_right = stage.chip.package.get_right()[0], stage.wall.bricks.get_left()[0]
    if bandwidth.width <= gap_right - gap_left - 0.1:
        bandwidth.set_x((gap_left + gap_right) / 2)  # between, not over, them
    else:  # many chips leave too narrow a gap: above the chips, ending before the wall's label
        stage.above_chips(bandwidth, end=min(gap_right, stage.wall.label.get_left()[0]) - 0.15)
    bound = get_pill("memory-bound", MEMORY).next_to(idle, DOWN, buff=0.2)
    best = VGroup()
    if plan.expected:  # left of the bound, muted: what the counters fall short of
        best = get_text(f"at best {fmt.milliseconds(decode.step_seconds, short=True)} a token,\n"
                        f"{fmt.tokens_per_second(decode.tokens_per_second, short=True)}", SMALL_SIZE, MUTED)
        inside_safe_area(best.next_to(bound, LEFT, buff=0.35))
    per_token = get_formula(formulas.token_time(bool(plan.spec.experts), plan.spec.gpus))
    if per_token.width > FORMULA_WIDTH:  # beside the counters, not under them
        per_token.scale_to_fit_width(FORMULA_WIDTH)
    per_token.move_to(FORMULA_AT)
    here, efficiency = scene.numbers_here.decode, plan.choice.efficiency
    result = get_division(scene, fmt.gigabytes(decode.bytes_per_token, short=True),
                          fmt.bandwidth(plan.spec.memory_bandwidth, short=True), here.communication_seconds,
                          fmt.milliseconds(here.step_seconds, short=True), MEMORY,
                          then=(r"\Rightarrow", (tex_text(fmt.tokens_per_second(here.tokens_per_second, short=True)),
                                                  HIGHLIGHT)), share=efficiency.memory if efficiency else None)
    ending = DecodeEnding(stage, idle, bandwidth, bound, per_token, result, best)
    if not plan.expected:  # (with EFFICIENCY= the ceilings' note left of the bound already weighs the left)
        VGroup(*ending.parts[1:]).shift(DECODE_SHIFT)
    return ending


@dataclass
class DecodePicture:
    """Everything the decode beat shows: the stage with its lights out, the four counters, the tap's drops, and
    the last picture they become (`ending`)."""

    ending: DecodeEnding
    read: Counter
    operations: Counter
    step: Counter
    rate: Counter
    counters: VGroup
    drop_start: object      # where each token drops from, above the chip
    experts_read: float     # a mixture of experts: the experts one token wakes, per layer

    @property
    def stage(self) -> Stage:
        return self.ending.stage

    def drop(self) -> Succession:
        """One token falls from the tap into the chip."""
        token = Square(0.22, stroke_width=0, fill_color=HIGHLIGHT, fill_opacity=1).move_to(self.drop_start)
        return Succession(FadeIn(token, run_time=0.15),
                          token.animate(run_time=0.45,
                                        rate_func=rate_functions.rush_into).move_to(self.stage.chip.package.get_top()),
                          FadeOut(token, run_time=0.1))

    def read_once(self, run_time: float):
        """One token's read of the wall (on a mixture of experts, only its experts)."""
        return self.stage.wall.sweep(run_time=run_time, experts=self.experts_read)


def decode_picture(scene: BeatScene) -> DecodePicture:
    decode, here, expected = scene.plan.numbers.decode, scene.numbers_here.decode, scene.plan.expected
    ending = decode_ending(scene, scene.beat.title)
    ending.stage.chip.cores.set_fill(ending.stage.chip.idle_color)
    ending.stage.link.set_color(MEMORY)
    read = Counter("bytes read per token", lambda v: fmt.gigabytes(v, short=True), color=MEMORY)
    operations = Counter("operations per token", fmt.large, color=COMPUTE)
    step = Counter("time per token here" if expected else "time per token",
                   lambda v: fmt.milliseconds(v, short=True), color=MEMORY)
    rate = Counter("tokens/s here" if expected else "tokens per second",
                   lambda v: fmt.tokens_per_second(v, short=True).split()[0], color=HIGHLIGHT)
    counters = get_counter_row((read, decode.bytes_per_token), (operations, decode.ops_per_token),
                               (step, here.step_seconds), (rate, here.tokens_per_second))
    if not expected:
        counters.shift(DECODE_SHIFT)
    return DecodePicture(ending, read, operations, step, rate, counters,
                         ending.stage.chip.package.get_top() + UP * 1.0, decode.experts_read)


class Decode(BeatScene):
    """The tap: one token at a time, each one a full read of the wall for a sliver of arithmetic."""

    predecessor, successor = "prefill", "roofline"

    def build(self) -> None:
        decode, here = self.plan.numbers.decode, self.numbers_here.decode
        picture = decode_picture(self)
        ending, stage, drop, read_once = picture.ending, picture.stage, picture.drop, picture.read_once
        read, operations, step, rate = picture.read, picture.operations, picture.step, picture.rate
        if self.continues:
            # One shot with prefill: its picture, then the lights go out and the flood becomes a drip.
            before = prefill_ending(self, self.beat.previous_title)
            self.add(*before.parts)
            self.play(retitle(before.stage.title, stage.title), before.stage.chip.idle(),
                      *[FadeOut(part) for part in (before.tokens_label, before.work, before.peak, before.bound,
                                                   before.busy, before.result.formula)], run_time=0.8)
            if not self.plan.expected:  # the stage slides to decode's place (see DECODE_SHIFT)
                self.carry_on_with(*stage.parts[:1], *before.stage.parts[1:])
                self.play(*[old.animate.move_to(new) for old, new in zip(before.stage.parts[1:], stage.parts[1:])],
                          run_time=0.5)
            self.carry_on_with(*stage.parts)
        else:
            self.enter(*stage.parts)
        self.add(picture.counters)

        self.at("drip", drop(), run_time=0.7)
        self.ambient = lambda: AnimationGroup(drop(), read_once(AMBIENT))  # the tap drips on
        self.at("weights", read_once(1.3), read.appear(), read.count_to(decode.bytes_per_token), run_time=1.3)
        self.at("ops", stage.chip.light(decode.compute_utilisation), operations.appear(),
                operations.count_to(decode.ops_per_token), run_time=1.0)
        self.play(FadeIn(ending.idle), run_time=0.4)
        self.at("bandwidth", FadeIn(ending.bandwidth, shift=DOWN * 0.2), stage.link.animate.set_color(HIGHLIGHT),
                run_time=0.6)
        self.at("time", step.appear(), step.count_to(here.step_seconds), drop(), read_once(0.9),
                Write(ending.per_token), run_time=1.0)
        self.at("rate", rate.appear(), rate.count_to(here.tokens_per_second), FadeIn(ending.bound), FadeIn(ending.best),
                drop(), read_once(0.9), run_time=1.0)

        # The payoff: the counters become the division that made them, while the tap keeps dripping.
        self.hold_for_payoff(1.2)
        for counter in (read, operations, step, rate):
            counter.suspend_updating()
        result = ending.result
        self.play(FadeTransform(read.value, result.numerator), FadeTransform(step.value, result.result),
                  FadeTransform(rate.value, result.outcome),
                  *[FadeIn(part) for part in result.rest(result.numerator, result.result, result.outcome)],
                  FadeOut(operations.value), *[FadeOut(counter.caption) for counter in (read, operations, step, rate)],
                  drop(), read_once(1.2), run_time=1.2)
        self.repeat_until("end", lambda: (drop(), read_once(1.0)), run_time=1.0, leaving=1.1)
