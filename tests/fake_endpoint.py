"""A real HTTP server on the loopback interface that streams chat-completion chunks like an
OpenAI-compatible endpoint, with configured delays and failure modes (for `film measure`)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TEMPLATE_TOKENS = 7  # a chat template's own tokens, which prompt calibration has to absorb


class FakeEndpoint:
    def __init__(self, first_delay=0.2, token_delay=0.01, tokens=20, usage=True, mode="ok", rate_limited=0,
                 retry_after="0.1", answer_usage=True, reasoning=0, context=None, spell=None, chunks=None,
                 usage_extra=None):
        """usage: the stream carries usage; answer_usage: a non-streamed answer does; reasoning: how many
        reasoning deltas come before the content; context: the most prompt tokens it accepts; spell: how an echoing
        mode writes the key back (a function of the key); chunks: the data lines a stream sends instead of its tokens
        (a non-streamed answer stays as it is, so calibration works); usage_extra: merged into the stream's usage."""
        self.first_delay, self.token_delay, self.tokens = first_delay, token_delay, tokens
        self.usage, self.mode, self.rate_limited, self.retry_after = usage, mode, rate_limited, retry_after
        self.answer_usage, self.reasoning, self.context = answer_usage, reasoning, context
        self.spell = spell or (lambda key: key)
        self.chunks, self.usage_extra = chunks, usage_extra or {}
        self.seen: list[tuple[str, bool]] = []  # every request's prompt, in order, and whether it streamed
        self.authorizations: list[str | None] = []
        self.requests = 0
        self.in_flight = self.most_at_once = 0  # streamed answers being sent, and the most at one time
        self.counting = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"
            streaming = False  # (counted in flight: from its headers to its last line)

            def log_message(self, *args):
                pass

            def do_POST(self):
                endpoint.requests += 1
                endpoint.authorizations.append(self.headers.get("Authorization"))
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if endpoint.rate_limited > 0:
                    endpoint.rate_limited -= 1
                    self.send_response(429)
                    self.send_header("Retry-After", endpoint.retry_after)
                    self.end_headers()
                    return
                if endpoint.mode == "http500":
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b'{"error": "model overloaded"}')
                    return
                if endpoint.mode == "hang":
                    time.sleep(3)
                    return
                scheme, _, key = (self.headers.get("Authorization") or "").partition(" ")
                authorization = f"{scheme} {endpoint.spell(key)}" if key else scheme
                content = request["messages"][0]["content"]
                endpoint.seen.append((content, bool(request.get("stream"))))
                prompt_tokens = len(content.split()) + TEMPLATE_TOKENS
                if endpoint.context and prompt_tokens > endpoint.context:
                    self.send_response(400)
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": f"Requested tokens ({prompt_tokens}) exceed "
                                                          f"context window of {endpoint.context}"}}).encode())
                    return
                if endpoint.mode == "cut-short" and request.get("stream"):  # closes after an error it keeps
                    endpoint.cut = True                                    # to itself, like llama-cpp-python's
                    self.send_response(200)
                    self.end_headers()
                    self.send("data: " + json.dumps({"choices": [{"delta": {"role": "assistant"}}]}))
                    return
                if endpoint.mode == "cut-short" and getattr(endpoint, "cut", False):
                    self.send_response(400)
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "llama_decode returned -3", "type": "server_error"}}')
                    return
                if not request.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    answer = {"model": "served/model", "choices": [{"message": {"content": "tok0"}}]}
                    if endpoint.answer_usage:
                        answer["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": 1}
                    self.wfile.write(json.dumps(answer).encode())
                    return
                if endpoint.mode == "escape-400":  # a hostile server: terminal escape sequences in its error text
                    self.send_response(400)
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": "bad \x1b]0;TITLE\x07\x1b[2J\x1b[31mrequest\x07"
                                                          }}).encode())
                    return
                if endpoint.mode == "echo-401":  # a careless server: the credentials back in its error body
                    self.send_response(401)
                    self.end_headers()
                    self.wfile.write(f'{{"error": "invalid credentials: {authorization}"}}'.encode())
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                count = min(endpoint.tokens, request["max_tokens"])
                with endpoint.counting:
                    endpoint.in_flight += 1
                    endpoint.most_at_once = max(endpoint.most_at_once, endpoint.in_flight)
                self.streaming = True
                try:
                    self.stream_answer(request, count, prompt_tokens, authorization)
                finally:
                    self.stream_ended()

            def stream_ended(self) -> None:
                """A stream no longer counts as in flight: before its last line goes (a client that has read it may
                send its next request at once, before this thread runs again on a busy machine), or when it stops."""
                if self.streaming:
                    self.streaming = False
                    with endpoint.counting:
                        endpoint.in_flight -= 1

            def stream_answer(self, request, count, prompt_tokens, authorization):
                time.sleep(endpoint.first_delay)
                if endpoint.chunks is not None:
                    for chunk in endpoint.chunks:
                        self.send("data: " + chunk)
                    self.send("data: [DONE]")
                    return
                for index in range(endpoint.reasoning):
                    if index:
                        time.sleep(endpoint.token_delay)
                    self.send("data: " + json.dumps({"model": "served/model",
                                                     "choices": [{"delta": {"reasoning_content": "hmm "}}]}))
                if endpoint.mode == "error-event":
                    self.send('event: error\ndata: {"error": {"message": "KV cache full", "code": 503}}')
                    return
                if endpoint.mode == "llama-error":
                    self.send('error: {"code": 500, "message": "slot unavailable", "type": "server_error"}')
                    return
                if endpoint.mode == "burst":
                    # Every token in one chunk, and the stream's end, in one write: no GPU decodes this fast. (One
                    # chunk per token came out at the client's own parsing speed, near the bound, and within it on a
                    # loaded machine; so did the end written apart, when this thread waited for a core before it.)
                    text = "".join(f"t{i} " for i in range(count))
                    events = [json.dumps({"model": "served/model", "choices": [{"delta": {"content": text}}]}),
                              json.dumps({"choices": [], "usage": {"prompt_tokens": prompt_tokens,
                                                                   "completion_tokens": count}}), "[DONE]"]
                    self.send("\n\n".join(f"data: {event}" for event in events))
                    return
                for index in range(count):
                    if index or endpoint.reasoning:
                        time.sleep(endpoint.token_delay)
                    if endpoint.mode == "malformed" and index == 2:
                        self.send("data: {not json")
                        return
                    if endpoint.mode == "giant-line" and index == 1:
                        self.send("data: " + "x" * (2 << 20))
                        return
                    model = f"served/model for {authorization}" if endpoint.mode == "echo-model" else "served/model"
                    self.send("data: " + json.dumps({"model": model,
                                                     "choices": [{"delta": {"content": f"tok{index} "}}]}))
                if endpoint.mode == "no-done":
                    return
                if endpoint.mode == "negative-usage":
                    prompt_tokens, count = -prompt_tokens, -5
                if endpoint.usage:
                    self.send("data: " + json.dumps({"choices": [], "usage": {
                        "prompt_tokens": prompt_tokens, "completion_tokens": count + endpoint.reasoning,
                        **endpoint.usage_extra}}))
                self.send("data: [DONE]")

            def send(self, line: str):
                if line == "data: [DONE]":
                    self.stream_ended()
                self.wfile.write((line + "\n\n").encode())
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def prompts(self) -> list[str]:
        return [prompt for prompt, _ in self.seen]

    @property
    def streamed(self) -> list[bool]:
        return [streamed for _, streamed in self.seen]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
