"""`make check-choices`: every GPU x model x data type in data/, narrated, to show that each choice
that fits in memory makes a film whose speech fits every slot.

For each choice: refused for memory (as it should be), or narrated, with its tightest beat, the
headroom that beat's speech leaves in its slot and the tempo it needed; a choice whose speech does
not fit even at the storyboard's maximum tempo is a failure, with its overrun as a negative
headroom. Writes build/check-choices.tsv (every choice, tightest first) and prints the tightest
ten; exits 1 when a choice that fits in memory cannot be narrated.

Synthesis is the cost (about 5 s a choice on two cores, far less with a warm clip cache, which
every choice shares: build/cache/speech).

    python -m render.tools.check_choices [--gpus N] [--out build/check-choices.tsv]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from render.errors import FilmError
from render.files import BUILD_DIR, DATA_DIR, cache_dir, write_atomic
from render.plan.resolve import resolve_plan
from render.specs.catalog import load_catalog
from render.voice.narration import Narrator

OVERRUN = re.compile(r"beat '([^']+)' .* does not fit: .* lasts ([\d.]+) s at tempo ([\d.]+).*: ([\d.]+) s over",
                     re.DOTALL)
MEMORY = ("does not fit on",)  # the roofline's memory refusal (a speech overrun says "does not fit:")


@dataclass(frozen=True)
class ChoiceCheck:
    gpu: str
    model: str
    dtype: str
    outcome: str                 # "fits", "refused" (memory) or "fails" (speech)
    beat: str = ""               # the tightest beat
    headroom: float = 0.0        # seconds its speech leaves in its slot (negative: over)
    tempo: float = 1.0
    note: str = ""

    @property
    def label(self) -> str:
        return f"{self.gpu}/{self.model}/{self.dtype}"

    def row(self) -> str:
        return "\t".join([self.label, self.outcome, self.beat, f"{self.headroom:.2f}", f"{self.tempo:.3f}", self.note])


def check_choice(gpu: str, model: str, dtype: str, gpus: int, cache: Path) -> ChoiceCheck:
    try:
        plan = resolve_plan(gpu=gpu, model=model, dtype=dtype, gpus=gpus, recordings=cache / "no-recordings")
    except FilmError as error:
        message = str(error).splitlines()[0]
        outcome = "refused" if any(word in message for word in MEMORY) else "fails"
        return ChoiceCheck(gpu, model, dtype, outcome, note=message[:200])
    try:
        timed = Narrator(plan, cache).narrate().plan
    except FilmError as error:
        found = OVERRUN.search(str(error))
        if not found:
            return ChoiceCheck(gpu, model, dtype, "fails", note=str(error).splitlines()[0][:200])
        beat, _, tempo, over = found.groups()
        return ChoiceCheck(gpu, model, dtype, "fails", beat, -float(over), float(tempo), "speech too long")
    tightest = min(timed.beats, key=lambda beat: beat.timing.latest_end - beat.timing.speech_end)
    timing = tightest.timing
    return ChoiceCheck(gpu, model, dtype, "fits", tightest.id, timing.latest_end - timing.speech_end, timing.tempo)


def check_choices(gpus: int = 1, cache: Path | None = None, say=print) -> list[ChoiceCheck]:
    catalog = load_catalog(DATA_DIR)
    cache = cache or cache_dir()
    choices = [(g, m, d) for g in catalog.gpus for m in catalog.models for d in catalog.dtypes]
    results = []
    started = time.perf_counter()
    for number, (gpu, model, dtype) in enumerate(choices, start=1):
        result = check_choice(gpu, model, dtype, gpus, cache)
        results.append(result)
        detail = f"{result.beat} {result.headroom:+.2f} s at tempo {result.tempo:.3f}" if result.beat else result.note
        say(f"[{number}/{len(choices)}] {result.label}: {result.outcome}  {detail}")
    say(f"{len(choices)} choices in {time.perf_counter() - started:.0f} s")
    return results


def table(results: list[ChoiceCheck]) -> str:
    ordered = sorted(results, key=lambda result: (result.outcome == "refused", result.headroom))
    return "\n".join(["choice\toutcome\ttightest beat\theadroom (s)\ttempo\tnote", *(r.row() for r in ordered)]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="check-choices", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=1, help="GPUs per choice (default: 1)")
    parser.add_argument("--out", type=Path, default=BUILD_DIR / "check-choices.tsv")
    parser.add_argument("--cache", type=Path, default=None, help="the clip cache (default: build/cache)")
    args = parser.parse_args(argv)
    results = check_choices(args.gpus, args.cache)
    write_atomic(args.out, table(results))
    narrated = [result for result in results if result.outcome != "refused"]
    failed = [result for result in narrated if result.outcome == "fails"]
    print(f"{len(results)} choices: {len(results) - len(narrated)} refused for memory, {len(narrated) - len(failed)} "
          f"make a film, {len(failed)} cannot")
    print("tightest ten:")
    for result in sorted(narrated, key=lambda result: result.headroom)[:10]:
        print(f"  {result.label:<40} {result.beat:<18} {result.headroom:+6.2f} s  tempo {result.tempo:.3f}"
              + (f"  {result.note}" if result.outcome == "fails" else ""))
    print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
