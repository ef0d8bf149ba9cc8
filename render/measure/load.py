"""`film measure --load`: an open-loop stream of requests sent to an endpoint, every one timed, as a load dataset.

Requests leave at their Poisson arrival times (render/serving/workload.py's draw, seeded) whatever the endpoint's
state, as real users' do: an endpoint that falls behind queues them, which is what is measured. Each request's
prompt is built to its length by the same calibration `film measure` uses, opening differently from every other
(no cache can serve it), and asks for its answer's tokens; its TTFT, TPOT and end-to-end latency are recorded with
the server's own token counts. The stream is bounded in count (--requests) and time (--max-seconds, after which no
request leaves and those in flight are waited for up to the timeout). The key is kept out of everything written.

A load dataset (YAML) holds the arrivals and lengths `film load --compare` replays through the simulator, and what
each request met.
"""

from __future__ import annotations

import math
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

from render import __version__
from render.errors import FilmError
from render.files import display_path, write_atomic
from render.measure.client import Endpoint, RunFailed
from render.measure.prompts import Prompts, calibrate
from render.serving.workload import MAX_RATE, MAX_REQUESTS, MIN_RATE, Lengths, Request, poisson
from render.specs.fields import as_float
from render.specs.yamlio import YamlList, YamlMap, load_yaml
from render.text import clean_text, echo

KIND = "load"
MAX_IN_FLIGHT = 256
CACHED_SHARE = 0.5  # of a prompt's tokens served from the server's cache (more than its template and first word)


@dataclass(frozen=True)
class Timed:
    arrival_seconds: float     # when it was sent, from the stream's start
    prompt_tokens: int         # the server's count
    answer_tokens: int         # tokens it streamed
    ttft_seconds: float
    e2e_seconds: float
    cached_tokens: int | None = None  # of its prompt, served from the server's cache, where the server says

    @property
    def tpot_seconds(self) -> float | None:
        return (self.e2e_seconds - self.ttft_seconds) / (self.answer_tokens - 1) if self.answer_tokens > 1 else None


@dataclass(frozen=True)
class LoadDataset:
    rate: float
    seed: int
    prompt: str                # the lengths asked for ("64", "2000~500")
    answer: str
    model_reported: str | None
    endpoint_host: str
    requests: tuple[Timed, ...]
    failed: int

    def trace(self) -> tuple[Request, ...]:
        """The arrivals and lengths, as the simulator replays them."""
        return tuple(Request(timed.arrival_seconds, timed.prompt_tokens, timed.answer_tokens)
                     for timed in self.requests)


def measure_load(endpoint: Endpoint, rate: float, count: int, prompt: Lengths, answer: Lengths, seed: int = 0,
                 max_seconds: float = 600.0, say=print) -> LoadDataset:
    planned = poisson(rate, count, prompt, answer, seed)
    # The seed fixes the arrivals and lengths; the openings are fresh each run, so no server's cache of earlier
    # prompts (llama.cpp keeps finished ones in memory) serves a run repeated with the same seed.
    prompts = Prompts(advice="lower --requests")
    try:
        calibrated = calibrate(endpoint, prompts, int(round(prompt.mean)))
    except RunFailed as failure:
        raise FilmError(f"{prompt.mean:,.0f}-token prompt: {failure}; nothing was written") from None
    per_token = calibrated.chars / max(1, calibrated.tokens or prompt.mean)
    say(f"load: {count:,} requests at {rate:g} a second to {endpoint.host} (prompts {prompt}, answers {answer} "
        f"tokens), at most {max_seconds:g} s")
    results: list[Timed | None] = [None] * count
    failures: list[str] = []
    lock = threading.Lock()
    start = time.perf_counter()

    def send(index: int, request: Request, text: str) -> None:
        sent = time.perf_counter()
        try:
            run = endpoint.stream(text, request.answer_tokens)
        except (RunFailed, FilmError) as failure:
            with lock:
                failures.append(str(failure))
            return
        except Exception as error:  # noqa: BLE001 - film measure's own fault: its reason kept, not lost in the pool
            with lock:
                failures.append(str(endpoint.failed(f"{type(error).__name__}: {error}")))
            return
        tokens = run.prompt_tokens if run.prompt_tokens is not None else request.prompt_tokens
        # (a server that counts its cache but not the prompt: the planned length stands for the prompt, and what it
        # says it cached is at most that)
        cached = None if run.cached_tokens is None else min(run.cached_tokens, tokens)
        results[index] = Timed(round(sent - start, 6), tokens, run.output_tokens, round(run.ttft, 6),
                               round(run.total, 6), cached)

    sent = 0
    with ThreadPoolExecutor(min(count, MAX_IN_FLIGHT)) as pool:
        for index, request in enumerate(planned):
            if request.arrival > max_seconds:
                say(f"load: stopped sending after {max_seconds:g} s ({index:,} of {count:,} sent)")
                break
            # Each prompt is written as it leaves: only those in flight are held, however many the run sends.
            text = prompts.make(max(1, round(request.prompt_tokens * per_token)))
            wait = start + request.arrival - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            pool.submit(send, index, request, text)
            sent = index + 1
    if sent == 0:
        raise FilmError(f"no request was sent: the first arrives at {planned[0].arrival:,.1f} s, after --max-seconds "
                        f"{max_seconds:g}; raise --max-seconds or --rate. Nothing was written")
    timed = tuple(sorted((result for result in results if result is not None), key=lambda t: t.arrival_seconds))
    if len(timed) < max(1, sent // 2):
        reasons = "; ".join(sorted(set(failures))[:3]) or "none reported"
        raise FilmError(f"only {len(timed):,} of {sent:,} requests sent succeeded; failures: {reasons}. "
                        f"Nothing was written")
    served = sum((t.cached_tokens or 0) > CACHED_SHARE * t.prompt_tokens for t in timed)
    if served:
        say(f"load: the server served {served:,} of the {len(timed):,} prompts mostly from its cache, so their prefill "
            f"was not timed (the simulator assumes none is cached): another client sent the same prompts?")
    host = endpoint.host + (f":{endpoint.port}" if endpoint.port else "")
    return LoadDataset(rate, seed, str(prompt), str(answer), endpoint.reported_model, host, timed, len(failures))


def load_text(record: LoadDataset) -> str:
    document = {"kind": KIND, "tool_version": __version__, "endpoint_host": record.endpoint_host,
                "model_reported": record.model_reported, "rate": record.rate, "seed": record.seed,
                "prompt_tokens": record.prompt, "answer_tokens": record.answer, "failed": record.failed,
                "requests": [{"arrival_seconds": t.arrival_seconds, "prompt_tokens": t.prompt_tokens,
                              "answer_tokens": t.answer_tokens, "ttft_seconds": t.ttft_seconds,
                              "e2e_seconds": t.e2e_seconds,
                              **({} if t.cached_tokens is None else {"cached_tokens": t.cached_tokens})}
                             for t in record.requests]}
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120)


def write_load(path: Path, record: LoadDataset) -> None:
    """Written atomically, and only once the very text has been read back as `film load --compare` reads it (what
    it would refuse is refused here, with its reason, and nothing is written)."""
    text = load_text(record)
    Path(path).parent.mkdir(parents=True, exist_ok=True)  # (as write_atomic would: build/load/ on a fresh checkout)
    with tempfile.TemporaryDirectory(prefix=".load-check-", dir=Path(path).parent) as folder:
        check = Path(folder) / Path(path).name
        check.write_text(text, encoding="utf-8")
        try:
            read_load(check)
        except FilmError as error:
            raise FilmError(f"the load dataset for {path} would not be read by film load --compare "
                            f"({str(error).split(': ', 1)[-1]}); nothing was written") from None
    write_atomic(path, text)


def read_load(path: Path) -> LoadDataset:
    """A load dataset, every field checked with its line."""
    document = load_yaml(path, "a load dataset (film measure --load)")
    where = display_path(path)
    if not isinstance(document, YamlMap) or document.get("kind") != KIND:
        raise FilmError(f"{where}: not a load dataset (film measure --load writes one, with kind: load)")
    rows = document.get("requests")
    if not isinstance(rows, YamlList) or not rows:
        raise FilmError(f"{document.where('requests') if 'requests' in document else where}: no requests")
    timed, previous = [], 0.0
    for index, row in enumerate(rows):
        if not isinstance(row, YamlMap):
            raise FilmError(f"{rows.where(index)}: a request should be a mapping")
        values = []
        for name, low, high in (("arrival_seconds", 0, 1e8), ("prompt_tokens", 1, 1e7), ("answer_tokens", 1, 1e7),
                                ("ttft_seconds", 0, 1e6), ("e2e_seconds", 0, 1e6)):
            value = row.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(as_float(value)) \
                    or not low <= value <= high:
                raise FilmError(f"{row.where(name) if name in row else row.where()}: {name} is {echo(value)}; it must "
                                f"be a number from {low:g} to {high:g}")
            values.append(value)
        if values[0] < previous:
            raise FilmError(f"{row.where('arrival_seconds')}: sent before the request above; a load dataset is in "
                            f"the order its requests were sent")
        if values[4] < values[3]:
            raise FilmError(f"{row.where('e2e_seconds')}: ends before its first token")
        cached = row.get("cached_tokens")
        if cached is not None and (isinstance(cached, bool) or not isinstance(cached, int)
                                   or not 0 <= cached <= values[1]):
            raise FilmError(f"{row.where('cached_tokens')}: cached_tokens is {echo(cached)}; it must be a whole number "
                            f"from 0 to the prompt's {values[1]:g} tokens")
        previous = values[0]
        timed.append(Timed(float(values[0]), int(values[1]), int(values[2]), float(values[3]), float(values[4]),
                           cached))
    rate, seed, failed = (document.get(name) for name in ("rate", "seed", "failed"))
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float))
                             or not math.isfinite(as_float(rate)) or not MIN_RATE <= rate <= MAX_RATE):
        raise FilmError(f"{document.where('rate')}: rate is {echo(rate)}; it must be the requests a second the stream "
                        f"was sent at, from {MIN_RATE:g} to {MAX_RATE:g}")
    for name, value, high in (("seed", seed, 2**32 - 1), ("failed", failed, MAX_REQUESTS)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high):
            raise FilmError(f"{document.where(name)}: {name} is {echo(value)}; it must be a whole number from 0 to "
                            f"{high:,}")
    return LoadDataset(float(rate) if rate is not None else math.nan, seed or 0,
                       clean_text(str(document.get("prompt_tokens")), 40),
                       clean_text(str(document.get("answer_tokens")), 40),
                       clean_text(str(document.get("model_reported")), 200) if document.get("model_reported") else None,
                       clean_text(str(document.get("endpoint_host", "")), 200), tuple(timed),
                       failed or 0)
