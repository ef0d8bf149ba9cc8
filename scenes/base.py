"""What every beat shares: its slice of the timed plan, cue-timed playback and an exact length."""

from __future__ import annotations

from dataclasses import dataclass, field

from manim import FadeIn, FadeOut, Scene, config

from scenes.style import BACKGROUND, LEAD, TRANSITION


class Tracked(dict):
    """A section of the timed plan that remembers which of its keys a scene read.

    A beat's cached render depends on exactly those values, so changing a number re-renders
    only the beats that show it.
    """

    def __init__(self, section: str, values: dict, reads: set[str]):
        super().__init__(values)
        self.section, self.reads = section, reads

    def __getitem__(self, name):
        self.reads.add(f"{self.section}.{name}")
        return super().__getitem__(name)

    def get(self, name, default=None):
        self.reads.add(f"{self.section}.{name}")
        return super().get(name, default)


TRACKED_SECTIONS = ("numbers", "gpu", "model", "dtype", "compare_gpu", "comparison", "measured", "film")


def view_sections(data: dict) -> dict[str, dict]:
    """The timed plan's shared sections as scenes see them (one definition for the scenes and the cache)."""
    return {
        "numbers": data["numbers"], "gpu": data["gpu"], "model": data["model"], "dtype": data["dtype"],
        "compare_gpu": data["compare_gpu"], "comparison": data["comparison"], "measured": data["measured"],
        "film": {"title": data["title"], "source": data["source"], "notes": data["notes"],
                 "gpu": data["gpu"]["name"], "model": data["model"]["name"], "dtype": data["dtype"]["name"]},
    }


@dataclass(frozen=True)
class BeatView:
    """One beat as its scene sees it: numbers, words and cue times (seconds from the beat's start)."""

    id: str
    title: str
    duration: float
    narration: str
    captions: dict
    cues: dict
    speech_start: float
    speech_end: float
    numbers: dict
    gpu: dict
    model: dict
    dtype: dict
    compare_gpu: dict
    comparison: dict
    roofline_pills: list
    measured: dict
    film: dict = field(default_factory=dict)
    reads: set = field(default_factory=set)  # "section.key" of every shared value the scene read

    @classmethod
    def from_timed_plan(cls, data: dict, beat_id: str) -> "BeatView":
        beat = next(entry for entry in data["beats"] if entry["id"] == beat_id)
        start = beat["start"]
        reads: set[str] = set()
        sections = {name: Tracked(name, values, reads) for name, values in view_sections(data).items()}
        return cls(
            id=beat_id, title=beat["title"], duration=beat["end"] - start, narration=beat["narration"],
            captions=beat.get("captions", {}),
            cues={name: time - start for name, time in beat["cue_times"].items()},
            speech_start=beat["speech_start"] - start, speech_end=beat["speech_end"] - start,
            roofline_pills=data["roofline_pills"], reads=reads, **sections,
        )


def is_invisible(mobject) -> bool:
    """True when no part of it would show (faded out, or a tracker with no looks)."""
    from manim import VMobject

    parts = [part for part in mobject.get_family() if isinstance(part, VMobject) and part.has_points()]
    return all(part.get_fill_opacity() == 0 and part.get_stroke_opacity() == 0 for part in parts)


class BeatScene(Scene):
    """A beat: builds its picture in narration order and lasts exactly its slot.

    Subclasses implement `build()`, using `self.at(cue, *animations)` so each change lands
    on the word that names it. The beat fades in from and out to the background, so beats
    join without a hard cut.
    """

    beat: BeatView  # set by the renderer before render()
    progress = None  # optional callback(frames drawn, frames in the beat), for progress reports

    def setup(self) -> None:
        self.camera.background_color = BACKGROUND
        self.frames_done = 0
        self.safe_area_violations: set[str] = set()
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
        """Note anything visible outside the safe area (5% from each edge), for the renderer to report."""
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

    @property
    def now(self) -> float:
        """Seconds into the beat, counted in frames drawn."""
        return self.frames_done / config.frame_rate

    @property
    def frame(self) -> float:
        return 1 / config.frame_rate

    def cue(self, name: str) -> float:
        return self.beat.cues[name]

    def hold_until(self, time: float) -> None:
        if time - self.now >= self.frame:
            self.wait(time - self.now)

    def at(self, cue: str | float, *animations, run_time: float = 1.0, lead: float = LEAD) -> None:
        """Play `animations` so they start just before `cue` (a cue name or seconds into the beat)."""
        start = (self.cue(cue) if isinstance(cue, str) else cue) - lead
        self.hold_until(start)
        # Never run into the closing fade.
        run_time = max(self.frame, min(run_time, self.beat.duration - TRANSITION - self.now))
        self.play(*animations, run_time=run_time)

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
        self.hold_until(self.beat.duration - TRANSITION)
        remaining = self.beat.duration - self.now
        for mobject in self.mobjects:
            mobject.suspend_updating()  # counters stop redrawing, so they can fade like the rest
        if self.mobjects:
            self.play(*(FadeOut(mobject) for mobject in self.mobjects), run_time=max(self.frame, remaining))
        elif remaining >= self.frame:
            self.wait(remaining)
