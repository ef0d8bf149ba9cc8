"""An OpenAI-compatible endpoint, timed: one streamed chat completion per call, under a deadline, retried after a
429, with the API key kept out of every message (`film measure`; definitions in render/measure/__init__.py)."""

from __future__ import annotations

import datetime
import email.utils
import http.client
import io
import json
import logging
import math
import os
import socket
import threading
import time
import unicodedata
import urllib.parse
from dataclasses import dataclass, field

from render.errors import FilmError
from render.measure.redact import MIN_KEY_LENGTH, Redactor, server_message
from render.text import clean_text, echo

log = logging.getLogger("film")

MAX_RETRY_AFTER = 30.0   # seconds we are willing to wait on a 429
MAX_429_RETRIES = 3
MAX_LINE_BYTES = 1 << 20      # one SSE line; a chunk of a chat stream is a few hundred bytes
MAX_TOKEN_COUNT = 10_000_000  # what a usage figure may say before it is not believed
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
            problem = key_problem(self.api_key)
            if problem:
                raise FilmError(f"the API key holds {problem}, which an HTTP header cannot carry; give the key alone")
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
            try:
                connection.request("POST", self.path, body=json.dumps(request).encode(), headers=headers)
            except ValueError as error:  # UnicodeError too: a header or request line http.client cannot write
                # (its message would quote the header, the key with it: neither it nor its chain is kept)
                raise self.failed(f"the request could not be written ({type(error).__name__}: a character the "
                                  f"URL or a header cannot carry)") from None
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
            raise self.failed(f"the connection failed: {type(error).__name__}") from None
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

    def _events(self, response):
        """The stream's JSON events, up to its [DONE] (a stream that ends before it is Truncated); an error the
        server reports, or a line that is not an SSE data line of a JSON object, is refused."""
        event_name = None
        while True:
            raw = response.readline(MAX_LINE_BYTES + 1)
            if not raw:
                raise Truncated()
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
                return
            try:
                event = json.loads(data)
            except (ValueError, RecursionError):  # not JSON, nested past reason, or a number past the digit limit
                raise self.failed(f"malformed stream: a chunk that is not JSON film measure can read "
                                  f"({self.clip(repr(data[:200]), 48)})") from None
            if not isinstance(event, dict):
                raise self.failed(f"malformed stream: a chunk that is not a JSON object ({self.clip(repr(data), 48)})")
            if "error" in event:
                raise self.failed(f"the endpoint reported an error mid-stream: {server_message(data, self.redact)}")
            yield event

    def _read_stream(self, response, started: float) -> Run:
        first = first_content = None
        chunk_times: list[float] = []
        reasoning_chunks = 0
        usage = None
        for event in self._events(response):
            self.note_model(event)
            found = event.get("usage")
            if found is not None and not isinstance(found, dict):
                raise self.failed(f"malformed stream: a chunk whose usage is {json_kind(found)}, not an object")
            if found:
                usage = found
            choices = event.get("choices")
            if choices is not None and not isinstance(choices, list):
                raise self.failed(f"malformed stream: a chunk whose choices is {json_kind(choices)}, not a list")
            for choice in choices or []:
                if not isinstance(choice, dict):
                    raise self.failed(f"malformed stream: a choice that is {json_kind(choice)}, not an object")
                delta = choice.get("delta")
                if delta is not None and not isinstance(delta, dict):
                    raise self.failed(f"malformed stream: a delta that is {json_kind(delta)}, not an object")
                delta = delta or {}
                for key in ("content", *REASONING_KEYS):
                    if delta.get(key) is not None and not isinstance(delta[key], str):
                        raise self.failed(f"malformed stream: a delta whose {key} is {json_kind(delta[key])}, not "
                                          f"a string")
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
        if first is None:
            raise self.failed("the stream carried no tokens")
        gaps = [later - earlier for earlier, later in zip(chunk_times, chunk_times[1:])]
        ttfc = first_content - started if first_content else None
        completion = self.token_count(usage, "completion_tokens") if usage else None
        if not completion:
            return Run(first - started, ttfc, end - started, len(chunk_times), reasoning_chunks, None, gaps, False,
                       started)
        details = usage.get("completion_tokens_details") or {}
        reasoning = self.token_count(details, "reasoning_tokens") if isinstance(details, dict) else None
        prompt_details = usage.get("prompt_tokens_details")
        cached = self.token_count(prompt_details, "cached_tokens") if isinstance(prompt_details, dict) else None
        prompt = self.token_count(usage, "prompt_tokens")
        if prompt == 0:
            raise self.failed("the endpoint's usage says prompt_tokens is 0 for a prompt it was sent; its token "
                              "counts cannot be believed")
        if cached is not None and prompt is not None and cached > prompt:
            raise self.failed(f"the endpoint's usage says cached_tokens is {cached:,}, more than the prompt's "
                              f"{prompt:,} tokens")
        return Run(first - started, ttfc, end - started, completion,
                   reasoning if reasoning is not None else reasoning_chunks, prompt, gaps, True, started, cached)

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
    problem = key_problem(key)
    if problem:
        raise FilmError(f"--api-key-env {variable}: the key holds {problem}, which an HTTP header cannot carry; set "
                        f"the variable to the key alone (a key file read with $(cat …) may bring its line end)")
    return key


def key_problem(key: str) -> str | None:
    """Why `key` cannot go in an HTTP header (RFC 6750's token: visible ASCII), said without quoting it."""
    for char in key:
        if not "!" <= char <= "~":
            if char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
                return f"a control character or space (U+{ord(char):04X}: a line end copied with it?)"
            return f"a character outside printable ASCII (U+{ord(char):04X})"
    return None


def json_kind(value) -> str:
    """What a JSON value is, in words (for a message that never quotes a hostile value)."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")
