"""The opening's picture: the chat (a question with its pasted report, a reply that waits, then streams), the
timeline of the two waits, the two jobs and the parts of the GPU each uses. Two waits draws it; prefill starts from
it (the report becomes its prompt, the small chip its chip).
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import DOWN, LEFT, RIGHT, UP, FadeIn, FadeOut, Line, Rectangle, RoundedRectangle, Succession, VGroup

from render import formulas
from render.engine.scene import BeatScene
from scenes.figures.chip import Chip, WeightsWall
from scenes.figures.text import get_formula, get_text, get_title, term
from scenes.style import BODY_SIZE, COMPUTE, IDLE, LABEL_SIZE, MEMORY, MUTED, PANEL, SMALL_SIZE, TEXT

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


def split_words(line, source: str) -> list[VGroup]:
    """The characters of each word of a Text line (Text drops spaces from its submobjects)."""
    groups, cursor = [], 0
    for word in source.split(" "):
        groups.append(VGroup(*line.submobjects[cursor:cursor + len(word)]))
        cursor += len(word)
    return groups
