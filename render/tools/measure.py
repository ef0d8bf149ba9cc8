"""`film measure`: time to first token and decode speed of a live OpenAI-compatible endpoint.

Definitions (the film uses the same):
    TTFT         from sending the request to the first streamed content token
    TPOT         (end-to-end time - TTFT) / (output tokens - 1); decode rate = 1 / TPOT
    ITL          the gaps between content chunks (percentiles)
Token counts come from the response's `usage` (the request asks for it with
stream_options.include_usage); without usage the chunks are counted and flagged approximate.

Every request has a timeout, the run has a cap on requests, 429s are retried after their
Retry-After (bounded), a failed run is reported and left out, and the dataset is written
(atomically) only when every prompt length has enough good runs. The API key is read from an
environment variable and never printed or written.
"""

from __future__ import annotations

import datetime
import http.client
import json
import logging
import math
import os
import socket
import statistics
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from render import __version__
from render.files import write_atomic
from render.errors import FilmError

log = logging.getLogger("film")

FILLER = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches "
          "near misty harbour lights").split()
MAX_RETRY_AFTER = 30.0   # seconds we are willing to wait on a 429
MAX_429_RETRIES = 3
CALIBRATION_ROUNDS = 5
MAX_LINE_BYTES = 1 << 20      # one SSE line; a chunk of a chat stream is a few hundred bytes
MAX_TOKEN_COUNT = 10_000_000  # what a usage figure may say before it is not believed
MAX_PROMPT_WORDS = 4_000_000  # calibration never builds a longer prompt than this
REDACTED = "***"


class RunFailed(Exception):
    """One request failed; the message says how (never with the API key: see Endpoint.failed)."""


@dataclass
class Run:
    ttft: float
    total: float
    output_tokens: int
    prompt_tokens: int | None
    gaps: list[float]
    usage_reported: bool

    @property
    def tpot(self) -> float | None:
        if self.output_tokens < 2:
            return None
        return (self.total - self.ttft) / (self.output_tokens - 1)


@dataclass
class Endpoint:
    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0
    max_requests: int = 200
    requests_made: int = field(default=0)
    reported_model: str | None = None

    def __post_init__(self):
        parsed = urllib.parse.urlparse(self.base_url.rstrip("/"))
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise FilmError(f"--base-url {self.base_url!r} is not an http(s) URL, e.g. http://localhost:8000/v1")
        try:
            port = parsed.port
        except ValueError:
            raise FilmError(f"--base-url {self.base_url!r}: the port must be a number from 1 to 65535") from None
        if port is not None and not 1 <= port <= 65535:
            raise FilmError(f"--base-url {self.base_url!r}: the port must be a number from 1 to 65535")
        if not 0 < self.timeout <= 3600:
            raise FilmError(f"--timeout {self.timeout:g}: give the seconds one request may take, above 0 and at "
                            f"most 3600")
        self.scheme, self.host, self.port = parsed.scheme, parsed.hostname, port
        self.path = (parsed.path or "") + "/chat/completions"

    def redact(self, text: str) -> str:
        """Text that leaves the program with the API key (however a server echoes it) replaced by ***."""
        return text.replace(self.api_key, REDACTED) if self.api_key else text

    def failed(self, message: str) -> RunFailed:
        return RunFailed(self.redact(message))

    def stream(self, prompt: str, max_tokens: int) -> Run:
        """One streamed chat completion, timed; 429s retried after their Retry-After."""
        for attempt in range(MAX_429_RETRIES + 1):
            try:
                return self._stream_once(prompt, max_tokens)
            except RateLimited as limited:
                if attempt == MAX_429_RETRIES or limited.wait > MAX_RETRY_AFTER:
                    raise RunFailed(f"rate limited (HTTP 429) {attempt + 1} times"
                                    + (f"; Retry-After {limited.wait:g} s is longer than {MAX_RETRY_AFTER:g} s"
                                       if limited.wait > MAX_RETRY_AFTER else "")) from None
                log.info("rate limited; retrying after %.1f s", limited.wait)
                time.sleep(limited.wait)
        raise AssertionError("unreachable")

    def _stream_once(self, prompt: str, max_tokens: int) -> Run:
        if self.requests_made >= self.max_requests:
            raise FilmError(f"stopped after {self.max_requests} requests (--max-requests); nothing was written")
        self.requests_made += 1
        body = json.dumps({"model": self.model, "stream": True, "stream_options": {"include_usage": True},
                           "max_tokens": max_tokens, "temperature": 0,
                           "messages": [{"role": "user", "content": prompt}]}).encode()
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        connection_type = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        connection = connection_type(self.host, self.port, timeout=self.timeout)
        started = time.perf_counter()
        deadline = started + self.timeout  # --timeout bounds the whole request, not each read
        try:
            connection.request("POST", self.path, body=body, headers=headers)
            response = connection.getresponse()
            if response.status == 429:
                raise RateLimited(retry_after(response.getheader("Retry-After")))
            if response.status != 200:
                detail = response.read(300).decode(errors="replace").strip().replace("\n", " ")
                raise self.failed(f"HTTP {response.status} {response.reason}" + (f": {detail}" if detail else ""))
            return self._read_stream(response, connection, started, deadline)
        except (ConnectionRefusedError, socket.gaierror) as error:
            raise self.failed(f"cannot connect to {self.host}:{self.port or ''} ({error.strerror or error})") from None
        except (socket.timeout, TimeoutError):
            raise self.failed(f"no answer within {self.timeout:g} s (--timeout)") from None
        except (http.client.HTTPException, OSError) as error:
            raise self.failed(f"the connection failed: {type(error).__name__}") from None
        finally:
            connection.close()

    def _read_stream(self, response, connection, started: float, deadline: float) -> Run:
        first = None
        chunk_times: list[float] = []
        usage = None
        done = False
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise self.failed(f"the answer took longer than {self.timeout:g} s (--timeout)")
            if connection.sock is not None:
                connection.sock.settimeout(remaining)
            raw = response.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            if len(raw) > MAX_LINE_BYTES:
                raise self.failed(f"malformed stream: a line longer than {MAX_LINE_BYTES // 2**20} MiB")
            line = raw.decode(errors="replace").strip()
            if not line or line.startswith(":"):
                continue
            if not line.startswith("data:"):
                raise self.failed(f"malformed stream: a line that is not an SSE data line ({line[:40]!r})")
            data = line[5:].strip()
            if data == "[DONE]":
                done = True
                break
            try:
                event = json.loads(data)
            except json.JSONDecodeError:
                raise self.failed(f"malformed stream: a chunk that is not JSON ({data[:40]!r})") from None
            if not isinstance(event, dict):
                raise self.failed(f"malformed stream: a chunk that is not a JSON object ({data[:40]!r})")
            if "error" in event:
                raise self.failed(f"the endpoint reported an error mid-stream: {str(event['error'])[:120]}")
            if isinstance(event.get("model"), str):
                self.reported_model = self.redact(event["model"][:200])
            if event.get("usage"):
                usage = event["usage"]
            for choice in event.get("choices") or []:
                if isinstance(choice, dict) and (choice.get("delta") or {}).get("content"):
                    now = time.perf_counter()
                    if first is None:
                        first = now
                    chunk_times.append(now)
        end = time.perf_counter()
        if not done:
            raise self.failed("the stream ended without [DONE] (truncated)")
        if first is None:
            raise self.failed("the stream carried no content")
        gaps = [later - earlier for earlier, later in zip(chunk_times, chunk_times[1:])]
        if usage:
            completion = self.token_count(usage, "completion_tokens")
            prompt = self.token_count(usage, "prompt_tokens")
            if completion:
                return Run(first - started, end - started, completion, prompt, gaps, True)
        return Run(first - started, end - started, len(chunk_times), None, gaps, False)

    def token_count(self, usage, name: str) -> int | None:
        """A usage figure, believed only if it is a whole number of tokens within reason."""
        if not isinstance(usage, dict) or usage.get(name) is None:
            return None
        value = usage[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
            raise self.failed(f"the endpoint's usage says {name} is {str(value)[:40]}, which is not a token "
                              f"count (0 to {MAX_TOKEN_COUNT:,})")
        return value


class RateLimited(Exception):
    def __init__(self, wait: float):
        self.wait = wait


def retry_after(header: str | None) -> float:
    try:
        return max(0.0, float(header)) if header is not None else 1.0
    except ValueError:
        return 1.0


def filler_prompt(words: int) -> str:
    return " ".join(FILLER[index % len(FILLER)] for index in range(max(1, words)))


def calibrated_prompt(endpoint: Endpoint, tokens: int) -> tuple[str, int | None]:
    """A prompt that the endpoint counts as `tokens` prompt tokens, within 1% (None: no usage to check)."""
    words = tokens
    for _ in range(CALIBRATION_ROUNDS):
        prompt = filler_prompt(words)
        run = endpoint.stream(prompt, max_tokens=1)
        if run.prompt_tokens is None:
            return prompt, None
        if run.prompt_tokens == 0:
            raise FilmError(f"the endpoint counted a {words:,}-word prompt as 0 tokens, so no prompt can be "
                            f"calibrated against it; nothing was written")
        if abs(run.prompt_tokens - tokens) <= max(1, 0.01 * tokens):
            return prompt, run.prompt_tokens
        # At most four times longer or shorter a round: a wild count cannot make the prompt explode.
        scaled = round(words * tokens / run.prompt_tokens)
        words = max(1, min(scaled, 4 * words, MAX_PROMPT_WORDS), words // 4)
    raise FilmError(f"could not build a prompt of {tokens:,} tokens within 1% in {CALIBRATION_ROUNDS} tries "
                    f"(last: {run.prompt_tokens:,}); nothing was written")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))
    return ordered[index]


def summarise(tokens: int, prompt_tokens: int | None, runs: list[Run]) -> dict:
    ttfts = [run.ttft for run in runs]
    rates = [1 / run.tpot for run in runs if run.tpot]
    gaps = [gap for run in runs for gap in run.gaps]
    entry = {
        "prompt_tokens": prompt_tokens or tokens,
        "ttft_seconds": round(statistics.median(ttfts), 4),
        "ttft_approximate": False,
        "ttft_spread_seconds": [round(min(ttfts), 4), round(max(ttfts), 4)],
        "decode_tokens_per_second": round(statistics.median(rates), 2) if rates else None,
        "decode_spread_tokens_per_second": [round(min(rates), 2), round(max(rates), 2)] if rates else None,
        "inter_token_latency_seconds": {f"p{p}": round(percentile(gaps, p / 100), 5) for p in (50, 90, 99)}
        if gaps else None,
        "output_tokens": int(statistics.median(run.output_tokens for run in runs)),
        "runs": len(runs),
        "token_counts": "usage" if all(run.usage_reported for run in runs) else "approximate (chunks counted)",
    }
    return entry


def measure(endpoint: Endpoint, prompt_tokens: list[int], max_tokens: int, runs: int, say=print) -> list[dict]:
    """Every prompt length, `runs` times each; failed runs reported and left out."""
    results = []
    needed = max(1, math.ceil(runs / 2))
    for tokens in prompt_tokens:
        try:
            prompt, counted = calibrated_prompt(endpoint, tokens)
        except RunFailed as failure:
            raise FilmError(f"{tokens:,}-token prompt: {failure}; nothing was written") from None
        good, failed = [], []
        for number in range(1, runs + 1):
            try:
                run = endpoint.stream(prompt, max_tokens)
            except RunFailed as failure:
                failed.append(str(failure))
                say(f"  {tokens:>7,} tokens  run {number}/{runs}: failed: {failure}")
                continue
            good.append(run)
            rate = f"{1 / run.tpot:7.1f} tok/s" if run.tpot else "   (one token)"
            say(f"  {tokens:>7,} tokens  run {number}/{runs}: TTFT {run.ttft * 1000:7.1f} ms  {rate}"
                f"  {run.output_tokens} tokens")
        if len(good) < needed:
            raise FilmError(f"{tokens:,}-token prompt: only {len(good)} of {runs} runs succeeded (need {needed}); "
                            f"failures: {'; '.join(sorted(set(failed)))}. Nothing was written")
        results.append(summarise(tokens, counted, good))
    return results


def redacted(endpoint: Endpoint, value):
    """Every string in a nested structure with the API key replaced."""
    if isinstance(value, str):
        return endpoint.redact(value)
    if isinstance(value, dict):
        return {key: redacted(endpoint, item) for key, item in value.items()}
    if isinstance(value, list):
        return [redacted(endpoint, item) for item in value]
    return value


def dataset(name: str, endpoint: Endpoint, prompts: list[dict], label: str | None, provider: str | None,
            precision: str, model: str, compared_gpu: str, runs: int) -> dict:
    host = endpoint.host + (f":{endpoint.port}" if endpoint.port else "")
    return redacted(endpoint, {
        "id": name,
        "route": f"direct to {host}" + (f" ({label})" if label else ""),
        "provider": provider or label or host,
        "precision": precision,
        "model": model,
        "compared_gpu": compared_gpu,
        "compared_gpu_is_assumption": True,
        "measured_on": datetime.date.today().isoformat(),
        "label": label or host,
        "source": f"film measure {__version__}: {runs} streamed runs per prompt against {host}, "
                  f"model {endpoint.reported_model or endpoint.model!r}",
        "endpoint_host": host,
        "model_reported": endpoint.reported_model or endpoint.model,
        "runs": runs,
        "tool_version": __version__,
        "definitions": "TTFT: request sent to first streamed content token. TPOT: (end-to-end - TTFT) / "
                       "(output tokens - 1); decode rate = 1 / TPOT.",
        "prompts": prompts,
    })


def write_dataset(path: Path, data: dict) -> None:
    header = "# Measured with `film measure`; see README (Measuring your own endpoint).\n"
    write_atomic(path, header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def api_key_from(variable: str | None) -> str | None:
    if not variable:
        return None
    key = os.environ.get(variable)
    if not key:
        raise FilmError(f"--api-key-env {variable}: that environment variable is empty or not set")
    return key
