"""Numbers that move and the shapes that carry them: a counter that counts to its value with its unit (the shared
formatter), a labelled group, a bar that grows from its base, a budget card with its levers, and a colour between
two."""

from __future__ import annotations

from collections.abc import Callable

from manim import (DOWN, LEFT, RIGHT, Animation, AnimationGroup, Dot, FadeIn, ManimColor, Rectangle, RoundedRectangle,
                   Text, VGroup, ValueTracker, interpolate_color)

from scenes.figures.text import get_text
from scenes.style import BACKGROUND, BODY_SIZE, HIGHLIGHT, LABEL_SIZE, MUTED, NUMBER_SIZE, PANEL, SMALL_SIZE, TEXT


# -- counters and bars ---------------------------------------------------------------------------


class Counter(VGroup):
    """A value that counts up to its number, formatted by the shared formatter, under a caption.

    The value is redrawn every frame; `appear()` fades it in (an ordinary FadeIn cannot
    follow an object that is rebuilt each frame).
    """

    def __init__(self, caption: str, formatter: Callable[[float], str], start: float = 0.0,
                 color: str = TEXT, size: float = NUMBER_SIZE, **kwargs):
        super().__init__(**kwargs)
        self.tracker = ValueTracker(start)
        self.target = start  # the value it counts to (what it shows once its count has landed)
        self.counted_from = start  # the value its latest count began from
        self.caption_words = caption
        self.shown = ValueTracker(0.0)
        self.formatter = formatter
        self.caption = get_text(caption, SMALL_SIZE, MUTED).set_opacity(0)
        self.color = color
        self.size = size
        # Redrawn every frame, but each value's text is laid out once (Pango and the SVG parse were most of a
        # counting beat's time): the frame's value becomes a copy of it, placed and faded as the frame needs.
        self.laid_out: dict[str, Text] = {}
        self.value = self._value_text().copy()
        self.value.counter = self
        self.shows: tuple = ()  # what the value was last made to show, and the arrays it was drawn from
        self.value.add_updater(self._follow)
        self.add(self.caption, self.value)

    def _value_text(self) -> Text:
        words = self.formatter(self.tracker.get_value())
        if words not in self.laid_out:
            self.laid_out[words] = get_text(words, self.size, self.color, weight="BOLD")
        return self.laid_out[words].set_opacity(self.shown.get_value()).next_to(self.caption, DOWN, buff=0.1)

    def _follow(self, value: Text) -> None:
        # A counter holds its value most of its beat: rebuilt only when the words, their opacity or the caption's
        # place change, or when something else (an animation) has set the value's points or colours since.
        wanted = (self.formatter(self.tracker.get_value()), self.shown.get_value(), tuple(self.caption.get_bottom()))
        drawn = [(part.points, part.fill_rgbas, part.stroke_rgbas) for part in value.family_members_with_points()]
        if self.shows and self.shows[0] == wanted and len(drawn) == len(self.shows[1]) and all(
                now is then for arrays, kept in zip(drawn, self.shows[1]) for now, then in zip(arrays, kept)):
            return
        value.become(self._value_text())
        value.original_text = wanted[0]  # become() takes the shapes only; the words go with them
        value.counter = self  # (a play splits the group the value was added in: its counter is found through it)
        self.shows = (wanted, [(part.points, part.fill_rgbas, part.stroke_rgbas)
                               for part in value.family_members_with_points()])

    def appear(self) -> Animation:
        return AnimationGroup(self.caption.animate.set_opacity(1), self.shown.animate.set_value(1))

    def count_to(self, value: float) -> Animation:
        return CountTo(self, value)

    def counter_state(self) -> tuple[str, str, str, str] | None:
        """(its caption, the words it shows, the words of its target, the words it counted from) while it is shown;
        None while hidden. Settled: it shows its target, or (its count not yet under way) what it counts from."""
        if self.shown.get_value() < 0.99:
            return None
        return (self.caption_words, self.formatter(self.tracker.get_value()), self.formatter(self.target),
                self.formatter(self.counted_from))

    def final_width(self, value: float) -> float:
        """How wide the value will be once it shows `value`."""
        return get_text(self.formatter(value), self.size, self.color, weight="BOLD").width

    def showing(self, value: float) -> "Counter":
        """Its value set (without animating) to `value`: to lay it out at the width it will have."""
        self.tracker.set_value(value)
        self.target = self.counted_from = value
        self.value.update()
        return self

    def settled(self, value: float) -> "Counter":
        """Already showing `value`, as it is when its beat hands over to the next."""
        self.shown.set_value(1)
        self.caption.set_opacity(1)
        return self.showing(value)


class CountTo(Animation):
    """A counter's count to `value`, eased as the scene's moves are. Its target is set as the count begins, not when
    the animation is made (a scene makes it before waiting for its cue): a still taken before it shows the counter
    settled on its last value, one taken during it a count in flight."""

    def __init__(self, counter: Counter, value: float, **kwargs):
        self.counter, self.value, self.start = counter, value, counter.tracker.get_value()
        super().__init__(counter.tracker, **kwargs)

    def begin(self) -> None:
        self.start = self.counter.tracker.get_value()
        self.counter.target, self.counter.counted_from = self.value, self.start
        super().begin()

    def interpolate_mobject(self, alpha: float) -> None:
        self.counter.tracker.set_value(self.start + (self.value - self.start) * self.rate_func(alpha))


class Labelled(VGroup):
    """A mark (a chart's point, the ridge's line, a dashed roof) and its label, reached by name."""

    def __init__(self, mark, label, **kwargs):
        super().__init__(mark, label, **kwargs)
        self.mark, self.label = mark, label


class Bar(VGroup):
    """A horizontal bar of length proportional to its value, with a label before and a value after."""

    def __init__(self, label: str, value_text: str, length: float, color: str, height: float = 0.42,
                 label_width: float = 2.6, value_inside: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.label = get_text(label, LABEL_SIZE, TEXT)
        if self.label.width > label_width:
            self.label.scale_to_fit_width(label_width)
        self.rect = Rectangle(width=max(length, 0.02), height=height, stroke_width=0, fill_color=color,
                              fill_opacity=0.9)
        self.rect.next_to(self.label, RIGHT, buff=0.25).align_to(self.label, LEFT).shift(RIGHT * (label_width + 0.25))
        self.value = get_text(value_text, LABEL_SIZE, color, weight="BOLD").next_to(self.rect, RIGHT, buff=0.15)
        if value_inside and self.value.width + 0.3 < self.rect.width:
            # Inside the bar's end, in the background's colour: the space right of it belongs to a marker.
            self.value.set_color(BACKGROUND).move_to(self.rect.get_right() + LEFT * 0.15, aligned_edge=RIGHT)
        self.add(self.label, self.rect, self.value)

    def grow(self, drawn: bool = False) -> Animation:
        """The bar grows from its left end, its words fading in; `drawn`: the bar is on screen already (it came
        across a cut), and only its words come in."""
        from manim import GrowFromEdge
        if drawn:
            return AnimationGroup(FadeIn(self.label), FadeIn(self.value))
        return AnimationGroup(FadeIn(self.label), GrowFromEdge(self.rect, LEFT), FadeIn(self.value), lag_ratio=0.3)


# -- cards -----------------------------------------------------------------------------------------


class Lever(VGroup):
    """One lever of a budget: its bullet, its words and (optionally) the figure it moves."""

    def __init__(self, bullet, words, detail=None):
        super().__init__(bullet, words)
        self.bullet, self.words, self.detail = bullet, words, detail


class BudgetCard(VGroup):
    """A budget: its name, its metric and the levers that move it."""

    def __init__(self, name: str, metric: str, color: str, width: float = 5.6, height: float = 5.0, **kwargs):
        super().__init__(**kwargs)
        self.box = RoundedRectangle(corner_radius=0.2, width=width, height=height, stroke_color=color,
                                    stroke_width=3, fill_color=PANEL, fill_opacity=1)
        self.name = get_text(name, BODY_SIZE, color, weight="BOLD")
        self.metric = get_text(metric, SMALL_SIZE, MUTED)
        self.header = VGroup(self.name, self.metric).arrange(DOWN, buff=0.12)
        self.header.move_to(self.box.get_top() + DOWN * (self.header.height / 2 + 0.3))
        self.levers = VGroup()
        self.color = color
        self.add(self.box, self.header, self.levers)

    def lever(self, text: str, detail: str = "") -> Lever:
        """A lever line, placed under the previous one (not yet added to the scene)."""
        line = Lever(Dot(radius=0.06, color=self.color), get_text(text, LABEL_SIZE, TEXT)).arrange(RIGHT, buff=0.18)
        if detail:
            line.detail = get_text(detail, SMALL_SIZE, HIGHLIGHT).next_to(line.words, DOWN, aligned_edge=LEFT,
                                                                          buff=0.08)
            line.add(line.detail)
        # Text that grows with the numbers stays inside the card (the layout lint still checks its size).
        room = self.box.width - 0.4 - (line.words.get_left()[0] - line.get_left()[0]) - 0.3
        for words in (line.words, line.detail):
            if words is not None and words.width > room:
                words.scale_to_fit_width(room).align_to(line.words, LEFT)
        anchor = self.levers[-1] if len(self.levers) else self.header
        line.next_to(anchor, DOWN, buff=0.26 if len(self.levers) else 0.4)
        line.align_to(self.box, LEFT).shift(RIGHT * 0.4)
        self.levers.add(line)
        return line


def blend(color_a: str, color_b: str, share: float) -> ManimColor:
    return interpolate_color(ManimColor(color_a), ManimColor(color_b), share)
