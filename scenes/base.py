"""What every beat shares: its view of the timed plan, cue-timed playback and an exact length."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from manim import FadeIn, FadeOut, Scene, config

from render.errors import FilmError
from render.plan.tracking import Tracked
from render.plan.types import BUILT_IN_CUES, Plan
from scenes.style import BACKGROUND, LEAD, TRANSITION

Progress = Callable[[int, int], None]  # (frames drawn, frames in the beat)


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
        return cls(beat.id, beat.title, beat.duration, beat.narration, dict(beat.captions), cues, beat.location)


def is_invisible(mobject) -> bool:
    """True when no part of it would show (faded out, or a tracker with no looks)."""
    from manim import VMobject

    parts = [part for part in mobject.get_family() if isinstance(part, VMobject) and part.has_points()]
    return all(part.get_fill_opacity() == 0 and part.get_stroke_opacity() == 0 for part in parts)


class BeatScene(Scene):
    """A beat: builds its picture in narration order and lasts exactly its slot.

    Subclasses implement `build()`, reading numbers from `self.plan` (the timed plan, through a
    view that records what is read) and timing changes with `self.at(cue, *animations)`, so each
    change lands on the word that names it. Besides the storyboard's cues every beat has
    "speech-start", "speech-end" and "end" (when the closing fade begins). The beat fades in
    from and out to the background, so beats join without a hard cut.
    """

    def __init__(self, plan: Plan, beat_id: str, progress: Progress | None = None, **kwargs):
        self.reads: set[str] = set()
        self.plan = Tracked(plan, "", self.reads)
        self.beat = BeatView.of(plan, beat_id)
        self.progress = progress
        self.safe_area_violations: set[str] = set()
        self.frames_done = 0
        super().__init__(**kwargs)

    def setup(self) -> None:
        self.camera.background_color = BACKGROUND
        self.frames_done = 0
        renderer = self.renderer

        def freeze_current_frame(duration: float) -> None:
            # Manim writes int(duration * fps) frames for a still hold; play() asks for
            # k - 0.5 frames' worth, so round to the k it means (see play()).
            renderer.add_frame(renderer.get_frame(), num_frames=int(duration * config.frame_rate + 0.5 + 1e-6))

        renderer.freeze_current_frame = freeze_current_frame

    def play(self, *animations, run_time: float | None = None, **kwargs) -> None:
        """Every play lasts a whole number of frames, so the beat's length is exact to the frame.

        Manim draws the frames at times arange(0, run_time, 1/fps); asking for k - 0.5 frames'
        worth always yields exactly k frames, where k/fps could yield k or k + 1.
        """
        if run_time is None:
            run_time = max((getattr(animation, "run_time", 1.0) for animation in animations), default=1.0)
        frames = max(1, round(run_time * config.frame_rate))
        asked = 1 if frames == 1 else frames - 0.5  # Manim refuses less than one frame
        super().play(*animations, run_time=asked / config.frame_rate, **kwargs)
        self.frames_done += frames
        self.check_safe_area()
        if self.progress is not None:
            self.progress(self.frames_done, round(self.beat.duration * config.frame_rate))

    def check_safe_area(self) -> None:
        """Note anything visible outside the safe area (5% from each edge), for the render's result."""
        half_width, half_height = config.frame_width * 0.45, config.frame_height * 0.45
        for mobject in self.mobjects:
            if mobject.width == 0 and mobject.height == 0:
                continue
            left, right = mobject.get_left()[0], mobject.get_right()[0]
            bottom, top = mobject.get_bottom()[1], mobject.get_top()[1]
            if left < -half_width - 0.01 or right > half_width + 0.01 or bottom < -half_height - 0.01 \
                    or top > half_height + 0.01:
                if not is_invisible(mobject):
                    self.safe_area_violations.add(
                        f"{type(mobject).__name__} at x {left:.2f}..{right:.2f}, y {bottom:.2f}..{top:.2f}")

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

    def seconds_until(self, name: str) -> float:
        return self.cue(name) - self.now

    def hold_until(self, name: str, offset: float = 0.0) -> None:
        """Keep the picture as it is until cue `name` (plus `offset` seconds), if that is still ahead."""
        self.wait_for(self.cue(name) + offset - self.now)

    def wait_for(self, seconds: float) -> None:
        """Hold for `seconds` (in whole frames); nothing when less than a frame."""
        if seconds >= self.frame:
            self.wait(seconds)

    def at(self, name: str, *animations, run_time: float = 1.0, until: str | None = None, offset: float = 0.0,
           lead: float = LEAD) -> None:
        """Play `animations` so they start just before cue `name` (plus `offset`), never before now.

        With `until=`, they run until just before that cue instead of for `run_time`; nothing
        runs into the beat's closing fade.
        """
        start = max(self.now, self.cue(name) + offset - lead)
        self.wait_for(start - self.now)
        if until is not None:
            run_time = self.cue(until) - lead - self.now
        run_time = max(self.frame, min(run_time, self.cue("end") - self.now))
        self.play(*animations, run_time=run_time)

    # -- entrances and exits ---------------------------------------------------------------------

    def enter(self, *mobjects, run_time: float = TRANSITION) -> None:
        """The opening: the beat's first objects fade in from the background."""
        self.play(*(FadeIn(mobject) for mobject in mobjects), run_time=run_time)

    def clear_stage(self, run_time: float = TRANSITION) -> None:
        """Fade out everything on screen (counters stop redrawing first, so they fade too)."""
        for mobject in self.mobjects:
            mobject.suspend_updating()
        if self.mobjects:
            self.play(*(FadeOut(mobject) for mobject in self.mobjects), run_time=run_time)

    def finish(self) -> None:
        """Hold, then fade everything out so the beat ends exactly at its slot's end."""
        self.hold_until("end")
        remaining = self.beat.duration - self.now
        for mobject in self.mobjects:
            mobject.suspend_updating()  # counters stop redrawing, so they can fade like the rest
        if self.mobjects:
            self.play(*(FadeOut(mobject) for mobject in self.mobjects), run_time=max(self.frame, remaining))
        else:
            self.wait_for(remaining)
