"""The layout lint over choices that stress it: every beat of each, after every animation, from Manim's bounding
boxes (its own file, so the suite's two processes can run it beside the other picture tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from render.plan.resolve import resolve_plan
from render.tools.check_choices import STRESS_CHOICES, SUITE_STRESS
from render.video import beats
from render.voice.narration import Narrator


# The choices that stress the layout (render/tools/check_choices.py's STRESS_CHOICES, in this file's form: gpu, gpus,
# model, dtype[, efficiency]), and the four of them the suite lints (SUITE_STRESS; the others are `film
# check-choices --stress --layout`'s).
def as_tuple(choice) -> tuple:
    return (choice.gpu, choice.gpus, choice.model, choice.dtype, *([choice.efficiency] if choice.efficiency else []))


LINT_CHOICES = [as_tuple(choice) for choice in STRESS_CHOICES]
SUITE_LINT_CHOICES = [as_tuple(choice) for choice in SUITE_STRESS]


def plan_of(choice: tuple):
    """A choice of the lint set's form (gpu, gpus, model, dtype[, efficiency]) resolved: its plan, untimed."""
    gpu, gpus, model, dtype, *efficiency = choice
    return resolve_plan(gpu=gpu, gpus=gpus, model=model, dtype=dtype, efficiency=efficiency[0] if efficiency else None)


def timed_plan(choice: tuple, speech: Path):
    """One choice's timed plan (no track is assembled)."""
    gpu, gpus, model, dtype, *efficiency = choice
    return Narrator(resolve_plan(gpu=gpu, gpus=gpus, model=model, dtype=dtype, recordings=speech / "none",
                                 efficiency=efficiency[0] if efficiency else None), speech).narrate().plan


def test_the_lint_finds_text_running_over_a_cards_edge():
    """The class of fault a preview found: a lever's text grown past its card's right border."""
    from manim import DOWN, RIGHT

    from render.engine.layout_lint import bounding_box, texts_over_frame_edges
    from scenes.figures.counters import BudgetCard
    from scenes.figures.text import get_text
    from scenes.style import MEMORY

    card = BudgetCard("tokens per second", "decode's budget", MEMORY)
    fitted = card.lever("quantisation", "INT4 weights → 12,461 tokens/s (2×) and then some more words")
    card.add(fitted)
    assert texts_over_frame_edges([(text, bounding_box(text)) for text in fitted[1:]], [card]) == set()
    grown = get_text("INT8 weights → 1,650 tokens/s (0.5×)").next_to(fitted, DOWN).align_to(card.box, RIGHT)
    grown.shift(RIGHT * 0.5)
    found = texts_over_frame_edges([(grown, bounding_box(grown))], [card, grown])
    assert len(found) == 1
    assert "Text 'INT8 weights → 1,650 tokens/s (0.5×)' runs over the edge of a RoundedRectangle" in found.pop()
    outside = get_text("a caption under the card").next_to(card.box, DOWN)
    assert texts_over_frame_edges([(outside, bounding_box(outside))], [card, outside]) == set()


def test_layout_lint_for_choices_that_stress_it(lint_cache):
    """After every animation of every beat: no text over text, no text under 28 px, nothing in the margin; and
    every caption readable (at most 17 characters a second, a second at least, within its beat).
    Computed from Manim's bounding boxes, without drawing a frame, for the suite's four of the choices that stress
    the layout (the rest: `film check-choices --stress --layout`, the same checks). Two choices at a time: the rest
    of the suite leaves the second core idle. One cache for the suite (lint_cache): the sentences and the text they
    share are made once, and a beat the extended cut's test linted for the same choice is not linted again."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from render.tools.check_choices import check_choice

    assert set(SUITE_LINT_CHOICES) < set(LINT_CHOICES) and len(SUITE_LINT_CHOICES) == 4
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = dict(zip(SUITE_STRESS, pool.map(check_choice, SUITE_STRESS, [lint_cache] * len(SUITE_STRESS),
                                                [True] * len(SUITE_STRESS))))
    assert {str(choice): checked.note for choice, checked in found.items() if checked.outcome != "fits"} == {}
    assert len(found) == len(SUITE_LINT_CHOICES)


def test_a_linted_beat_is_remembered_and_a_damaged_memory_is_linted_again(tmp_path, seed_speech, monkeypatch):
    """Under the beat cache's keys (its code, words, times and the values its scene read), so a choice whose beat
    reads the same as one already linted is not linted again (`make check-choices --layout`, the test above)."""
    import scenes
    from render.video.cache import LintMemo

    plan = Narrator(resolve_plan(recordings=tmp_path / "none"), seed_speech(tmp_path)).narrate().plan
    first = beats.lint_beat(plan, "two-waits", tmp_path)
    memo, q = LintMemo(tmp_path), beats.lint_quality()
    reads = memo.known_reads(plan, "two-waits", q)
    assert first == () and memo.found(plan, "two-waits", q) == first and reads is not None  # (it shows no values)
    assert "lint" in q.name and q.name != "lint"  # the lint's own code names its entries too

    draw = scenes.scene_class
    monkeypatch.setattr(scenes, "scene_class", lambda beat: pytest.fail(f"{beat} was linted again"))
    assert beats.lint_beat(plan, "two-waits", tmp_path) == first
    finding = "Text 'a' overlaps Text 'b'"
    memo.keep(plan, "two-waits", q, reads, (finding,))
    assert beats.lint_beat(plan, "two-waits", tmp_path) == (finding,)  # findings come back as kept

    entry = memo.findings_path(plan, "two-waits", q, reads)
    for damage in (b'{"problems": [1, 2]}', entry.read_bytes()[:-3], b"\x00"):
        entry.write_bytes(damage)
        assert memo.found(plan, "two-waits", q) is None
    monkeypatch.setattr(scenes, "scene_class", draw)
    assert beats.lint_beat(plan, "two-waits", tmp_path) == first  # linted again, and kept again
    assert memo.found(plan, "two-waits", q) == first


def thumbnail_of(choice: tuple, speech: Path) -> tuple[Path, Path]:
    """A choice's poster (its film's frame at the poster's moment, drawn as a still) and its thumbnail."""
    from render.publish.kit import make_thumbnail
    from render.video.finish import poster_moment

    plan = timed_plan(choice, speech)
    beat_id, at = poster_moment(plan)
    folder = speech / "-".join(map(str, choice)).replace("=", "").replace(",", "")
    poster = beats.render_still(plan, beat_id, at - plan.beat(beat_id).start, "low", folder, cache=speech)
    return poster, make_thumbnail(plan, poster, folder / "thumbnail.jpg")


def test_the_thumbnail_shows_the_whole_picture_under_its_band(tmp_path, lint_cache):
    """For the default film and the four choices the suite lints: under the title band the poster's picture is whole
    (its shape as in the frame, so nothing is cut by an edge or hidden under the band) with clear space around it.
    From a copy of the suite's lint cache (the lint set's speech and typesetting, where the lint has made them)."""
    import multiprocessing
    import shutil
    from concurrent.futures import ProcessPoolExecutor

    import numpy as np
    from PIL import Image

    from render.publish.kit import BAND_HEIGHT, INK_LEVEL, THUMBNAIL_MARGIN, picture_box, without_title

    choices = [("h100-sxm", 1, "llama-3.1-8b", "bf16"), *SUITE_LINT_CHOICES]
    cache = tmp_path / "cache"
    shutil.copytree(lint_cache, cache, symlinks=True)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        made = list(pool.map(thumbnail_of, choices, [cache] * len(choices)))
    for choice, (poster, thumbnail) in zip(choices, made):
        frame = without_title(Image.open(poster).convert("RGB"))
        left, top, right, bottom = picture_box(frame)
        with Image.open(thumbnail) as image:
            assert image.size == (1280, 720)
            grey = np.asarray(image.convert("L"), dtype=float)
        below = grey[BAND_HEIGHT:]
        ink = np.abs(below - np.median(below[-4:, :4])) > INK_LEVEL
        clear = THUMBNAIL_MARGIN // 2
        assert not ink[:clear].any() and not ink[-clear:].any(), f"{choice}: the picture touches the band or the edge"
        assert not ink[:, :clear].any() and not ink[:, -clear:].any(), f"{choice}: the picture touches an edge"
        rows, columns = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        shown = (columns[-1] - columns[0]) / (rows[-1] - rows[0])
        in_frame = (right - left) / (bottom - top)
        assert shown == pytest.approx(in_frame, rel=0.04), f"{choice}: part of the picture is gone"
