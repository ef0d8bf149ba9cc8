"""An OpenAI-compatible endpoint, timed: one streamed chat completion per call, under a deadline, retried after a
429, with the API key kept out of every message (`film measure`; definitions in render/measure/__init__.py)."""

from __future__ import annotations

import datetime
import email.utils
import html.entities
import http.client
import io
import json
import logging
import math
import os
import re
import socket
import sys
import threading
import time
import unicodedata
import urllib.parse
from dataclasses import dataclass, field

from render.errors import FilmError
from render.text import clean_text, echo

log = logging.getLogger("film")

MAX_RETRY_AFTER = 30.0   # seconds we are willing to wait on a 429
MAX_429_RETRIES = 3
MAX_LINE_BYTES = 1 << 20      # one SSE line; a chunk of a chat stream is a few hundred bytes
MAX_TOKEN_COUNT = 10_000_000  # what a usage figure may say before it is not believed
REDACTED = "***"
REASONING_KEYS = ("reasoning_content", "reasoning")


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
    cached_tokens: int | None = None  # of the prompt, served from the server's cache (usage's prompt_tokens_details)

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

    def words(found: str) -> str:  # the secret out first (its characters may be split by what cleaning takes out)
        return clean_text(redact(found))[:300]

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
    """Replaces a secret wherever its characters stand in text that leaves the program: glued to letters
    (`keysk-…XYZend`) or split by spaces, line breaks or characters a reader does not see. What is compared is the
    text as a reader would see it (`readable`): escapes decoded (HTML entities in every spelling, JSON's \\u0073,
    \\x73, URL's %73, a JSON-escaped slash, each twice over), every default-ignorable code point dropped (zero-width
    spaces and joiners, soft hyphens, variation selectors, tags) and whitespace dropped; what is replaced is every
    character the secret was written with. (A key is at least MIN_KEY_LENGTH characters, so the match is on its
    characters alone, not on word boundaries.)"""

    def __init__(self, secret: str | None):
        self.secret = "".join(char for char in secret if not invisible(char) and not char.isspace()) if secret \
            else secret

    def __call__(self, text: str) -> str:
        if not self.secret or not text:
            return text
        seen, spans = readable(text)
        kept = [index for index, char in enumerate(seen) if not char.isspace()]
        seen, spans = "".join(seen[index] for index in kept), [spans[index] for index in kept]
        cuts: list[tuple[int, int]] = []
        start = seen.find(self.secret)
        while start >= 0:
            end = start + len(self.secret)
            cuts.append((spans[start][0], spans[end - 1][1]))
            start = seen.find(self.secret, start + 1)
        if not cuts:
            return text
        pieces, cursor = [], 0
        for begin, finish in cuts:
            if begin >= cursor:
                pieces += [text[cursor:begin], REDACTED]
            cursor = max(cursor, finish)
        return "".join(pieces) + text[cursor:]


# An escape a server may write a character with: &#115; &#0115; &#x73; &#X73; &sol; &amp; \u0073 \x73 %73 \/
ESCAPED = re.compile(r"&#[xX](?P<hex>[0-9a-fA-F]{1,8});?|&#(?P<decimal>[0-9]{1,10});?"
                     r"|&(?P<name>[A-Za-z][A-Za-z0-9]{1,31};?)|\\u(?P<u>[0-9a-fA-F]{4})|\\x(?P<x>[0-9a-fA-F]{2})|%(?P<percent>[0-9a-fA-F]{2})|\\(?P<slash>/)")
# What a terminal or a page shows as nothing (or as a mere break): Unicode's default-ignorable code points (zero-width
# spaces and joiners, soft hyphens, bidi controls, variation selectors, tags, the BOM, Hangul fillers), line and
# paragraph breaks, and the other controls. (DerivedCoreProperties.txt, Default_Ignorable_Code_Point.)
DEFAULT_IGNORABLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
                               "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
                               "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff\u2028\u2029]")


def invisible(char: str) -> bool:
    return DEFAULT_IGNORABLE.match(char) is not None or unicodedata.category(char) in ("Cf", "Cc")


def readable(text: str, passes: int = 2) -> tuple[str, list[tuple[int, int]]]:
    """`text` as it reads once its escapes are decoded (`passes` times over: &amp;#115; is &#115; is s) and its
    invisible characters dropped, and for each character of that, the span of `text` it was written with."""
    seen, spans = text, [(index, index + 1) for index in range(len(text))]
    for _ in range(passes):
        decoded, mapped = [], []
        cursor = 0
        for found in ESCAPED.finditer(seen):
            for index in range(cursor, found.start()):
                decoded.append(seen[index])
                mapped.append(spans[index])
            span = (spans[found.start()][0], spans[found.end() - 1][1])
            value = escaped_value(found)
            if value is None:  # not an escape after all (&nbsp-like text that names nothing): kept as written
                value = found.group(0)
                decoded += list(value)
                mapped += spans[found.start():found.end()]
            else:
                decoded += list(value)
                mapped += [span] * len(value)
            cursor = found.end()
        for index in range(cursor, len(seen)):
            decoded.append(seen[index])
            mapped.append(spans[index])
        if decoded == list(seen):
            break
        seen, spans = "".join(decoded), mapped
    kept = [index for index, char in enumerate(seen) if not invisible(char)]
    return "".join(seen[index] for index in kept), [spans[index] for index in kept]


def escaped_value(found: re.Match) -> str | None:
    """The text an escape stands for, or None where it stands for nothing."""
    if found.group("name"):
        name = found.group("name")
        return html.entities.html5.get(name) or (html.entities.html5.get(name + ";") if not name.endswith(";")
                                                  else None)
    if found.group("slash"):
        return "/"
    digits = next(group for group in ("hex", "decimal", "u", "x", "percent") if found.group(group))
    code = int(found.group(digits), 10 if digits == "decimal" else 16)
    return chr(code) if 0 < code <= sys.maxunicode and not 0xD800 <= code <= 0xDFFF else None


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
            raise FilmError(f"--base-url {echo(self.base_url)} is not a URL ({error}), e.g. http://localhost:8000/v1") \
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
            raise FilmError(f"--base-url {echo(self.base_url)} is not an http(s) URL, e.g. http://localhost:8000/v1")
        try:
            port = parsed.port
        except ValueError:
            raise FilmError(f"--base-url {echo(self.base_url)}: the port must be a number from 1 to 65535") from None
        if port is not None and not 1 <= port <= 65535:
            raise FilmError(f"--base-url {echo(self.base_url)}: the port must be a number from 1 to 65535")
        if not 0 < self.timeout <= 3600:
            raise FilmError(f"--timeout {self.timeout:g}: give the seconds one request may take, above 0 and at "
                            f"most 3600")
        self.scheme, self.host, self.port = parsed.scheme, parsed.hostname, port
        self.path = (parsed.path or "") + "/chat/completions"
        self._lock = threading.Lock()  # concurrent streams share the request count

    def clip(self, text: str, limit: int) -> str:
        """At most `limit` characters of what a server sent, as one line of plain text, the key taken out first."""
        return clean_text(self.redact(text))[:limit]

    def failed(self, message: str) -> RunFailed:
        """A failure's message: the key taken out, then one line of plain text (no escape sequence a server sent
        reaches the terminal)."""
        return RunFailed(clean_text(self.redact(message)))

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
            prompt_details = usage.get("prompt_tokens_details")
            cached = self.token_count(prompt_details, "cached_tokens") if isinstance(prompt_details, dict) else None
            return Run(first - started, ttfc, end - started, completion,
                       reasoning if reasoning is not None else reasoning_chunks,
                       self.token_count(usage, "prompt_tokens"), gaps, True, started, cached)
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


def api_key_from(variable: str | None) -> str | None:
    if not variable:
        return None
    key = os.environ.get(variable)
    if not key:
        raise FilmError(f"--api-key-env {variable}: that environment variable is empty or not set")
    return key
