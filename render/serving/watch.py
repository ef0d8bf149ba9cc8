"""A long simulation seen to: its work counted as it goes (each scheduler step and the sequences it carries), said
past a few seconds with the setting that makes it long, and stopped at a bound with that setting named, so that no
setting within its documented range runs for minutes in silence."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from render.errors import FilmError

# A step costs about as much as 30 sequences in it (measured: 10 µs a step, 0.33 µs a sequence a step, on the 2-core
# machine); the extended cut's default stream is about 27 million units, some 5 to 9 seconds.
STEP_WORK = 30
MAX_WORK = 300_000_000   # a command's simulations: about a minute and a half of the 2-core machine's time
SAY_AFTER = 3.0          # seconds before the first word of progress
SAY_EVERY = 10.0


@dataclass
class Watch:
    setting: str                          # what makes the simulation long, as written ("answer_tokens 100,000")
    say: Callable[[str], None]            # progress, a line at a time (standard error)
    limit: int = field(default_factory=lambda: MAX_WORK)
    work: int = 0
    steps: int = 0
    started: float = field(default_factory=time.monotonic)
    said: float | None = None

    def tick(self, sequences: int) -> None:
        """One scheduler step that carried `sequences` sequences."""
        self.work += STEP_WORK + sequences
        self.steps += 1
        if self.steps & 1023:
            return
        if self.work > self.limit:
            raise FilmError(f"the simulation was stopped at its bound ({self.steps:,} steps of the deployment, "
                            f"{time.monotonic() - self.started:.0f} s); {self.setting} makes it long: give a value "
                            f"nearer its default")
        now = time.monotonic()
        if now - self.started >= SAY_AFTER and (self.said is None or now - self.said >= SAY_EVERY):
            self.said = now
            self.say(f"load: simulating, {now - self.started:.0f} s so far, {self.work / self.limit:.0%} of the bound "
                     f"({self.setting} makes this long)")


def heaviest(settings: dict[str, tuple[str, float]]) -> str:
    """Of the settings that lengthen a simulation, the one furthest past its default: name -> (as written, how many
    times its default's work it asks for)."""
    name, (written, _) = max(settings.items(), key=lambda item: item[1][1])
    return f"{name} {written}"
