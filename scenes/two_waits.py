"""Two waits: the wait for the first word and the steady stream after it, and the two budgets they set.

Beats: two waits (the chat, the timeline of prefill and decode, the two jobs and the parts of
the GPU they use) and two budgets (the levers of each, then the end card).
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import (DOWN, LEFT, RIGHT, UP, AnimationGroup, Create, FadeIn, FadeOut, GrowFromEdge, Indicate, LaggedStart,
                   Line, Rectangle, ReplacementTransform, RoundedRectangle, Succession, VGroup, Write)

from render import formatting as fmt, formulas
from scenes.base import BeatScene
from scenes.helpers import BudgetCard, Chip, Lever, WeightsWall, get_formula, get_text, get_title, term
from scenes.style import (BODY_SIZE, COMPUTE, HIGHLIGHT, IDLE, LABEL_SIZE, MEMORY, MUTED, PANEL, SMALL_SIZE, TEXT,
                          TITLE_SIZE)

# The chat the opening shows: a question about a pasted report, and the reply that streams back (words of the
# chat, not of the narration: the picture shows the waits the voice names).
QUESTION = "Summarise this report"
REPLY_LINES = ("Sales grew in every region last year, led by", "online orders; the report recommends more",
               "support staff before the spring launch.")
TIMELINE_Y = -1.45


def get_chat_window() -> VGroup:
    window = RoundedRectangle(corner_radius=0.2, width=10.5, height=2.8, stroke_color=MUTED, stroke_width=2,
                              fill_color=PANEL, fill_opacity=1)
    return window.move_to(UP * 1.15)


def get_document() -> VGroup:
    """A pasted document: a page of grey lines."""
    page = Rectangle(width=2.2, height=1.1, stroke_color=MUTED, stroke_width=1.5, fill_color=PANEL, fill_opacity=1)
    lines = VGroup(*[Line(LEFT * 0.85, RIGHT * (0.85 - 0.3 * (index % 3 == 2)), color=MUTED, stroke_width=3)
                     for index in range(6)]).arrange(DOWN, buff=0.1, aligned_edge=LEFT).move_to(page)
    return VGroup(page, lines)


@dataclass
class TwoWaitsPicture:
    """Everything the opening shows: the chat (the question with its pasted report, then the reply: a cursor that
    waits, then words at a steady pace), the timeline under it (the wait, then a tick per token), the two jobs and
    the parts of the GPU each uses, and the sum of the two waits."""

    title: object
    window: object
    question: VGroup        # the user's message: the pasted report and what is asked of it
    document: VGroup
    cursor: Rectangle       # the reply's cursor: it blinks through the wait, then leads the words
    axis: Line
    wait_bar: Rectangle
    ttft: object
    words: list             # each word of the reply ...
    ticks: VGroup           # ... with its tick on the timeline: one decode step per token
    tpot: object
    chip: Chip
    prefill_label: object
    wall: WeightsWall
    decode_label: object
    arithmetic: object
    bandwidth: object
    latency: object         # latency = TTFT + (n − 1)·TPOT

    @property
    def ttft_term(self):
        return term(self.latency, r"\text{TTFT}")

    @property
    def tpot_terms(self) -> VGroup:
        return term(self.latency, r"(n-1)\cdot", r"\text{TPOT}")

    @property
    def handed_over(self) -> list:
        """What the prefill beat takes on: the pasted report becomes its prompt, the small chip its chip."""
        return [self.document, self.chip]

    def blink(self, times: int, run_time: float) -> Succession:
        """The cursor blinking while nothing has come back."""
        half = run_time / (2 * times)
        return Succession(*[animation for _ in range(times) for animation in
                            (FadeOut(self.cursor, run_time=half), FadeIn(self.cursor, run_time=half))])


def two_waits_picture(scene: BeatScene) -> TwoWaitsPicture:
    window = get_chat_window()
    # The user's message, right: the report pasted above the question, in a bubble.
    document = get_document().scale(0.6)
    asked = get_text(QUESTION, BODY_SIZE, TEXT)
    bubble_inside = VGroup(document, asked).arrange(RIGHT, buff=0.3)
    bubble = RoundedRectangle(corner_radius=0.15, width=bubble_inside.width + 0.5, height=bubble_inside.height + 0.3,
                              stroke_width=0, fill_color=IDLE, fill_opacity=1).move_to(bubble_inside)
    question = VGroup(bubble, bubble_inside)
    question.move_to(window.get_corner(UP + RIGHT) + DOWN * (0.2 + question.height / 2)
                     + LEFT * (0.3 + question.width / 2))
    # The reply, left: a cursor, then its words.
    lines = [get_text(line, BODY_SIZE, TEXT) for line in REPLY_LINES]
    reply = VGroup(*lines).arrange(DOWN, aligned_edge=LEFT, buff=0.12)
    reply.scale_to_fit_width(min(reply.width, 6.8))
    reply.move_to(window.get_corner(DOWN + LEFT) + UP * (0.2 + reply.height / 2) + RIGHT * (0.35 + reply.width / 2))
    words = [word for line, source in zip(lines, REPLY_LINES) for word in split_words(line, source)]
    cursor = Rectangle(width=0.09, height=lines[0].height * 1.05, stroke_width=0, fill_color=TEXT, fill_opacity=1)
    cursor.move_to(words[0], aligned_edge=LEFT)
    # The timeline under the chat: the wait (prefill), then one tick per token (decode).
    start = LEFT * 5.2 + UP * TIMELINE_Y
    axis = Line(start, start + RIGHT * 10.4, color=MUTED, stroke_width=2)
    wait_bar = Rectangle(width=3.6, height=0.34, stroke_width=0, fill_color=COMPUTE, fill_opacity=0.9)
    wait_bar.move_to(start + RIGHT * 1.8 + UP * 0.17)
    ttft = get_text("TTFT", LABEL_SIZE, COMPUTE, weight="BOLD").next_to(wait_bar, UP, buff=0.15)
    tick_gap = 6.3 / len(words)
    ticks = VGroup(*[Line(UP * 0.2, DOWN * 0.2, color=MEMORY, stroke_width=4).move_to(
        wait_bar.get_right() + RIGHT * (0.12 + index * tick_gap)) for index in range(len(words))])
    tpot = get_text("TPOT", LABEL_SIZE, MEMORY, weight="BOLD").next_to(ticks[:4], UP, buff=0.15)
    # Each wait is one job, and each job is limited by one part of the GPU.
    chip = Chip(48, width=0.9)
    chip.cores.set_fill(COMPUTE)
    prefill_label = get_text("prefill", LABEL_SIZE, COMPUTE, weight="BOLD")
    prefill = VGroup(chip, prefill_label)
    prefill.arrange(RIGHT, buff=0.2).next_to(wait_bar, DOWN, buff=0.3).align_to(wait_bar, LEFT)
    wall = WeightsWall("", width=0.9, height=0.6, rows=4, cols=4)
    decode_label = get_text("decode", LABEL_SIZE, MEMORY, weight="BOLD")
    decode = VGroup(wall.bricks, decode_label)
    decode.arrange(RIGHT, buff=0.2).next_to(ticks, DOWN, buff=0.3).align_to(ticks, LEFT).shift(RIGHT * 0.6)
    arithmetic = get_text("limited by arithmetic", SMALL_SIZE, COMPUTE).next_to(prefill_label, DOWN, buff=0.1,
                                                                                aligned_edge=LEFT)
    bandwidth = get_text("limited by memory bandwidth", SMALL_SIZE, MEMORY).next_to(decode_label, DOWN, buff=0.1,
                                                                                     aligned_edge=LEFT)
    latency = get_formula(formulas.LATENCY)
    latency.next_to(VGroup(prefill, decode, arithmetic, bandwidth), DOWN, buff=0.35).set_x(0)
    return TwoWaitsPicture(get_title(scene.beat.title), window, question, document, cursor, axis, wait_bar, ttft,
                           words, ticks, tpot, chip, prefill_label, wall, decode_label, arithmetic, bandwidth, latency)


class TwoWaits(BeatScene):
    """A chat: a long wait for the first word, then a steady stream; each wait is one job of the GPU."""

    successor = "prefill"

    def build(self) -> None:
        picture = two_waits_picture(self)
        self.hand_over(*picture.handed_over)
        self.enter(picture.title, picture.window)
        self.at("paste", FadeIn(picture.question, shift=UP * 0.3), run_time=0.8)
        # Nothing comes back for a while: the cursor blinks while the wait grows on the timeline.
        self.add(picture.cursor)
        waiting = self.seconds_until("stream") - 0.1
        self.at("wait", Create(picture.axis), GrowFromEdge(picture.wait_bar, LEFT), FadeIn(picture.ttft),
                picture.blink(max(1, round(waiting / 0.7)), waiting), run_time=waiting)
        self.at("stream", FadeIn(picture.tpot), run_time=0.3)
        # Then the reply's words at a steady pace, the cursor ahead of them, each with its tick on the timeline: one
        # decode step per token.
        steps = [AnimationGroup(FadeIn(word), FadeIn(tick), picture.cursor.animate.next_to(word, RIGHT, buff=0.06))
                 for word, tick in zip(picture.words, picture.ticks)]
        self.at("stream", LaggedStart(*steps, lag_ratio=1.0), until="two-jobs")
        self.play(FadeOut(picture.cursor), run_time=0.3)
        self.at("prefill", FadeIn(picture.prefill_label, shift=UP * 0.2), run_time=0.6)
        self.at("decode", FadeIn(picture.decode_label, shift=UP * 0.2), run_time=0.6)
        self.at("gpu", FadeIn(picture.chip), FadeIn(picture.wall.bricks), FadeIn(picture.arithmetic),
                FadeIn(picture.bandwidth), run_time=0.8)

        # The payoff: the two waits as one sum, each term lit with the part of the timeline it adds up.
        self.at("speech-end", Write(picture.latency), offset=-0.6, lead=0, run_time=0.9)
        self.play(Indicate(picture.ttft_term, scale_factor=1.25),
                  Indicate(picture.wait_bar, color=HIGHLIGHT, scale_factor=1.0), Indicate(picture.ttft), run_time=0.9)
        self.play(Indicate(picture.tpot_terms, scale_factor=1.15),
                  Indicate(picture.ticks, color=HIGHLIGHT, scale_factor=1.0), Indicate(picture.tpot), run_time=0.9)


def split_words(line, source: str) -> list[VGroup]:
    """The characters of each word of a Text line (Text drops spaces from its submobjects)."""
    groups, cursor = [], 0
    for word in source.split(" "):
        groups.append(VGroup(*line.submobjects[cursor:cursor + len(word)]))
        cursor += len(word)
    return groups


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
                          end_card(plan))


def end_card(plan) -> VGroup:
    choice = plan.choice
    card = VGroup(
        get_text(plan.title, TITLE_SIZE * 1.4, TEXT, weight="BOLD"),
        get_text(choice.long_label, BODY_SIZE, HIGHLIGHT),
        get_text(f"compared with {choice.times(choice.compare_gpu.name)}", SMALL_SIZE, MUTED),
        get_text(f"measurements: {plan.measured.dataset.route}", SMALL_SIZE, MUTED),
        get_text("every number computed by a roofline model from datasheet peaks (dense) and model configs",
                 SMALL_SIZE, MUTED),
        *([get_text(f"expected figures at {choice.efficiency.shares},", SMALL_SIZE, MUTED),
           get_text(choice.efficiency.source, SMALL_SIZE, MUTED)] if plan.expected else []),
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
            from scenes.measured_timings import cache_picture  # (the measured beats draw on this module's chat)

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
                                   lag_ratio=0.35), run_time=1.5)
        # One lever with its strike (animating a part apart would split the group Manim keeps on screen).
        self.at("not-arithmetic", FadeIn(picture.not_this, shift=RIGHT * 0.2), run_time=0.6)
        self.play(Indicate(picture.strike, scale_factor=1.0), run_time=0.5)

        # The end card: what this film was computed for, and where its numbers come from.
        self.wait_for(0.5)
        self.hold_until("speech-end", offset=0.4)
        self.ambient = None  # the end card stays still, to be read (the storyboard says so: holds)
        self.clear_stage(run_time=0.6)
        self.play(FadeIn(picture.end_card, shift=UP * 0.2), run_time=0.8)
