"""The requests a simulated deployment serves: arrival times, prompt and answer lengths.

Poisson arrivals at a rate (exponential gaps from a seeded generator), lengths fixed or drawn from a log-normal of a
given mean and spread; or a trace (CSV or JSON lines: arrival seconds, prompt tokens, answer tokens) read through the
capped reader, every row range-checked with its line. The gaps are drawn at unit rate and scaled, so a sweep over
rates sees the same pattern of arrivals at every rate (common random numbers: a curve, not a scatter).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from render.errors import FilmError
from render.files import display_path, read_text_capped
from render.specs.fields import as_float
from render.text import echo

MAX_REQUESTS = 1_000_000        # a workload's requests, drawn or read
MAX_TOKENS = 10_000_000         # a prompt's or an answer's tokens (as a measured dataset's)
MAX_ARRIVAL_SECONDS = 1e8       # three years: a trace's clock, not a typo's
MAX_TRACE_BYTES = 64 * 2**20
MAX_RATE = 1e6                  # requests a second
MIN_RATE = 1e-6


@dataclass(frozen=True)
class Request:
    arrival: float        # seconds from the workload's start
    prompt_tokens: int
    answer_tokens: int


@dataclass(frozen=True)
class Lengths:
    """A length: fixed (`spread` 0), or log-normal with this mean and standard deviation, in tokens."""

    mean: float
    spread: float = 0.0

    def draw(self, generator: np.random.Generator, count: int) -> np.ndarray:
        if self.spread == 0:
            return np.full(count, int(round(self.mean)), dtype=np.int64)
        sigma2 = math.log1p((self.spread / self.mean) ** 2)
        drawn = generator.lognormal(math.log(self.mean) - sigma2 / 2, math.sqrt(sigma2), count)
        return np.clip(np.rint(drawn), 1, MAX_TOKENS).astype(np.int64)

    def __str__(self) -> str:
        def number(value: float) -> str:  # (10000000, not 1e+07: as the user wrote it)
            return f"{value:.0f}" if value == int(value) and value < 1e15 else f"{value:g}"

        return number(self.mean) if self.spread == 0 else f"{number(self.mean)}±{number(self.spread)}"


def parse_lengths(text: str, flag: str) -> Lengths:
    """'2000' (fixed) or '2000±500' / '2000~500' / '2000:500' (a log-normal's mean and standard deviation)."""
    for separator in ("±", "~", ":"):
        if separator in text:
            mean_text, _, spread_text = text.partition(separator)
            break
    else:
        mean_text, spread_text = text, "0"
    try:
        mean, spread = float(mean_text.replace(",", "").replace("_", "")), float(spread_text.replace(",", ""))
    except ValueError:
        raise FilmError(f"{flag} {echo(text)}: give tokens, fixed (2000) or a log-normal's mean and spread "
                        f"(2000~500)") from None
    if not (math.isfinite(mean) and 1 <= mean <= MAX_TOKENS):
        raise FilmError(f"{flag} {echo(text)}: the mean must be from 1 to {MAX_TOKENS:,} tokens")
    if not (math.isfinite(spread) and 0 <= spread <= 100 * mean):
        raise FilmError(f"{flag} {echo(text)}: the spread must be from 0 to 100 times the mean")
    return Lengths(mean, spread)


def check_rate(rate: float, flag: str = "--rate") -> float:
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and MIN_RATE <= rate <= MAX_RATE):
        raise FilmError(f"{flag} {echo(rate)}: give requests a second, from {MIN_RATE:g} to {MAX_RATE:,.0f}")
    return float(rate)


def check_count(count: int, flag: str = "--requests") -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_REQUESTS:
        raise FilmError(f"{flag} {echo(count)}: give a whole number of requests from 1 to {MAX_REQUESTS:,}")
    return count


def unit_gaps(count: int, seed: int) -> np.ndarray:
    """Exponential gaps at one request a second: divided by a rate, Poisson arrivals at that rate."""
    return np.random.default_rng([seed, 1]).exponential(1.0, count)


def poisson(rate: float, count: int, prompt: Lengths, answer: Lengths, seed: int = 0) -> tuple[Request, ...]:
    """`count` requests arriving as a Poisson process at `rate` a second (the first after one gap)."""
    check_rate(rate)
    check_count(count)
    arrivals = np.cumsum(unit_gaps(count, seed)) / rate
    lengths = np.random.default_rng([seed, 2])
    prompts, answers = prompt.draw(lengths, count), answer.draw(lengths, count)
    return tuple(Request(float(at), int(p), int(a)) for at, p, a in zip(arrivals, prompts, answers))


def at_rate(requests: tuple[Request, ...], rate: float, seed: int = 0) -> tuple[Request, ...]:
    """The same lengths, arriving as a Poisson process at `rate` (the same unit gaps for every rate)."""
    arrivals = np.cumsum(unit_gaps(len(requests), seed)) / check_rate(rate)
    return tuple(Request(float(at), r.prompt_tokens, r.answer_tokens) for at, r in zip(arrivals, requests))


TRACE_FIELDS = ("arrival_seconds", "prompt_tokens", "answer_tokens")


def trace_rate(requests: tuple[Request, ...]) -> float | None:
    """A trace's mean arrival rate: its requests after the first over the time they took to arrive (None for one
    request, or for requests that all arrive at once)."""
    span = requests[-1].arrival - requests[0].arrival
    return (len(requests) - 1) / span if len(requests) > 1 and span > 0 else None


MAX_TRACE_LINE = 1024           # characters in a trace's line: three numbers and their names fit many times over
LINE_END = re.compile(r"\r\n|\r|\n")


def read_trace(path: Path) -> tuple[Request, ...]:
    """A trace file: CSV (a header naming the three fields, or none) or JSON lines ({"arrival_seconds": …,
    "prompt_tokens": …, "answer_tokens": …} a line). Read in one pass, a line at a time: each line bounded before it
    is parsed, each row checked where it stands (numbers within range, arrivals in order: a row in the future of the
    next is refused with its line), and the count of requests as it grows."""
    where = display_path(path)
    text = read_text_capped(Path(path), MAX_TRACE_BYTES, "a trace (CSV or JSON lines)", where,
                            "no such trace file; give a CSV or JSON-lines file of arrival_seconds, prompt_tokens, "
                            "answer_tokens", "a trace is UTF-8 CSV or JSON lines", encoding="utf-8-sig")
    requests: list[Request] = []
    previous = 0.0
    for line, values in trace_rows(text, where):
        if len(requests) >= MAX_REQUESTS:
            raise FilmError(f"{where}:{line}: more than {MAX_REQUESTS:,} requests; a trace holds at most "
                            f"{MAX_REQUESTS:,}")
        arrival, prompt, answer = (checked(values.get(name), name, line, where) for name in TRACE_FIELDS)
        if arrival < previous:
            raise FilmError(f"{where}:{line}: arrives at {arrival:g} s, before the row above ({previous:g} s); a trace "
                            f"is in arrival order")
        previous = arrival
        requests.append(Request(arrival, int(prompt), int(answer)))
    if not requests:
        raise FilmError(f"{where}: no requests in it; write one a line: arrival_seconds, prompt_tokens, answer_tokens")
    return tuple(requests)


def trace_lines(text: str, where: str):
    """(line number, line) for each line of `text` (ended by CRLF, CR or LF), a line longer than MAX_TRACE_LINE
    refused before anything parses it."""
    start, number = 0, 0
    ends = LINE_END.finditer(text)
    while start < len(text):
        found = next(ends, None)
        stop, after = (found.start(), found.end()) if found else (len(text), len(text))
        number += 1
        if stop - start > MAX_TRACE_LINE:
            raise FilmError(f"{where}:{number}: a line of {stop - start:,} characters; a trace's line holds three "
                            f"numbers (at most {MAX_TRACE_LINE:,} characters)")
        yield number, text[start:stop]
        start = after


def trace_rows(text: str, where: str):
    lines = trace_lines(text, where)
    first = next(((number, line) for number, line in lines if line.strip()), None)
    if first is None:
        return
    rest = itertools.chain([first], lines)
    if first[1].strip().startswith("{"):
        for number, line in rest:
            if not line.strip():
                continue
            try:
                row = json.loads(line, parse_int=int, parse_constant=lambda name: math.nan)
            except (ValueError, RecursionError):
                raise FilmError(f"{where}:{number}: not a JSON object (a JSON-lines trace has one a line)") from None
            if not isinstance(row, dict):
                raise FilmError(f"{where}:{number}: not a JSON object (a JSON-lines trace has one a line)")
            yield number, row
        return
    at = [first[0]]

    def numbered():
        for number, line in rest:
            at[0] = number
            yield line

    reader = csv.reader(numbered())
    header = None
    while True:
        try:
            row = next(reader, None)
        except csv.Error as error:
            raise FilmError(f"{where}:{at[0]}: not a CSV row ({error}); a trace's row is three numbers with "
                            f"commas") from None
        if row is None:
            return
        number = at[0]
        cells = [cell.strip() for cell in row]
        if not any(cells) or cells[0].startswith("#"):
            continue
        if header is None and not looks_numeric(cells[0]):
            header = cells
            missing = [name for name in TRACE_FIELDS if name not in header]
            if missing:
                raise FilmError(f"{where}:{number}: the header lacks {', '.join(missing)}; name the columns "
                                f"{', '.join(TRACE_FIELDS)}")
            continue
        names = header or list(TRACE_FIELDS)
        if len(cells) != len(names):
            raise FilmError(f"{where}:{number}: {len(cells)} columns where the trace has {len(names)} "
                            f"({', '.join(names)})")
        yield number, dict(zip(names, cells))


def looks_numeric(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def checked(value, name: str, line: int, where: str) -> float:
    if isinstance(value, str):
        if len(value) > 40:
            raise FilmError(f"{where}:{line}: {name} is {echo(value, 40)}, not a number")
        try:
            value = float(value)
        except ValueError:
            raise FilmError(f"{where}:{line}: {name} is {echo(value)}, not a number") from None
    if value is None:
        raise FilmError(f"{where}:{line}: no {name}; each row gives {', '.join(TRACE_FIELDS)}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FilmError(f"{where}:{line}: {name} is {echo(value)}, not a number")
    written, value = value, as_float(value)
    if name == "arrival_seconds":
        if not (math.isfinite(value) and 0 <= value <= MAX_ARRIVAL_SECONDS):
            raise FilmError(f"{where}:{line}: arrival_seconds is {echo(written)}; it must be from 0 to "
                            f"{MAX_ARRIVAL_SECONDS:g} seconds after the trace's start")
        return value
    if not (math.isfinite(value) and value == int(value) and 1 <= value <= MAX_TOKENS):
        raise FilmError(f"{where}:{line}: {name} is {echo(written)}; it must be a whole number of tokens from 1 to "
                        f"{MAX_TOKENS:,}")
    return value
