"""What a beat is written against, as a film-maker writes against Manim's scene: its view of the timed plan, cues
to wait for (`at`, `hold_until`, `repeat_until`, `wait_for`, `cue`), the numbers it speaks (`numbers_here`), its
entrance and what it hands the next beat (`enter`, `carry_on_with`, `hand_over`), and an exact length (`finish`).
The frames behind it are render/engine/drawing.py's."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from manim import FadeIn, FadeOut, Wait, config

from render.engine.cuts import LEAD, TRANSITION
from render.engine.drawing import DrawnScene, Progress
from render.errors import FilmError
from render.plan.tracking import Tracked
from render.plan.types import BUILT_IN_CUES, Plan

MAX_STILL = 2.2        # seconds: a longer wait is filled with the beat's ambient motion
AMBIENT_SECONDS = 1.2  # one round of it


MADE_ONCE: OrderedDict = OrderedDict()  # (what made it, its arguments, the frame) -> the mobject, the newest last
MADE_ONCE_KEPT = 2000  # (the film's words are about 400)


def made_once(factory: Callable, *args, **options):
    """A copy of what `factory(*args, **options)` made the first time this process asked (a mobject: Text, a
    formula), so a beat drawn again, or another beat with the same words, costs a copy, not a typesetting: the
    studio's warm process keeps them for every drawing. Keyed by the factory, every argument and the frame's size;
    the arguments must be plain values."""
    key = (factory.__module__, factory.__qualname__, args, tuple(sorted(options.items())), config.pixel_width,
           config.pixel_height, config.frame_width, config.frame_height)
    made = MADE_ONCE.get(key)
    if made is None:
        made = MADE_ONCE[key] = factory(*args, **options)
        while len(MADE_ONCE) > MADE_ONCE_KEPT:
            MADE_ONCE.popitem(last=False)
    else:
        MADE_ONCE.move_to_end(key)
    return made.copy()


@dataclass(frozen=True)
class BeatView:
    """One beat as its scene sees it: words and cue times, in seconds from the beat's start."""

    id: str
    title: str
    duration: float
    narration: str
    captions: dict[str, str]
    cues: dict[str, float]  # the storyboard's [[cues]], plus speech-start, speech-end and end
    location: str           # the beat's narration in the storyboard, for messages
    previous: str | None    # the beats around it in the film, for the cuts that carry objects
    next: str | None
    previous_title: str | None

    @classmethod
    def of(cls, plan: Plan, beat_id: str) -> BeatView:
        beat = plan.beat(beat_id)
        if beat.timing is None:
            raise FilmError(f"beat {beat_id!r} has no timing: render from the timed plan (make narration writes it)")
        start, timing = beat.start, beat.timing
        cues = {name: time - start for name, time in timing.cues.items()}
        built_in = {"speech-start": timing.speech_start - start, "speech-end": timing.speech_end - start,
                    "end": beat.duration - TRANSITION}
        assert tuple(built_in) == BUILT_IN_CUES
        cues.update(built_in)
        ids = [other.id for other in plan.beats]
        position = ids.index(beat_id)
        previous = ids[position - 1] if position > 0 else None
        following = ids[position + 1] if position + 1 < len(ids) else None
        return cls(beat.id, beat.title, beat.duration, beat.narration, dict(beat.captions), cues, beat.location,
                   previous, following, plan.beats[position - 1].title if position > 0 else None)


class BeatScene(DrawnScene):
    """A beat: builds its picture in narration order and lasts exactly its slot.

    Subclasses implement `build()`, reading numbers from `self.plan` (the timed plan, through a
    view that records what is read) and timing changes with `self.at(cue, *animations)`, so each
    change lands on the word that names it. Besides the storyboard's cues every beat has
    "speech-start", "speech-end" and "end" (when the closing fade begins).

    Consecutive beats that share objects are one shot: a beat whose `successor` follows it in
    the film ends on its final picture instead of fading out, and the successor, whose
    `predecessor` it is, starts from that same picture (rebuilt from the plan by the shared
    builder) and transforms it. Any other cut cross-fades through the background.
    """

    successor: str | None = None    # the beat this one hands its final picture to
    predecessor: str | None = None  # the beat whose final picture this one starts from

    @property
    def hands_over(self) -> bool:
        return self.successor is not None and self.beat.next == self.successor

    @property
    def continues(self) -> bool:
        return self.predecessor is not None and self.beat.previous == self.predecessor

    def __init__(self, plan: Plan, beat_id: str, progress: Progress | None = None, checks_layout: bool = True,
                 stills: Iterable[int] = (), part: tuple[int, int] | None = None, **kwargs):
        """Drawn as DrawnScene draws (`stills`, `part`, `progress`, `checks_layout`: see there)."""
        # When each cue's picture has settled: the frame from which everything played for it (from the cue until
        # the next, ambient motion and holds aside) has ended. Stills are taken there (render/video/beats.py).
        self.moments: dict[str, int] = {}
        self.playing_for: str | None = None   # the cue whose animations are being played
        self.ambient_playing = False          # the ambient motion (or a looped payoff) is what plays now
        self.reads: set[str] = set()
        self.plan = Tracked(plan, "", self.reads)
        self.beat = BeatView.of(plan, beat_id)
        self.closing = False
        self.handed_over: list | None = None  # what crosses the cut to the successor, when not the whole picture
        # What moves while the picture would otherwise wait for the voice (a sweep of the wall, a
        # drip, a pulse on what was just named): set by a scene as its picture grows, cleared for a
        # deliberate hold. Any wait of MAX_STILL or more is filled with it.
        self.ambient: Callable[[], object] | None = None
        super().__init__(beat_id, round(self.beat.duration * config.frame_rate), progress, checks_layout, stills,
                         part, **kwargs)

    def play(self, *animations, run_time: float | None = None, **kwargs) -> None:
        """Every play lasts a whole number of frames (DrawnScene.draw_play), so the beat's length is exact to the
        frame, and none runs past the beat's end or into its closing fade."""
        if run_time is None:
            run_time = max((getattr(animation, "run_time", 1.0) for animation in animations), default=1.0)
        # Never past the beat's end (or into its closing fade): a late voice shortens the last moves.
        budget = self.frame_budget() - self.frames_done
        if budget <= 0:
            return
        frames = min(budget, max(1, round(run_time * config.frame_rate)))
        if self.playing_for and not (self.closing or self.ambient_playing
                                     or all(isinstance(animation, Wait) for animation in animations)):
            self.moments[self.playing_for] = self.frames_done + frames
        self.draw_play(animations, frames, **kwargs)

    def construct(self) -> None:
        self.build()
        self.finish()

    def build(self) -> None:
        raise NotImplementedError

    # -- time ------------------------------------------------------------------------------------

    @property
    def now(self) -> float:
        """Seconds into the beat, counted in frames drawn."""
        return self.frames_done / config.frame_rate

    @property
    def frame(self) -> float:
        return 1 / config.frame_rate

    def cue(self, name: str) -> float:
        """When the voice reaches cue `name`, in seconds from the beat's start."""
        if name not in self.beat.cues:
            known = ", ".join(self.beat.cues)
            raise FilmError(f"beat {self.beat.id!r}: its scene waits for cue {name!r}, which the storyboard does "
                            f"not mark ({self.beat.location}); its cues are: {known}. Mark it with [[{name}]] "
                            f"before the word it belongs to, or use one of those.")
        return self.beat.cues[name]

    @property
    def numbers_here(self):
        """The numbers the beat speaks: the expected ones with EFFICIENCY= (plan.expected), else the ceilings."""
        return self.plan.expected or self.plan.numbers

    def seconds_until(self, name: str) -> float:
        return self.cue(name) - self.now

    def repeat_until(self, name: str, animations: Callable[[], Iterable], run_time: float, leaving: float) -> None:
        """Play the animations `animations()` makes, again and again, while more than `leaving` seconds remain
        before cue `name` (a payoff that keeps going until the beat's end; Motion Canvas's loopUntil)."""
        self.ambient_playing = True  # (a loop that keeps going: the picture it moves has settled)
        try:
            while self.seconds_until(name) > leaving:
                self.play(*animations(), run_time=run_time)
        finally:
            self.ambient_playing = False

    def hold_for_payoff(self, payoff: float, offset: float = 0.1) -> None:
        """Wait for the speech to end (plus `offset`) before a payoff of `payoff` seconds, but no
        later than leaves it time to finish: a long narration (a big deployment's extra clause)
        must not cut the payoff short, since the next beat starts from its finished picture."""
        self.wait_for(min(self.cue("speech-end") + offset, self.cue("end") - payoff - 0.05) - self.now)
        self.playing_for = "speech-end"

    def hold_until(self, name: str, offset: float = 0.0) -> None:
        """Keep the picture as it is until cue `name` (plus `offset` seconds), if that is still ahead."""
        self.wait_for(self.cue(name) + offset - self.now)
        self.playing_for = name

    def frame_budget(self) -> int:
        """The frame the beat's own animations must end by: its last when it hands its whole picture over, or
        where its closing fade begins."""
        whole = round(self.beat.duration * config.frame_rate)
        hands_over_all = self.hands_over and self.handed_over is None
        return whole if hands_over_all or self.closing else round(self.cue("end") * config.frame_rate)

    def wait_for(self, seconds: float) -> None:
        """Let `seconds` pass (in whole frames): still when short, filled with the ambient motion when long."""
        while self.ambient is not None and seconds >= MAX_STILL:
            before = self.frames_done
            self.ambient_playing = True
            try:
                self.play(self.ambient(), run_time=AMBIENT_SECONDS)
            finally:
                self.ambient_playing = False
            if self.frames_done == before:
                return
            seconds -= (self.frames_done - before) / config.frame_rate
        frames = round(seconds * config.frame_rate)
        if frames >= 1:
            self.wait(frames / config.frame_rate)

    def at(self, name: str, *animations, run_time: float = 1.0, until: str | None = None, offset: float = 0.0,
           lead: float = LEAD) -> None:
        """Play `animations` so they start just before cue `name` (plus `offset`), never before now.

        With `until=`, they run until just before that cue instead of for `run_time`; nothing
        runs into the beat's closing fade.
        """
        start = max(self.now, self.cue(name) + offset - lead)
        self.wait_for(start - self.now)
        self.playing_for = name
        if until is not None:
            run_time = self.cue(until) - lead - self.now
        run_time = max(self.frame, min(run_time, self.cue("end") - self.now))
        self.play(*animations, run_time=run_time)

    # -- entrances and exits ---------------------------------------------------------------------

    def carry_on_with(self, *mobjects) -> None:
        """After the transition from the predecessor's picture: exactly these objects on screen (the
        predecessor's objects, and the groups Manim made to animate them, are gone)."""
        self.clear()
        self.add(*mobjects)

    def enter(self, *mobjects, run_time: float = TRANSITION) -> None:
        """The opening: the beat's first objects fade in from the background."""
        self.play(*(FadeIn(mobject) for mobject in mobjects), run_time=run_time)

    def clear_stage(self, run_time: float = TRANSITION) -> None:
        """Fade out everything on screen (counters stop redrawing first, so they fade too)."""
        for mobject in self.mobjects:
            mobject.suspend_updating()
        if self.mobjects:
            self.play(*(FadeOut(mobject) for mobject in self.mobjects), run_time=run_time)

    def hand_over(self, *mobjects) -> None:
        """Across the cut to the successor keep only these (the rest fades in the closing frames): for two beats
        that share an object or two, not the whole picture. The successor starts from them, rebuilt by the same
        layout function. Said as the beat begins, so its own moves end before the closing fade."""
        self.handed_over = list(mobjects)

    def leaving_at_the_cut(self) -> list:
        """What fades out in the closing frames: everything, unless the beat hands its picture (or part of it) to
        its successor. Groups holding a handed-over object are opened so it can stay while the rest goes."""
        if not self.hands_over:
            return list(self.mobjects)
        if self.handed_over is None:
            return []
        kept = {id(mobject) for mobject in self.handed_over}
        index = 0
        while index < len(self.mobjects):
            mobject = self.mobjects[index]
            if id(mobject) not in kept and any(id(part) in kept for part in mobject.get_family()[1:]):
                self.mobjects[index:index + 1] = mobject.submobjects  # open it, in place (the drawing order holds)
            else:
                index += 1
        return [mobject for mobject in self.mobjects if id(mobject) not in kept]

    def finish(self) -> None:
        """End exactly at the slot's end: on the final picture (or what it hands over) when handing over, else
        faded out."""
        self.hold_until("end")
        self.closing = True
        frames_left = round(self.beat.duration * config.frame_rate) - self.frames_done
        for mobject in self.mobjects:
            mobject.suspend_updating()  # counters stop redrawing, so they can fade like the rest
        if frames_left <= 0:
            return
        leaving = self.leaving_at_the_cut()
        if not leaving:
            self.wait(frames_left / config.frame_rate)
        elif self.hands_over:
            # Part of the picture crosses the cut: the rest must be gone by the last frame, which the successor's
            # first repeats (a play's frames stop short of its end state, so one frame is held after it).
            if frames_left > 1:
                self.play(*(FadeOut(mobject) for mobject in leaving), run_time=(frames_left - 1) / config.frame_rate)
            else:
                self.remove(*leaving)
            self.wait(1 / config.frame_rate)
        else:
            self.play(*(FadeOut(mobject) for mobject in leaving), run_time=frames_left / config.frame_rate)
