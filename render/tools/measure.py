"""`film measure`: time to first token and decode speed of a live OpenAI-compatible endpoint.

Definitions (vLLM's benchmark convention; the film uses the same):
    TTFT         from sending the request to the first streamed token of any kind: reasoning
                 (`reasoning_content` / `reasoning` deltas) or content
    TTFC         from sending the request to the first content token (later than TTFT only when
                 the model reasons first)
    TPOT         (end-to-end time - TTFT) / (output tokens - 1), output tokens including reasoning
                 tokens; decode rate = 1 / TPOT
    ITL          the gaps between streamed token chunks (percentiles)

Prompts are cold by default: each request opens with a sentence of random words that no other
request of the run shares, so a server's prefix cache (vLLM's automatic prefix caching, SGLang's
radix cache, llama.cpp's slot cache) cannot serve it and TTFT measures prefill. `--warm-prefix`
measures the cached case on purpose: one prompt per length, sent once before its timed runs.

Prompt sizes always come from the server: the stream's `usage` (asked for with
stream_options.include_usage), else a non-streamed request for the same prompt (max_tokens 1,
whose response carries usage); only when the server reports no usage at all are they estimated
(one token per word), and the dataset says so.

Every request has a timeout, the run has a cap on requests, 429s are retried after their
Retry-After (bounded), a failed run is reported and left out, and the dataset is written
(atomically) only when every prompt length has enough good runs. The API key is read from an
environment variable and never printed or written.
"""

from __future__ import annotations

import datetime
import email.utils
import http.client
import io
import json
import logging
import math
import os
import random
import re
import socket
import shlex
import statistics
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from render import __version__
from render.files import DATA_DIR, write_atomic
from render.errors import FilmError
from render.specs.catalog import CONCURRENCY_BOUNDS, MEASURED_BOUNDS, MeasuredDataset, load_measured, out_of_range
from render.specs.yamlio import display_path
from render.text import clean_text

log = logging.getLogger("film")

FILLER = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches "
          "near misty harbour lights").split()
# Five-letter words for the sentence that opens each prompt: a word of every sentence costs the
# same tokens in most tokenizers, so a prompt's size does not depend on which words it drew.
OPENING_WORDS = ("amber cedar cloud coral delta eagle ember fable flint frost glade grain heron ivory jewel "
                 "lemon lilac maple marsh noble ocean olive onion pearl plume prism quail raven ridge river "
                 "robin sable shore slate spire stone storm sugar thorn tiger topaz tulip umber vapor viola "
                 "waltz wheat wharf").split()
OPENING_LENGTH = 3  # two words no other request of the run begins with, and one more
MAX_RETRY_AFTER = 30.0   # seconds we are willing to wait on a 429
MAX_429_RETRIES = 3
CALIBRATION_ROUNDS = 12
FIRST_PROBE_TOKENS = 256      # calibration starts small: a tokenizer may spend many tokens a word
CHARS_PER_TOKEN = 4           # English text in common tokenizers: only the first guess
MAX_LINE_BYTES = 1 << 20      # one SSE line; a chunk of a chat stream is a few hundred bytes
MAX_TOKEN_COUNT = 10_000_000  # what a usage figure may say before it is not believed
MAX_PROMPT_CHARS = 40_000_000  # calibration never builds a longer prompt than this
MAX_CONCURRENCY = 256
REDACTED = "***"
REASONING_KEYS = ("reasoning_content", "reasoning")
COUNTED_BY = {
    "stream": "usage in the stream",
    "request": "usage of a non-streamed request for the same prompt (the stream carried none)",
    "estimate": "estimated at one token per word: the server reported no usage",
}
DEFINITIONS = (
    "vLLM's benchmark convention. TTFT: request sent to the first streamed token of any kind (reasoning or "
    "content). TTFC: request sent to the first content token. TPOT: (end-to-end - TTFT) / (output tokens - 1), "
    "output tokens including reasoning; decode rate = 1 / TPOT. ITL: gaps between streamed token chunks. "
    "Aggregate throughput: output tokens of all streams of a round / the round's wall time."
)


class RunFailed(Exception):
    """One request failed; the message says how (never with the API key: see Endpoint.failed)."""


@dataclass
class Run:
    ttft: float                  # first token of any kind
    ttfc: float | None           # first content token (None: the answer was all reasoning)
    total: float
    output_tokens: int           # reasoning tokens included
    reasoning_tokens: int
    prompt_tokens: int | None
    gaps: list[float]
    usage_reported: bool
    started: float = 0.0         # perf_counter at send, for a round's wall time

    @property
    def tpot(self) -> float | None:
        if self.output_tokens < 2:
            return None
        return (self.total - self.ttft) / (self.output_tokens - 1)

    @property
    def ended(self) -> float:
        return self.started + self.total


def server_message(body: bytes | str, redact=lambda text: text) -> str:
    """The server's own words from an error body: OpenAI's {"error": {"message": …}}, or whatever it sent.
    The secret is taken out of the whole text before it is cut to length, so no part of it survives."""
    text = body.decode(errors="replace") if isinstance(body, bytes) else body
    text = text.strip()

    def words(found: str) -> str:
        return redact(" ".join(found.split()))[:300]

    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return words(text)
    error = document.get("error", document) if isinstance(document, dict) else document
    if isinstance(error, dict):
        for key in ("message", "detail", "msg"):
            if isinstance(error.get(key), str):
                return words(error[key])
    if isinstance(error, str):
        return words(error)
    return words(text)


MIN_KEY_LENGTH = 8  # a shorter "key" is ordinary text: hiding it would damage numbers, routes and names


class Redactor:
    """Replaces a secret wherever it stands as a whole token in text that leaves the program, written plainly
    or escaped (JSON's \\u0073, URL's %73, HTML's &#115;, a JSON-escaped slash), never inside a longer word,
    an identifier or a number."""

    def __init__(self, secret: str | None):
        self.secret = secret
        self.pattern = None
        if secret:
            pieces = []
            for char in secret:
                code = ord(char)
                forms = [re.escape(char), hex_escape("\\\\u", code, 4), hex_escape("%", code, 2),
                         hex_escape("\\\\x", code, 2), f"&#{code};", hex_escape("&#x", code, 0) + ";"]
                if char == "/":
                    forms.append(r"\\/")
                pieces.append("(?:" + "|".join(forms) + ")")
            self.pattern = re.compile(r"(?<![A-Za-z0-9])" + "".join(pieces) + r"(?![A-Za-z0-9])")

    def __call__(self, text: str) -> str:
        return self.pattern.sub(REDACTED, text) if self.pattern else text


def hex_escape(prefix: str, code: int, width: int) -> str:
    """A regular expression for `code` in hex after `prefix`, either case, zero-padded to `width` (0: any)."""
    digits = f"{code:0{width}x}" if width else f"{code:x}"
    if width and len(digits) > width:
        return "(?!)"  # cannot be written this way
    padding = "0*" if not width else ""
    return prefix + padding + "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in digits)


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
        try:
            parsed = urllib.parse.urlparse(self.base_url.rstrip("/"))
            parsed.hostname  # noqa: B018 - parsed lazily: a broken IPv6 address raises here
        except ValueError as error:
            raise FilmError(f"--base-url {self.base_url!r} is not a URL ({error}), e.g. http://localhost:8000/v1") \
                from None
        if self.api_key is not None:
            if len(self.api_key) < MIN_KEY_LENGTH:
                raise FilmError(f"the API key is {len(self.api_key)} characters long; a key shorter than "
                                f"{MIN_KEY_LENGTH} cannot be told apart from ordinary text to keep it secret. Give "
                                f"the real key, or no --api-key-env for an endpoint that needs none")
            if self.api_key == self.model or self.api_key in self.base_url:
                raise FilmError("the API key is also the model's name or part of the base URL, which are printed "
                                "and written; it cannot be both public and kept secret. Give the real key")
        self.redact = Redactor(self.api_key)
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
        self._lock = threading.Lock()  # concurrent streams share the request count

    def clip(self, text: str, limit: int) -> str:
        """At most `limit` characters of what a server sent, the key taken out first."""
        return self.redact(text)[:limit]

    def failed(self, message: str) -> RunFailed:
        return RunFailed(self.redact(message))

    def stream(self, prompt: str, max_tokens: int) -> Run:
        """One streamed chat completion, timed; a stream cut short is asked again without streaming,
        so that the server's own error message is reported."""
        try:
            return self._with_retries(lambda: self._request(prompt, max_tokens, stream=True))
        except Truncated:
            pass
        try:
            self._with_retries(lambda: self._request(prompt, 1, stream=False))
        except RunFailed as failure:
            raise self.failed(f"the stream ended without [DONE]; the same prompt without streaming: {failure}") \
                from None
        raise self.failed("the stream ended without [DONE] (truncated)")

    def prompt_tokens(self, prompt: str) -> int | None:
        """The server's count of a prompt: a non-streamed request's usage (None: it reports none)."""
        return self._with_retries(lambda: self._request(prompt, 1, stream=False))

    def _with_retries(self, request):
        for attempt in range(MAX_429_RETRIES + 1):
            try:
                return request()
            except RateLimited as limited:
                if attempt == MAX_429_RETRIES or limited.wait > MAX_RETRY_AFTER:
                    raise RunFailed(f"rate limited (HTTP 429) {attempt + 1} times"
                                    + (f"; Retry-After {limited.wait:g} s is longer than {MAX_RETRY_AFTER:g} s"
                                       if limited.wait > MAX_RETRY_AFTER else "")) from None
                log.info("rate limited; retrying after %.1f s", limited.wait)
                time.sleep(limited.wait)
        raise AssertionError("unreachable")

    def _request(self, prompt: str, max_tokens: int, stream: bool):
        with self._lock:
            if self.requests_made >= self.max_requests:
                raise FilmError(f"stopped after {self.max_requests} requests (--max-requests); nothing was written")
            self.requests_made += 1
        request = {"model": self.model, "stream": stream, "max_tokens": max_tokens, "temperature": 0,
                   "messages": [{"role": "user", "content": prompt}]}
        if stream:
            request["stream_options"] = {"include_usage": True}
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream" if stream else "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        started = time.perf_counter()
        # --timeout bounds the whole request, not each read: a server that trickles (a byte every so often, in
        # its headers, its body or its stream) would reset a per-read timeout forever.
        deadline = started + self.timeout
        connection = (BoundedHTTPS if self.scheme == "https" else BoundedHTTP)(self.host, self.port,
                                                                               timeout=self.timeout)
        connection.deadline = deadline
        answered = False
        try:
            connection.request("POST", self.path, body=json.dumps(request).encode(), headers=headers)
            response = connection.getresponse()
            answered = True
            if response.status == 429:
                raise RateLimited(retry_after(response.getheader("Retry-After")))
            if response.status != 200:
                detail = server_message(response.read(4000), self.redact)
                raise self.failed(f"HTTP {response.status} {response.reason}" + (f": {detail}" if detail else ""))
            if not stream:
                return self._read_answer(response)
            return self._read_stream(response, started)
        except (ConnectionRefusedError, socket.gaierror) as error:
            raise self.failed(f"cannot connect to {self.host}:{self.port or ''} ({error.strerror or error})") from None
        except (socket.timeout, TimeoutError):
            raise self.failed(f"the answer took longer than {self.timeout:g} s (--timeout)" if answered
                              else f"no answer within {self.timeout:g} s (--timeout)") from None
        except (http.client.HTTPException, OSError) as error:
            raise self.failed(f"the connection failed: {type(error).__name__}") from error
        finally:
            connection.close()

    def _read_answer(self, response) -> int | None:
        body = response.read(MAX_LINE_BYTES + 1)
        encoding = response.getheader("Content-Encoding")
        if encoding and encoding.lower() != "identity":
            raise self.failed(f"malformed answer: its body is {self.clip(encoding, 20)}-encoded, though film "
                              f"measure asks for none (no Accept-Encoding)")
        try:
            answer = json.loads(body)
        except (ValueError, RecursionError):  # not JSON, not UTF-8 (a gzip body), or nested past reason
            raise self.failed(f"malformed answer: not JSON ({self.clip(repr(body), 48)})") from None
        if not isinstance(answer, dict):
            raise self.failed("malformed answer: not a JSON object")
        if "error" in answer:
            raise self.failed(f"the endpoint reported an error: {server_message(json.dumps(answer), self.redact)}")
        self.note_model(answer)
        return self.token_count(answer.get("usage"), "prompt_tokens")

    def note_model(self, event: dict) -> None:
        if isinstance(event.get("model"), str):
            self.reported_model = clean_text(self.clip(event["model"], 200))

    def _read_stream(self, response, started: float) -> Run:
        first = first_content = None
        chunk_times: list[float] = []
        reasoning_chunks = 0
        usage = None
        done = False
        event_name = None
        while True:
            raw = response.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            if len(raw) > MAX_LINE_BYTES:
                raise self.failed(f"malformed stream: a line longer than {MAX_LINE_BYTES // 2**20} MiB")
            line = raw.decode(errors="replace").strip()
            if not line:
                event_name = None  # an empty line ends an SSE event
                continue
            if line.startswith(":"):
                continue
            if line.startswith("event:"):
                event_name = line[6:].strip()
                continue
            if line.startswith("error:"):  # llama.cpp's server: `error: {json}` when a request fails mid-stream
                raise self.failed(f"the endpoint reported an error mid-stream: {server_message(line[6:], self.redact)}")
            if not line.startswith("data:"):
                raise self.failed(f"malformed stream: a line that is not an SSE data line "
                                  f"({self.clip(repr(line), 48)})")
            data = line[5:].strip()
            if event_name == "error":
                raise self.failed(f"the endpoint reported an error mid-stream: {server_message(data, self.redact)}")
            if data == "[DONE]":
                done = True
                break
            try:
                event = json.loads(data)
            except json.JSONDecodeError:
                raise self.failed(f"malformed stream: a chunk that is not JSON ({self.clip(repr(data), 48)})") from None
            if not isinstance(event, dict):
                raise self.failed(f"malformed stream: a chunk that is not a JSON object ({self.clip(repr(data), 48)})")
            if "error" in event:
                raise self.failed(f"the endpoint reported an error mid-stream: {server_message(data, self.redact)}")
            self.note_model(event)
            if event.get("usage"):
                usage = event["usage"]
            for choice in event.get("choices") or []:
                delta = (choice.get("delta") or {}) if isinstance(choice, dict) else {}
                content = delta.get("content")
                reasoning = next((delta[key] for key in REASONING_KEYS if delta.get(key)), None)
                if not content and not reasoning:
                    continue
                now = time.perf_counter()
                first = first or now
                if content:
                    first_content = first_content or now
                else:
                    reasoning_chunks += 1
                chunk_times.append(now)
        end = time.perf_counter()
        if not done:
            raise Truncated()
        if first is None:
            raise self.failed("the stream carried no tokens")
        gaps = [later - earlier for earlier, later in zip(chunk_times, chunk_times[1:])]
        ttfc = first_content - started if first_content else None
        completion = self.token_count(usage, "completion_tokens") if usage else None
        if completion:
            details = usage.get("completion_tokens_details") or {}
            reasoning = self.token_count(details, "reasoning_tokens") if isinstance(details, dict) else None
            return Run(first - started, ttfc, end - started, completion,
                       reasoning if reasoning is not None else reasoning_chunks,
                       self.token_count(usage, "prompt_tokens"), gaps, True, started)
        return Run(first - started, ttfc, end - started, len(chunk_times), reasoning_chunks, None, gaps, False,
                   started)

    def token_count(self, usage, name: str) -> int | None:
        """A usage figure, believed only if it is a whole number of tokens within reason."""
        if not isinstance(usage, dict) or usage.get(name) is None:
            return None
        value = usage[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
            raise self.failed(f"the endpoint's usage says {name} is {self.clip(str(value), 40)}, which is not a token "
                              f"count (0 to {MAX_TOKEN_COUNT:,})")
        return value


class DeadlineSocket:
    """A connected socket whose every read and write may take only what is left of its request's time: the
    deadline holds however the server spreads its bytes (http.client reads through `makefile`, so that is
    built on this object too)."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock, self._deadline = sock, deadline

    def _arm(self) -> None:
        remaining = self._deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError("the request's time is up")
        self._sock.settimeout(remaining)

    def recv_into(self, buffer, nbytes: int = 0, flags: int = 0) -> int:
        self._arm()
        return self._sock.recv_into(buffer, nbytes, flags)

    def recv(self, size: int, flags: int = 0) -> bytes:
        self._arm()
        return self._sock.recv(size, flags)

    def sendall(self, data, flags: int = 0) -> None:
        self._arm()
        self._sock.sendall(data, flags)

    def makefile(self, mode: str = "rb", buffering: int | None = None, **_) -> io.BufferedReader:
        # As socket.makefile does: the file holds a reference, so closing the connection while its response
        # is still being read (HTTP/1.0) leaves the descriptor open until the file is closed too.
        self._sock._io_refs += 1
        return io.BufferedReader(socket.SocketIO(self, "rb"), buffering or io.DEFAULT_BUFFER_SIZE)

    def _decref_socketios(self) -> None:
        self._sock._decref_socketios()

    def __getattr__(self, name: str):
        return getattr(self._sock, name)


class Bounded:
    """An HTTP(S) connection whose socket keeps to `deadline` (time.perf_counter's clock)."""

    deadline = math.inf

    def connect(self) -> None:
        super().connect()
        if time.perf_counter() >= self.deadline:
            raise TimeoutError("the request's time is up")
        self.sock = DeadlineSocket(self.sock, self.deadline)


class BoundedHTTP(Bounded, http.client.HTTPConnection):
    pass


class BoundedHTTPS(Bounded, http.client.HTTPSConnection):
    pass


class RateLimited(Exception):
    def __init__(self, wait: float):
        self.wait = wait


class Truncated(Exception):
    """The stream closed before [DONE] without saying why."""


def retry_after(header: str | None) -> float:
    """Retry-After as seconds from now: a number of seconds, or an HTTP date (RFC 9110); 1 s if it says neither."""
    if header is None:
        return 1.0
    try:
        seconds = float(header)
        return max(0.0, seconds) if math.isfinite(seconds) else 1.0
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):
        return 1.0
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


class Prompts:
    """Prompts of a given number of filler words, each opening with a sentence of its own.

    No two openings of a run share their first two words, so two requests share no cacheable
    prefix beyond the chat template's few tokens and one word (cold prompts)."""

    def __init__(self, seed: int | None = None):
        self.random = random.Random(seed)
        pairs = [(a, b) for a in OPENING_WORDS for b in OPENING_WORDS if a != b]
        self.random.shuffle(pairs)
        self.pairs = iter(pairs)

    def opening(self) -> str:
        try:
            first = next(self.pairs)
        except StopIteration:
            raise FilmError(f"more than {len(OPENING_WORDS) * (len(OPENING_WORDS) - 1):,} prompts in one run; "
                            f"lower --runs or --concurrency") from None
        rest = self.random.sample(OPENING_WORDS, OPENING_LENGTH - 2)
        return " ".join((*first, *rest)).capitalize() + "."

    def make(self, chars: int, opening: str | None = None) -> str:
        return f"{opening or self.opening()} {filler(chars)}"


def filler(chars: int) -> str:
    """`chars` characters of the filler sentence, repeated: a prompt's size moves a character at a time,
    finer than a token even for a tokenizer that spends several tokens a word."""
    sentence = " ".join(FILLER) + " "
    text = sentence * (chars // len(sentence) + 1)
    return text[:max(1, chars)].rstrip() or text[0]


def filler_chars(words: int) -> int:
    """The characters of `words` whole filler words."""
    return len(" ".join(FILLER[index % len(FILLER)] for index in range(max(1, words))))


@dataclass
class Calibrated:
    chars: int                  # filler characters that make the requested size
    tokens: int | None          # the server's count of the last calibration prompt (None: it reports none)


def calibrate(endpoint: Endpoint, prompts: Prompts, tokens: int) -> Calibrated:
    """The filler that makes a prompt the endpoint counts as `tokens` tokens, within 1% (or one token).

    Each round's prompt opens differently (so calibration warms no cache for the timed runs). The first
    is short, since a tokenizer may spend many tokens a word; then the filler grows or shrinks in
    proportion (at most fourfold a round) until one count is below and one above, and the search
    narrows between them, a character at a time at the finest."""
    tolerance = max(1, 0.01 * tokens)
    chars = min(tokens, FIRST_PROBE_TOKENS) * CHARS_PER_TOKEN
    below = above = None  # the longest filler counted short, the shortest counted long: (chars, tokens)
    counted = None
    for _ in range(CALIBRATION_ROUNDS):
        counted = endpoint.prompt_tokens(prompts.make(chars))
        if counted is None:  # no usage anywhere: one token a word, and the dataset says it is an estimate
            return Calibrated(filler_chars(max(1, tokens - OPENING_LENGTH)), None)
        if counted == 0:
            raise FilmError(f"the endpoint counted a {chars:,}-character prompt as 0 tokens, so no prompt can be "
                            f"calibrated against it; nothing was written")
        if abs(counted - tokens) <= tolerance:
            return Calibrated(chars, counted)
        if counted > tokens and chars == 1:
            raise FilmError(f"{tokens:,}-token prompt: the shortest prompt this endpoint counts is {counted:,} tokens "
                            f"(its chat template and the opening words that keep each prompt cold); ask for at "
                            f"least {math.ceil(counted * 1.01):,}. Nothing was written")
        if counted < tokens and (below is None or chars > below[0]):
            below = (chars, counted)
        if counted > tokens and (above is None or chars < above[0]):
            above = (chars, counted)
        if below and above:
            if above[0] - below[0] <= 1:
                break  # one character apart and still no count within tolerance
            guess = below[0] + (tokens - below[1]) * (above[0] - below[0]) / (above[1] - below[1])
            chars = min(max(round(guess), below[0] + 1), above[0] - 1)
        else:
            # At most four times longer or shorter a round: a wild count cannot make the prompt explode;
            # at least a character: a short filler's proportion can round back to itself.
            scaled = max(1, min(round(chars * tokens / counted), 4 * chars, MAX_PROMPT_CHARS), chars // 4)
            chars = scaled if scaled != chars else max(1, chars + (1 if counted < tokens else -1))
    raise FilmError(f"could not build a prompt of {tokens:,} tokens within 1% in {CALIBRATION_ROUNDS} tries "
                    f"(last: {counted:,}); nothing was written")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))
    return ordered[index]


def spread(values: list[float], digits: int) -> list[float]:
    return [round(min(values), digits), round(max(values), digits)]


@dataclass
class Level:
    """One concurrency level of one prompt length: `rounds` rounds of `streams` streams at once."""

    streams: int
    rounds: list[list[Run]]      # each round's good runs

    @property
    def runs(self) -> list[Run]:
        return [run for runs in self.rounds for run in runs]

    @property
    def aggregate_tokens_per_second(self) -> float:
        """Every round's output tokens over its wall time (first request sent to last stream done), median."""
        rates = [sum(run.output_tokens for run in runs) / (max(run.ended for run in runs)
                                                            - min(run.started for run in runs))
                 for runs in self.rounds]
        return statistics.median(rates)

    def summary(self) -> dict:
        ttfts = [run.ttft for run in self.runs]
        rates = [1 / run.tpot for run in self.runs if run.tpot]
        return {
            "streams": self.streams,
            "aggregate_tokens_per_second": round(self.aggregate_tokens_per_second, 2),
            "decode_tokens_per_second": round(statistics.median(rates), 2) if rates else None,
            "decode_spread_tokens_per_second": spread(rates, 2) if rates else None,
            "ttft_seconds": round(statistics.median(ttfts), 4),
            "ttft_spread_seconds": spread(ttfts, 4),
            "rounds": len(self.rounds),
        }


def summarise(tokens: int, counts: list[int], levels: list[Level]) -> dict:
    """A prompt length's entry: the single-stream figures, then every concurrency level's."""
    runs = levels[0].runs
    ttfts = [run.ttft for run in runs]
    rates = [1 / run.tpot for run in runs if run.tpot]
    gaps = [gap for run in runs for gap in run.gaps]
    content = [run.ttfc for run in runs if run.ttfc is not None]
    entry = {
        "prompt_tokens": int(statistics.median(counts)) if counts else tokens,
        "ttft_seconds": round(statistics.median(ttfts), 4),
        "ttft_approximate": False,
        "ttft_spread_seconds": spread(ttfts, 4),
        "decode_tokens_per_second": round(statistics.median(rates), 2) if rates else None,
        "decode_spread_tokens_per_second": spread(rates, 2) if rates else None,
        "inter_token_latency_seconds": {f"p{p}": round(percentile(gaps, p / 100), 5) for p in (50, 90, 99)}
        if gaps else None,
        "output_tokens": int(statistics.median(run.output_tokens for run in runs)),
        "runs": len(runs),
        "token_counts": "usage" if all(run.usage_reported for run in runs) else "approximate (chunks counted)",
    }
    if counts and min(counts) != max(counts):
        entry["prompt_tokens_spread"] = [min(counts), max(counts)]
    if any(run.reasoning_tokens for run in runs):
        entry["reasoning_tokens"] = int(statistics.median(run.reasoning_tokens for run in runs))
        entry["ttfc_seconds"] = round(statistics.median(content), 4) if content else None
    if len(levels) > 1:
        entry["concurrency"] = [level.summary() for level in levels]
    return entry


@dataclass
class Measurement:
    """What `measure` found: an entry per prompt length, and how it was measured."""

    prompts: list[dict]
    prompt_cache: str          # "cold" or "cached"
    counted_by: str            # a key of COUNTED_BY


def measure(endpoint: Endpoint, prompt_tokens: list[int], max_tokens: int, runs: int, say=print,
            concurrency: tuple[int, ...] = (1,), warm_prefix: bool = False, seed: int | None = None) -> Measurement:
    """Every prompt length at every concurrency level, `runs` rounds each; failed runs reported and left out."""
    if concurrency[0] != 1:
        raise FilmError(f"--concurrency {','.join(map(str, concurrency))}: start with 1, the single-stream "
                        f"figures the measured beats use")
    prompts = Prompts(seed)
    results, how = [], set()
    needed = max(1, math.ceil(runs / 2))
    for tokens in prompt_tokens:
        try:
            calibrated = calibrate(endpoint, prompts, tokens)
            # --warm-prefix: one prompt for every run of this length, counted (and so cached) first.
            shared = prompts.make(calibrated.chars) if warm_prefix else None
            if shared is not None:
                endpoint.prompt_tokens(shared)
        except RunFailed as failure:
            raise FilmError(f"{tokens:,}-token prompt: {failure}; nothing was written") from None
        levels, counts = [], []
        for streams in concurrency:
            level = Level(streams, [])
            failed = []
            for number in range(1, runs + 1):
                texts = [shared or prompts.make(calibrated.chars) for _ in range(streams)]
                done = run_round(endpoint, texts, max_tokens)
                good = [run for run in done if isinstance(run, Run)]
                failed += [str(failure) for failure in done if not isinstance(failure, Run)]
                if streams == 1:  # the prompt's size is the single-stream runs'; the others are built alike
                    counts += [count_of(endpoint, text, run, calibrated, how)
                               for text, run in zip(texts, done) if isinstance(run, Run)]
                if good:
                    level.rounds.append(good)
                say(round_line(tokens, streams, number, runs, done))
            if len(level.rounds) < needed:
                raise FilmError(f"{tokens:,}-token prompt{f', {streams} streams at once' if streams > 1 else ''}: "
                                f"only {len(level.rounds)} of {runs} runs succeeded (need {needed}); failures: "
                                f"{'; '.join(sorted(set(failed)))}. Nothing was written")
            levels.append(level)
        results.append(summarise(tokens, counts, levels))
    counted_by = "estimate" if "estimate" in how else "request" if "request" in how else "stream"
    return Measurement(results, "cached" if warm_prefix else "cold", counted_by)


def run_round(endpoint: Endpoint, texts: list[str], max_tokens: int) -> list[Run | RunFailed]:
    """The streams of one round, all sent at once; each a Run or the failure that stopped it."""
    def one(text: str) -> Run | RunFailed:
        try:
            return endpoint.stream(text, max_tokens)
        except RunFailed as failure:
            return failure

    if len(texts) == 1:
        return [one(texts[0])]
    with ThreadPoolExecutor(len(texts)) as pool:
        return list(pool.map(one, texts))


def count_of(endpoint: Endpoint, text: str, run: Run, calibrated: Calibrated, how: set[str]) -> int:
    """A run's prompt size from the server: its stream's usage, else a non-streamed request (sent after
    the timed one, so it cannot warm the cache for it), else the calibration's estimate."""
    if run.prompt_tokens is not None:
        how.add("stream")
        return run.prompt_tokens
    if calibrated.tokens is None:
        how.add("estimate")
        return len(text.split())
    counted = endpoint.prompt_tokens(text)
    how.add("request" if counted is not None else "estimate")
    run.prompt_tokens = counted if counted is not None else len(text.split())
    return run.prompt_tokens


def round_line(tokens: int, streams: int, number: int, runs: int, done: list[Run | RunFailed]) -> str:
    where = f"  {tokens:>7,} tokens  " + (f"x{streams:<3} " if streams > 1 else "") + f"run {number}/{runs}: "
    good = [run for run in done if isinstance(run, Run)]
    failures = [str(failure) for failure in done if not isinstance(failure, Run)]
    if not good:
        return where + f"failed: {failures[0]}"
    ttft = statistics.median(run.ttft for run in good)
    rates = [1 / run.tpot for run in good if run.tpot]
    rate = f"{statistics.median(rates):7.1f} tok/s" if rates else "   (one token)"
    line = where + f"TTFT {ttft * 1000:7.1f} ms  {rate}  {good[0].output_tokens} tokens"
    if streams > 1:
        line += f"  ({len(good)}/{streams} streams" + (f"; failed: {failures[0]})" if failures else ")")
    return line


def planned_requests(lengths: int, runs: int, concurrency: tuple[int, ...]) -> int:
    """Timed requests a run will make (calibration and counting come on top)."""
    return lengths * runs * sum(concurrency)


def redacted(endpoint: Endpoint, value):
    """Every string in a nested structure with the API key taken out."""
    if isinstance(value, str):
        return endpoint.redact(value)
    if isinstance(value, dict):
        return {key: redacted(endpoint, item) for key, item in value.items()}
    if isinstance(value, list):
        return [redacted(endpoint, item) for item in value]
    return value


# Fields film measure itself decides (a dataset id, catalog ids, the host it was given): never redacted,
# so a key can never damage them. Everything else is text that came from the server or the user.
OWN_FIELDS = ("id", "precision", "model", "compared_gpu", "endpoint_host", "tool_version", "definitions")


def dataset(name: str, endpoint: Endpoint, measurement: Measurement, label: str | None, provider: str | None,
            precision: str, model: str, compared_gpu: str, runs: int) -> dict:
    host = endpoint.host + (f":{endpoint.port}" if endpoint.port else "")
    label, provider = (clean_text(text, 200) if text else None for text in (label, provider))
    prompts = "cold prompts (each opens with words no other request shares)" if measurement.prompt_cache == "cold" \
        else "cached prompts (--warm-prefix: each length's prompt sent once first)"
    reported = endpoint.reported_model or clean_text(endpoint.model, 200)
    data = {
        "id": name,
        "route": f"direct to {host}" + (f" ({endpoint.redact(label)})" if label else ""),
        "provider": provider or label or host,
        "precision": precision,
        "model": model,
        "compared_gpu": compared_gpu,
        "compared_gpu_is_assumption": True,
        "measured_on": datetime.date.today().isoformat(),
        "label": label or host,
        "source": f"film measure {__version__}: {runs} streamed runs per prompt against {host}, "
                  f"model {reported!r}, {prompts}",
        "endpoint_host": host,
        "model_reported": reported,
        "runs": runs,
        "tool_version": __version__,
        "prompt_cache": measurement.prompt_cache,
        "prompt_tokens_counted_by": COUNTED_BY[measurement.counted_by],
        "prompt_tokens_estimated": measurement.counted_by == "estimate",
        "definitions": DEFINITIONS,
        "prompts": measurement.prompts,
    }
    return {key: value if key in OWN_FIELDS or key == "route" else redacted(endpoint, value)
            for key, value in data.items()}


def check_readable(data: dict) -> None:
    """What `measure` found, against the bounds the film reads a dataset with (render/specs/catalog.py): a
    server that sends every token at once, or answers before it was asked, gives figures no GPU makes."""
    for prompt in data["prompts"]:
        where = f"{prompt['prompt_tokens']:,}-token prompt"
        for entry, what in [(prompt, where), *((level, f"{where}, {level['streams']} streams at once")
                                               for level in prompt.get("concurrency") or [])]:
            for key, bounds in (CONCURRENCY_BOUNDS if entry is not prompt else MEASURED_BOUNDS).items():
                problem = out_of_range(entry.get(key), bounds)
                if problem:
                    raise FilmError(f"{what}: the endpoint's {key.replace('_', ' ')} came out at {entry[key]:,}, "
                                    f"outside what the film reads as a measurement ({problem}); did the server "
                                    f"send every token at once, or time something else? Nothing was written")


def dataset_text(data: dict) -> str:
    header = "# Measured with `film measure`; see README (Measuring your own endpoint).\n"
    return header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def checked_dataset(path: Path, data: dict) -> MeasuredDataset:
    """The dataset as the film would load it from `path`, loaded from a copy beside it (nothing is written there)."""
    check_readable(data)
    with tempfile.TemporaryDirectory(prefix=".measure-check-", dir=Path(path).parent) as folder:
        check = Path(folder) / Path(path).name
        check.write_text(dataset_text(data), encoding="utf-8")
        try:
            return load_measured(check)
        except FilmError as error:
            raise FilmError(f"the dataset for {path} would not load in the film ({str(error).split(': ', 1)[-1]}); "
                            f"nothing was written") from None


def write_dataset(path: Path, data: dict) -> None:
    """Written atomically, and only once the very file has loaded as the film loads a dataset."""
    checked_dataset(path, data)
    write_atomic(path, dataset_text(data))


def use_hint(path: Path) -> str:
    """The command that films a dataset just written (quoted), or how to make it one."""
    name = path.stem
    if Path(path).resolve().parent == (DATA_DIR / "measured").resolve():
        return f"use it with make film MEASURED={shlex.quote(name)}"
    return (f"to film it, move it into {display_path(DATA_DIR / 'measured')}/: mv {shlex.quote(str(path))} "
            f"{shlex.quote(display_path(DATA_DIR / 'measured'))}/ && make film MEASURED={shlex.quote(name)}")


def api_key_from(variable: str | None) -> str | None:
    if not variable:
        return None
    key = os.environ.get(variable)
    if not key:
        raise FilmError(f"--api-key-env {variable}: that environment variable is empty or not set")
    return key
