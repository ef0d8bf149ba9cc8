"""Every still the pages, the studio and the poster take shows a settled picture (issue 43): taken where the beat's
render recorded that everything its cue set moving had ended, so its counters show their final values (read from the
scene's own objects at that frame, not from the pixels). They were taken half a second after each cue, inside
count-ups: "182" tokens a second beside words saying 209."""

from __future__ import annotations

import pytest

from render.publish.page import beat_picture_time
from render.publish.review import still_times
from render.video.beats import take_frames
from render.video.finish import poster_moment
from render.video.settling import settled_of


@pytest.mark.parametrize("made", ["default_tiny_film", "other_tiny_film"])
def test_every_still_is_taken_once_its_counters_have_landed(made, request, tmp_path):
    film = request.getfixturevalue(made)
    plan = film.result.plan
    settled = settled_of(film.result.film)
    assert set(settled) == {beat.id for beat in plan.beats}
    poster_beat, poster_at = poster_moment(plan, settled)
    problems, counted = [], 0
    for beat in plan.beats:
        moments = settled[beat.id]
        assert len(set(beat.timing.cues) & set(moments)) >= len(beat.timing.cues) - 1, (beat.id, moments)
        stills = [(cue, at) for cue, _, at in still_times(beat, moments)]
        stills.append(("the page's step", beat_picture_time(beat, moments)))
        if beat.id == poster_beat:
            stills.append(("the poster", poster_at))
        taken = take_frames(plan, beat.id, [at - beat.start for _, at in stills], "tiny", tmp_path / beat.id,
                            cache=film.build / "cache")
        for (what, at), counters in zip(stills, taken.counters):
            counted += len(counters)
            problems += [f"{beat.id} at {what} ({at - beat.start:.2f} s into it): {caption!r} shows {shown!r}, "
                         f"counting from {before!r} to {final!r}" for caption, shown, final, before in counters
                         if shown not in (final, before)]  # (before: its count is not yet under way)
    assert not problems, problems
    assert counted >= 10  # (the beats' counters were there to read)
