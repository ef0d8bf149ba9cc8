"""What every beat shares: its view of the timed plan, cue-timed playback and an exact length."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from manim import FadeIn, FadeOut, Scene, Wait, config
from manim.utils.exceptions import EndSceneEarlyException
from manim.utils.iterables import list_update

from render.errors import FilmError
from render.plan.tracking import Tracked
from render.plan.types import BUILT_IN_CUES, Plan
from scenes import copying, families  # noqa: F401  (copies share what never changes; families listed in one pass)
from scenes.camera import KeptPathCamera
from scenes.layers import Layers
from scenes.layout_lint import TextMorph, glyph_morphs, layout_problems, outside_safe_area, text_morphs
from scenes.style import BACKGROUND, LEAD, TRANSITION


Progress = Callable[[int, int], None]  # (frames drawn, frames in the beat)
MAX_STILL = 2.2        # seconds: a longer wait is filled with the beat's ambient motion
AMBIENT_SECONDS = 1.2  # one round of it


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


def shown_counters(mobjects) -> list[tuple[str, str, str, str]]:
    """Each counter on screen (scenes/helpers.py's Counter, found through its value, which names it: a play splits
    the groups its objects were added in) as Counter.counter_state says it."""
    found, seen = [], set()
    for mobject in mobjects:
        for part in mobject.get_family():
            counter = part.__dict__.get("counter")
            if counter is not None and id(counter) not in seen:
                seen.add(id(counter))
                state = counter.counter_state()
                if state is not None:
                    found.append(state)
    return found


class BeatScene(Scene):
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
    draws_only_changes = True       # see scenes/layers.py; False draws every frame as Manim does

    @property
    def hands_over(self) -> bool:
        return self.successor is not None and self.beat.next == self.successor

    @property
    def continues(self) -> bool:
        return self.predecessor is not None and self.beat.previous == self.predecessor

    def __init__(self, plan: Plan, beat_id: str, progress: Progress | None = None, checks_layout: bool = True,
                 stills: Iterable[int] = (), part: tuple[int, int] | None = None, **kwargs):
        """`stills`: frame numbers to capture instead of rendering the beat (`make still`, the goldens): the
        scene runs in Manim's skipping mode, draws just those frames (into `self.stills`) and stops after the
        last, so a still late in a beat costs no more than one early in it.

        `part`: (first, end): render only the beat's frames first..end-1 (a part of a beat split across
        processes): the plays before it are skipped to their ends, as for a still; the play it starts in is
        played frame by frame, drawing from its first frame; the render stops after the play holding its last."""
        self.stills_wanted = sorted(set(stills))
        self.stills: dict[int, np.ndarray] = {}
        # When each cue's picture has settled: the frame from which everything played for it (from the cue until
        # the next, ambient motion and holds aside) has ended. Stills are taken there (render/video/beats.py).
        self.moments: dict[str, int] = {}
        self.playing_for: str | None = None   # the cue whose animations are being played
        self.ambient_playing = False          # the ambient motion (or a looped payoff) is what plays now
        self.counter_states: dict[int, list[tuple[str, str, str, str]]] = {}  # still frame -> each shown counter's
                                                                               # state (Counter.counter_state)
        self.frames_in_play = 0
        self.part = part
        self.frame_in_play = 0  # frames of the current play handed to the renderer so far
        if self.stills_wanted:
            kwargs["skip_animations"] = True
            checks_layout = False
        self.reads: set[str] = set()
        self.plan = Tracked(plan, "", self.reads)
        self.beat = BeatView.of(plan, beat_id)
        self.progress = progress
        self.safe_area_violations: set[str] = set()
        self.layout_problems: set[str] = set()
        self.text_morphs: list[TextMorph] = []  # each change of words, as played (for the test of its middle frame)
        self.checks_layout = checks_layout
        self.frames_done = 0
        self.closing = False
        self.handed_over: list | None = None  # what crosses the cut to the successor, when not the whole picture
        self.layers: Layers | None = None
        self.frames_layered = 0  # frames drawn over the play's still objects, not with them
        # What moves while the picture would otherwise wait for the voice (a sweep of the wall, a
        # drip, a pulse on what was just named): set by a scene as its picture grows, cleared for a
        # deliberate hold. Any wait of MAX_STILL or more is filled with it.
        self.ambient: Callable[[], object] | None = None
        super().__init__(camera_class=KeptPathCamera, **kwargs)

    def setup(self) -> None:
        self.camera.background_color = BACKGROUND
        self.frames_done = 0
        renderer = self.renderer

        def freeze_current_frame(duration: float) -> None:
            # Manim writes int(duration * fps) frames for a still hold; play() asks for
            # k - 0.5 frames' worth, so round to the k it means (see play()).
            frames = int(duration * config.frame_rate + 0.5 + 1e-6)
            kept = self.frames_of_part(self.frames_done, frames)
            if kept:
                renderer.add_frame(renderer.get_frame(), num_frames=kept)

        def render(scene, time, moving_mobjects=None) -> None:
            frame = self.frames_done + self.frame_in_play
            self.frame_in_play += 1
            if not self.frames_of_part(frame, 1):
                return  # before the part (in the play it starts in) or after it
            if scene.layers is None:
                renderer.update_frame(scene, moving_mobjects)
            else:
                scene.layers.draw(renderer, scene)
            renderer.add_frame(renderer.get_frame())

        # A skipped play (a lint, a still, the plays before a part) is not drawn: Manim would still draw its
        # background and its held frames. Nothing is drawn then but the stills (take_still).
        save_static_frame_data, update_frame = renderer.save_static_frame_data, renderer.update_frame

        def save_static_unless_skipping(scene, static):
            if renderer.skip_animations:
                renderer.static_image = None
                return None
            return save_static_frame_data(scene, static)

        def update_unless_skipping(*args, **kwargs) -> None:
            if not renderer.skip_animations:
                update_frame(*args, **kwargs)

        # (Manim's renderer internals, checked against the tested version: render/video/internals.py)
        renderer.freeze_current_frame = freeze_current_frame
        renderer.render = render
        renderer.save_static_frame_data = save_static_unless_skipping
        renderer.update_frame = update_unless_skipping

    def frames_of_part(self, first: int, count: int) -> int:
        """How many of the frames first..first+count-1 this render writes (all of them, unless a part)."""
        if self.part is None:
            return count
        return max(0, min(first + count, self.part[1]) - max(first, self.part[0]))

    def play(self, *animations, run_time: float | None = None, **kwargs) -> None:
        """Every play lasts a whole number of frames, so the beat's length is exact to the frame.

        Manim draws the frames at times arange(0, run_time, 1/fps); asking for k - 0.5 frames'
        worth always yields exactly k frames, where k/fps could yield k or k + 1.
        """
        if run_time is None:
            run_time = max((getattr(animation, "run_time", 1.0) for animation in animations), default=1.0)
        # Never past the beat's end (or into its closing fade): a late voice shortens the last moves.
        budget = self.frame_budget() - self.frames_done
        if budget <= 0:
            return
        frames = min(budget, max(1, round(run_time * config.frame_rate)))
        asked = 1 if frames == 1 else frames - 0.5  # Manim refuses less than one frame
        if self.playing_for and not (self.closing or self.ambient_playing
                                     or all(isinstance(animation, Wait) for animation in animations)):
            self.moments[self.playing_for] = self.frames_done + frames
        self.frames_in_play = frames
        self.frame_in_play = 0
        if self.checks_layout:
            self.layout_problems |= glyph_morphs(animations)
        self.text_morphs += text_morphs(animations, self.frames_done, frames)
        if self.part is not None:
            if self.frames_done >= self.part[1]:
                raise EndSceneEarlyException()  # the part is written; Manim closes its file
            # A play wholly before the part jumps to its end, as Manim's skipping does.
            self.renderer._original_skipping_status = self.frames_done + frames <= self.part[0]
        super().play(*animations, run_time=asked / config.frame_rate, **kwargs)
        if self.stills_wanted:
            # A held frame (a wait with nothing moving) never reaches play_internal: its frames are the picture
            # as it stands.
            for frame in self.stills_within_play():
                self.take_still(frame)
            if len(self.stills) == len(self.stills_wanted):
                raise EndSceneEarlyException()
        self.frames_done += frames
        if self.stills_wanted:
            return
        self.check_safe_area()
        self.check_layout()
        if self.progress is not None:
            self.progress(self.frames_done, round(self.beat.duration * config.frame_rate))

    def play_internal(self, skip_rendering: bool = False) -> None:
        """Manim's frame loop; when taking stills, first each wanted frame of this play at its own time (Manim
        draws frame i of a play at t = i / fps), then on to the play's end in one step, as skipping does."""
        for frame in self.stills_within_play():
            self.update_to_time((frame - self.frames_done) / config.frame_rate)
            self.take_still(frame)
        super().play_internal(skip_rendering)
        if self.layers is not None:
            self.layers.check_still(self.beat.id)
            self.frames_layered += self.layers.frames_layered
            self.layers = None

    def get_moving_and_static_mobjects(self, animations):
        """Manim's split of a play's picture, and the layers that draw it (when frames are drawn)."""
        moving, static = super().get_moving_and_static_mobjects(animations)
        drawing = self.draws_only_changes and not self.renderer.skip_animations
        self.layers = Layers(self, moving, animations) if drawing else None
        return moving, static

    def stills_within_play(self) -> list[int]:
        return [frame for frame in self.stills_wanted
                if self.frames_done <= frame < self.frames_done + self.frames_in_play and frame not in self.stills]

    def take_still(self, frame: int) -> None:
        """Draw the picture as the Cairo renderer would for this frame: the play's still objects as the
        background, its moving ones over them (all of them again, for a hold, as Manim does)."""
        camera = self.renderer.camera
        camera.reset()
        if self.static_mobjects:
            camera.capture_mobjects(self.static_mobjects, include_submobjects=True)
        moving = self.moving_mobjects or list_update(self.mobjects, self.foreground_mobjects)
        camera.capture_mobjects(moving, include_submobjects=True)
        self.stills[frame] = camera.pixel_array.copy()
        self.counter_states[frame] = shown_counters(self.mobjects)

    def check_safe_area(self) -> None:
        """Note anything visible outside the safe area, for the render's result."""
        self.safe_area_violations |= outside_safe_area(self.mobjects)

    def check_layout(self) -> None:
        """Note text that overlaps text, crosses a frame's edge or a line, or is too small, after each play."""
        if self.checks_layout:
            self.layout_problems |= layout_problems(self.mobjects)

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
