"""`make check-choices`: every GPU x model x data type x GPU count in data/, narrated, to show that
each choice that fits in memory makes a film whose speech fits every slot.

For each choice: refused (it does not fit in memory, or its GPU count does not divide the model's
attention heads), or narrated, with its tightest beat, that beat's load (its speech at the voice's
own pace over its slot), the tempo it was sped up by and the headroom left; a choice whose speech
does not fit even at the storyboard's maximum tempo is a failure. Writes build/check-choices.tsv
(every choice, fullest slot first) and prints the ten fullest; exits 1 when a choice that is not
refused cannot be narrated (or, with --layout, has a layout problem).

Without synthesising, `speech_loads` estimates how full each slot is (the words of each beat's
spoken text, numbers counted as the words they are read as, at the voice's pace, plus its pauses);
`make test` narrates a sample chosen by it (--sample): the ten fullest, and the ends of every axis.

Synthesis is the cost (a few seconds a choice, far less with a warm clip cache, which every
choice shares: build/cache/speech), spread over --jobs processes.

    film check-choices [--gpus 1,2,4,8] [--sample | --stress] [--layout] [--jobs N] [--efficiency E] [--cut extended]
                       [--out build/check-choices.tsv]
"""

from __future__ import annotations

import multiprocessing
import re
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from render.errors import DoesNotFit, FilmError, SpeechOverrun
from render.files import DATA_DIR, cache_dir
from render.plan.resolve import resolve_plan
from render.plan.types import FilmRequest, Plan
from render.specs.pronunciations import spoken_form
from render.specs.catalog import Catalog, load_catalog
from render.video.beats import lint_beat
from render.voice.narration import Narrator
from render.voice.subtitles import caption_problems, clauses

GPU_COUNTS = (1, 2, 4, 8)      # tensor parallelism inside one server


@dataclass(frozen=True)
class ChoiceCheck:
    choice: FilmRequest          # a GPU, model, data type and GPU count (and EFFICIENCY=, if given)
    outcome: str                 # "fits", "refused" (memory, GPU count) or "fails" (speech)
    beat: str = ""               # the tightest beat: its speech at the voice's own pace fills most of its slot
    natural: float = 0.0         # that speech's seconds at the voice's own pace
    seconds: float = 0.0         # ... as fitted (sped up by `tempo`)
    available: float = 0.0       # its slot, less the lead-in and the gap
    tempo: float = 1.0
    note: str = ""

    @property
    def label(self) -> str:
        return str(self.choice)

    @property
    def headroom(self) -> float:
        """Seconds the fitted speech leaves in its slot (negative: over)."""
        return self.available - self.seconds

    @property
    def load(self) -> float:
        """The speech at its own pace over its slot: above 1 it needs tempo; above max_tempo it cannot fit."""
        return self.natural / self.available if self.available else 0.0

    def row(self) -> str:
        return "\t".join([self.label, self.outcome, self.beat, f"{self.load:.3f}", f"{self.tempo:.3f}",
                          f"{self.headroom:.2f}", self.note])


# The choices that stress the film's layout (`film check-choices --stress --layout`; make test lints SUITE_STRESS of
# them): the slowest GPU with numbers that grow a digit, the fastest with FP8 arithmetic, a long model name, a GPU
# with a three-digit ridge of its own and little bandwidth; deployments: four chips and a split wall, a mixture of
# experts on two, 256 experts on eight; what a wider lint run found: a ridge at the chart's end (FP8 on one H100),
# all-reduces taking much of a long prompt's bar (two L40S over PCIe); and films of expected numbers (EFFICIENCY=):
# two-line counter captions, the reached roof and its legend, the levers' ceilings, from the seed's fit on the
# default and from shares given by hand on a tight choice.
STRESS_CHOICES = (
    FilmRequest("rtx-4090", "llama-3.2-1b", "int4", 1), FilmRequest("b200", "llama-3.1-70b", "fp8", 1),
    FilmRequest("mi300x", "mistral-7b-v0.3", "bf16", 1), FilmRequest("l40s", "qwen2.5-7b", "int8", 1),
    FilmRequest("h100-sxm", "llama-3.1-70b", "bf16", 4), FilmRequest("h100-sxm", "mixtral-8x7b", "bf16", 2),
    FilmRequest("h200-sxm", "deepseek-v3", "fp8", 8), FilmRequest("h100-sxm", "mixtral-8x7b", "fp8", 1),
    FilmRequest("l40s", "llama-3.1-70b", "fp8", 2),
    FilmRequest("h100-sxm", "llama-3.1-8b", "bf16", 1, efficiency="openrouter-coreweave-llama-3.1-8b-bf16"),
    FilmRequest("rtx-4090", "qwen3-30b-a3b", "fp8", 2, efficiency="compute=0.5,memory=0.9,overhead=0.3"),
)
# Of them, those make test lints (with the extended cut's pictures, tests/test_cuts.py): the longest numbers, 256
# experts on eight GPUs, two L40S whose all-reduces fill the bars and miss the objectives, and a film of expected
# numbers. Each choice's lint is some 20 s of Manim; the others are `film check-choices --stress --layout`'s.
SUITE_STRESS = (STRESS_CHOICES[0], STRESS_CHOICES[6], STRESS_CHOICES[8], STRESS_CHOICES[10])

TABLE_HEADER = "choice\toutcome\ttightest beat\tload (own pace / slot)\ttempo\theadroom (s)\tnote"


def check_choice(choice: FilmRequest, cache: Path, layout: bool = False) -> ChoiceCheck:
    """One choice resolved and narrated; with `layout`, every beat's layout linted too (text over
    text or over a frame's edge, text too small, drawing outside the safe area: about 40 s a choice).
    A choice with EFFICIENCY= is its film of expected numbers."""
    try:
        plan = resolve_plan(choice, recordings=cache / "no-recordings")
    except FilmError as error:  # refused, as it should be, only when its GPUs cannot hold it
        outcome = "refused" if isinstance(error, DoesNotFit) else "fails"
        return ChoiceCheck(choice, outcome, note=str(error).splitlines()[0][:200])
    try:
        timed = Narrator(plan, cache).narrate().plan
    except SpeechOverrun as overrun:
        return ChoiceCheck(choice, "fails", overrun.beat, overrun.seconds * overrun.tempo,
                           overrun.seconds, overrun.available, overrun.tempo, "speech too long")
    except FilmError as error:
        return ChoiceCheck(choice, "fails", note=str(error).splitlines()[0][:200])

    def natural(beat) -> float:
        return (beat.timing.speech_end - beat.timing.speech_start) * beat.timing.tempo

    tightest = max(timed.beats, key=lambda beat: natural(beat) / (beat.timing.latest_end - beat.timing.speech_start))
    timing = tightest.timing
    problems = [f"{beat.id}: {problem}" for beat in timed.beats for problem in (
        *lint_beat(timed, beat.id, cache),
        *(f"caption {found}" for found in caption_problems(list(beat.timing.subtitles), beat.end)))] \
        if layout else []
    return ChoiceCheck(choice, "fails" if problems else "fits", tightest.id, natural(tightest),
                       timing.speech_end - timing.speech_start, timing.latest_end - timing.speech_start, timing.tempo,
                       "; ".join(problems))


def all_choices(catalog: Catalog, gpu_counts: Sequence[int] = GPU_COUNTS,
                efficiency: str | None = None, cut: str | None = None) -> list[FilmRequest]:
    return [FilmRequest(g, m, d, n, efficiency=efficiency, cut=cut)
            for n in gpu_counts for g in catalog.gpus for m in catalog.models for d in catalog.dtypes]


# -- a tightness estimate without synthesising ----------------------------------------------------

NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
SPOKEN_WORDS_PER_SECOND = 3.34   # the default voice's pace over the default film's narration (measured)


def number_words(written: str) -> int:
    """How many words a written number is read as: '2,711' -> 5 (two thousand seven hundred eleven),
    '12,000' -> 2, '0.37' -> 4 (zero point three seven)."""
    whole, _, decimals = written.replace(",", "").partition(".")
    value, words, scale = int(whole or 0), 0, 0
    while value:
        value, group = divmod(value, 1000)
        hundreds, rest = divmod(group, 100)
        if group:
            words += (2 if hundreds else 0) + (0 if not rest else 1 if rest < 20 or rest % 10 == 0 else 2)
            words += 1 if scale else 0    # thousand, million, ...
        scale += 1
    words = words or 1                    # zero
    return words + (1 + len(decimals) if decimals else 0)


def spoken_words(text: str) -> int:
    """The words of a beat's spoken text, each number counted as the words it is read as."""
    return sum(sum(number_words(n) for n in NUMBER.findall(word)) or 1 for word in text.split())


@dataclass(frozen=True)
class SpeechLoad:
    beat: str
    words: int
    seconds: float        # estimated: its words at the voice's pace, and its pauses
    available: float      # its slot, less the lead-in and the gap

    @property
    def load(self) -> float:
        return self.seconds / self.available


def speech_loads(plan: Plan) -> list[SpeechLoad]:
    """Each beat's estimated speech against its slot."""
    settings = plan.narration
    loads = []
    for beat in plan.beats:
        pieces = clauses(beat.narration)
        words = spoken_words(spoken_form(beat.narration, plan.pronunciations))
        pauses = sum(settings.clause_pause if text.endswith(",") else settings.sentence_pause for _,
                     text in pieces[:-1])
        available = (beat.end - settings.gap) - (beat.start + settings.lead_in)
        loads.append(SpeechLoad(beat.id, words, words / SPOKEN_WORDS_PER_SECOND + pauses, available))
    return loads


def speech_load(plan: Plan) -> SpeechLoad:
    """The beat whose estimated speech fills the most of its slot."""
    return max(speech_loads(plan), key=lambda load: load.load)


def axis_ends(catalog: Catalog, around: FilmRequest, gpu_counts: Sequence[int] = GPU_COUNTS) -> list[FilmRequest]:
    """Around one choice, each axis's two ends: the slowest and fastest memory, the smallest and
    largest model, the narrowest and widest weights, the fewest and most GPUs (the choice's own
    value where it ties with an end)."""
    def ends(entries: dict, own: str, key) -> list[str]:
        ordered = sorted(entries.values(), key=key)
        low, high = key(ordered[0]), key(ordered[-1])
        return [own if key(entries[own]) == end else next(e.id for e in ordered if key(e) == end) for end in (low,
                                                                                                              high)]

    picks = [replace(around, gpu=g) for g in ends(catalog.gpus, around.gpu, lambda g: g.bandwidth)]
    picks += [replace(around, model=m) for m in ends(catalog.models, around.model, lambda m: m.parameters)]
    picks += [replace(around, dtype=d) for d in ends(catalog.dtypes, around.dtype, lambda d: d.bytes_per_weight)]
    picks += [replace(around, gpus=n) for n in (min(gpu_counts), max(gpu_counts))]
    return list(dict.fromkeys(picks))


def sample_choices(tightest: int = 10, gpu_counts: Sequence[int] = GPU_COUNTS,
                   efficiency: str | None = None) -> list[tuple[FilmRequest, SpeechLoad | None]]:
    """A representative few for `make test`: the `tightest` choices by estimated speech load, then the
    ends of each axis around the storyboard's default (None where a choice is refused)."""
    catalog = load_catalog(DATA_DIR)
    loads: dict[FilmRequest, SpeechLoad | None] = {}
    for choice in all_choices(catalog, gpu_counts, efficiency):
        try:
            plan = resolve_plan(choice)
        except FilmError:
            loads[choice] = None
            continue
        loads[choice] = speech_load(plan)
    resolved = sorted((choice for choice in loads if loads[choice]), key=lambda choice: -loads[choice].load)
    default = resolve_plan().choice
    ends = axis_ends(catalog, FilmRequest(default.gpu.id, default.model.id, default.dtype.id, default.gpus,
                                          efficiency=efficiency), gpu_counts)
    picked = list(dict.fromkeys(resolved[:tightest] + ends))
    return [(choice, loads.get(choice)) for choice in picked]


def check_choices(gpu_counts: Sequence[int] = GPU_COUNTS, cache: Path | None = None, jobs: int = 1,
                  say=print, sample: bool = False, layout: bool = False,
                  efficiency: str | None = None, cut: str | None = None, stress: bool = False) -> list[ChoiceCheck]:
    """Every choice (or `make test`'s sample) checked, `jobs` at a time (separate processes sharing the
    clip cache, whose entries are written atomically), in order. With `cut`, each choice's film of that cut (the
    sample is chosen by the film's own estimate: a cut's simulation is too slow to resolve the whole matrix for)."""
    catalog = load_catalog(DATA_DIR)
    cache = cache or cache_dir()
    if efficiency or cut:
        resolve_plan(efficiency=efficiency, cut=cut)  # a bad EFFICIENCY= or CUT= is one message, not one a choice
    if stress:
        choices = [replace(choice, cut=cut) for choice in STRESS_CHOICES]
    elif sample:
        choices = [replace(choice, cut=cut) for choice, _ in sample_choices(gpu_counts=gpu_counts,
                                                                             efficiency=efficiency)]
    else:
        choices = all_choices(catalog, gpu_counts, efficiency, cut)
    results: list[ChoiceCheck] = []
    started = time.perf_counter()

    def report(result: ChoiceCheck) -> None:
        results.append(result)
        detail = (f"{result.beat} load {result.load:.3f}, tempo {result.tempo:.3f}, {result.headroom:+.2f} s"
                  if result.beat else result.note)
        say(f"[{len(results)}/{len(choices)}] {result.label}: {result.outcome}  {detail}")

    if jobs <= 1:
        for choice in choices:
            report(check_choice(choice, cache, layout))
    else:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for result in pool.map(check_choice, choices, [cache] * len(choices), [layout] * len(choices),
                                   chunksize=1 if layout else 4):
                report(result)
    say(f"{len(choices)} choices in {time.perf_counter() - started:.0f} s")
    return results


def tightness(result: ChoiceCheck) -> tuple:
    """The fullest slot first; refusals last."""
    return (result.outcome == "refused", -result.load)


def table(results: list[ChoiceCheck]) -> str:
    ordered = sorted(results, key=tightness)
    return "\n".join([TABLE_HEADER, *(r.row() for r in ordered)]) + "\n"


def summary(results: list[ChoiceCheck]) -> tuple[str, bool]:
    """What `film check-choices` prints after the table is written, and whether a choice that fits cannot be
    narrated."""
    narrated = [result for result in results if result.outcome != "refused"]
    failed = [result for result in narrated if result.outcome == "fails"]
    lines = [f"{len(results)} choices: {len(results) - len(narrated)} refused (memory, GPU count), "
             f"{len(narrated) - len(failed)} make a film, {len(failed)} cannot"]
    lines += [f"  {result.label}: {result.note}" for result in failed
              if result.beat and result.note != "speech too long"]
    lines.append("tightest ten:")
    for result in sorted(narrated, key=tightness)[:10]:
        lines.append(f"  {result.label:<44} {result.beat:<18} load {result.load:.3f}  tempo {result.tempo:.3f}  "
                     f"{result.headroom:+6.2f} s" + (f"  {result.note}" if result.outcome == "fails" else ""))
    return "\n".join(lines), bool(failed)
