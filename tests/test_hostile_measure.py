"""Hostile input, fifth pass (issue 66): what `film measure` and `film measure --load` meet from a key, a server's
stream and their own settings. Each case ends in one message naming what to change, never a traceback, never the
key, and never a written dataset that `film load --compare` would refuse. Run in-process through the command's own
entry point (render.cli.main), which is what a user's process runs: an exception it does not turn into a message
fails the test as a traceback would."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from render.errors import FilmError
from render.measure.client import Endpoint, RunFailed

from fake_endpoint import FakeEndpoint

SECRET = "sk-test-5ecret-value-0123456789XYZ"


def film(*args: str) -> tuple[int, str, str]:
    """`film ARGS` in this process: its exit code, standard output and standard error."""
    from render.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def measure(url: str, out, *args: str) -> tuple[int, str, str]:
    return film("measure", "--base-url", url, "--model", "m", "--prompt-tokens", "34,64", "--runs", "1",
                "--max-tokens", "8", "--label", "test rig", "--out", str(out), *args)


def measure_load(url: str, out, *args: str) -> tuple[int, str, str]:
    return film("measure", "--load", "--base-url", url, "--model", "m", "--prompt-tokens", "64", "--answer-tokens",
                "8", "--rate", "200", "--requests", "12", "--out", str(out), *args)


# 1. A key with a line end (a key file with Windows line ends read with $(cat …)), or a Unicode line separator.
@pytest.mark.parametrize("end", ["\r", "\n", "\u2028", "\r\n\t", "\x7f"])
@pytest.mark.parametrize("load", [False, True])
def test_a_key_holding_a_control_character_is_named_by_its_variable_never_shown(tmp_path, monkeypatch, end, load):
    monkeypatch.setenv("RIG_KEY", SECRET + end)
    out = tmp_path / "rig.yaml"
    with FakeEndpoint(first_delay=0.0, token_delay=0.0) as server:
        code, printed, said = (measure_load if load else measure)(server.url, out, "--api-key-env", "RIG_KEY")
        assert server.requests == 0  # refused where it is read: nothing sent
    assert code == 1 and "--api-key-env RIG_KEY: the key holds a control character" in said, said
    assert f"U+{ord(end[0]):04X}" in said and "SE5" not in said.upper().replace("SECRET", "")
    assert SECRET not in printed + said and "5ecret" not in printed + said and not out.exists()


def test_no_header_the_client_cannot_write_reaches_a_traceback():
    """A key given to the library itself (no variable) is checked too; a path http.client cannot write (non-ASCII)
    is one failure, its chain cut so no header travels with it."""
    with pytest.raises(FilmError, match=r"the API key holds a control character or space \(U\+0000"):
        Endpoint("http://127.0.0.1:9/v1", "m", api_key=SECRET + "\x00")
    with pytest.raises(FilmError, match="outside printable ASCII"):
        Endpoint("http://127.0.0.1:9/v1", "m", api_key=SECRET.replace("X", "\u0425"))
    endpoint = Endpoint("http://127.0.0.1:9/v\u00e9", "m", api_key=SECRET, timeout=5)
    with pytest.raises(RunFailed, match="could not be written") as failure:
        endpoint.stream("hi", 4)
    assert failure.value.__cause__ is None and failure.value.__suppress_context__


# 6. Malformed stream chunks: each a failure naming what was malformed, under --load its reason kept.
MALFORMED = {
    "choices is a number": ('{"choices": 5}', "choices is a number, not a list"),
    "a choice is a string": ('{"choices": ["x"]}', "a choice that is a string"),
    "a string delta": ('{"choices": [{"delta": "hi"}]}', "a delta that is a string"),
    "a number as content": ('{"choices": [{"delta": {"content": 5}}]}', "content is a number, not a string"),
    "usage is a list": ('{"choices": [], "usage": [1]}', "usage is a list, not an object"),
    "nesting 100,000 deep": ("[" * 100_000 + "]" * 100_000, "not JSON film measure can read"),
    "a 5,000-digit number": ('{"n": ' + "9" * 5000 + "}", "not JSON film measure can read"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_chunk_is_one_message_naming_it(tmp_path, name):
    chunk, said_as = MALFORMED[name]
    with FakeEndpoint(first_delay=0.0, chunks=[chunk]) as server:
        with pytest.raises(RunFailed, match="malformed stream") as failure:
            Endpoint(server.url, "m", timeout=10).stream("hi there", 8)
        assert said_as in str(failure.value) and len(str(failure.value)) < 300
        code, _, said = measure(server.url, tmp_path / "rig.yaml")
    assert code == 1 and said_as in said and "Traceback" not in said, said


def test_under_load_every_failure_carries_its_reason(tmp_path):
    with FakeEndpoint(first_delay=0.0, chunks=['{"choices": [{"delta": "hi"}]}']) as server:
        code, _, said = measure_load(server.url, tmp_path / "load.yaml")
    assert code == 1 and "requests sent succeeded; failures: " in said and "a delta that is a string" in said, said
    assert "failures: ." not in said and not (tmp_path / "load.yaml").exists()


# 9. What --load writes, --compare reads: a usage --compare would refuse is refused at measurement with its reason.
@pytest.mark.parametrize("usage, reason", [({"prompt_tokens": 0}, "prompt_tokens is 0"),
                                           ({"prompt_tokens_details": {"cached_tokens": 10**6}},
                                            "cached_tokens is 1,000,000, more than the prompt's")])
def test_a_usage_compare_would_refuse_is_refused_when_measured(tmp_path, usage, reason):
    with FakeEndpoint(first_delay=0.0, token_delay=0.0, tokens=8, usage_extra=usage) as server:
        code, _, said = measure_load(server.url, tmp_path / "load.yaml")
    assert code == 1 and reason in said and not (tmp_path / "load.yaml").exists(), said


def test_what_measure_load_writes_compare_accepts(tmp_path):
    out = tmp_path / "build" / "load" / "mine.yaml"  # (a folder not made yet, as on a fresh checkout)
    with FakeEndpoint(first_delay=0.0, token_delay=0.0, tokens=8) as server:
        code, printed, said = measure_load(server.url, out)
    assert code == 0 and out.is_file(), said
    assert [path.name for path in out.parent.iterdir()] == ["mine.yaml"]  # (the read-back's copy gone)
    code, printed, said = film("load", "--compare", str(out), "--json")
    assert code == 0, said
    compared = json.loads(printed)
    assert compared["TTFT p50 (s)"]["measured"] > 0 and compared["TTFT p50 (s)"]["predicted"] > 0


# 10. --load at scale: the request cap said in its own terms before anything is sent; prompts built as they leave.
def test_too_many_requests_are_refused_in_load_terms_before_anything_is_sent(tmp_path):
    with FakeEndpoint(first_delay=0.0) as server:
        code, _, said = film("measure", "--load", "--base-url", server.url, "--model", "m", "--requests", "5000",
                             "--prompt-tokens", "64",
                             "--out", str(tmp_path / "load.yaml"))
        assert server.requests == 0
    assert code == 1 and "--requests 5,000: film measure --load sends at most 2,244 requests" in said, said
    assert "--runs" not in said and "--concurrency" not in said


def test_nothing_sent_is_said_so(tmp_path):
    with FakeEndpoint(first_delay=0.0) as server:
        code, _, said = film("measure", "--load", "--base-url", server.url, "--model", "m", "--prompt-tokens", "64",
                             "--rate", "0.001", "--requests", "3", "--max-seconds", "1", "--out",
                             str(tmp_path / "load.yaml"))
    assert code == 1 and "no request was sent: the first arrives at" in said and "--max-seconds" in said, said


def test_prompts_are_built_as_they_leave_not_all_first(tmp_path, monkeypatch):
    """Each request's prompt is written just before it is sent (a million-token prompt × 1,000 requests once
    held 5.8 GB before the first left): the n-th load prompt is built when n - 1 requests have been handed out."""
    from concurrent.futures import ThreadPoolExecutor

    from render.measure import load, prompts

    submitted: list[int] = []
    built_after: list[int] = []

    class Counting(ThreadPoolExecutor):
        def submit(self, *args, **kwargs):
            submitted.append(1)
            return super().submit(*args, **kwargs)

    make = prompts.Prompts.make
    monkeypatch.setattr(load, "ThreadPoolExecutor", Counting)
    monkeypatch.setattr(prompts.Prompts, "make",
                        lambda self, *a, **k: built_after.append(len(submitted)) or make(self, *a, **k))
    with FakeEndpoint(first_delay=0.0, token_delay=0.0, tokens=2) as server:
        code, _, said = measure_load(server.url, tmp_path / "load.yaml")
    assert code == 0, said
    assert built_after[-12:] == list(range(12)), built_after  # (calibration's come first, with none handed out)


# 12. Redaction after NFKC, combining marks dropped.
def test_the_key_is_redacted_in_forms_a_reader_still_reads():
    from render.measure.redact import Redactor

    redact = Redactor(SECRET)
    fullwidth = "".join(chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char for char in SECRET)

    def monospace(char: str) -> str:
        if char.isupper():
            return chr(0x1D670 + ord(char) - 65)
        if char.islower():
            return chr(0x1D68A + ord(char) - 97)
        return chr(0x1D7F6 + ord(char) - 48) if char.isdigit() else char

    underlined = "".join(char + "\u0332" for char in SECRET)
    assert redact(f"bad key {fullwidth}!") == "bad key ***!"
    assert redact(f"key: {''.join(map(monospace, SECRET))}.") == "key: ***."
    assert redact(f"x {underlined} y") == "x *** y"
    assert redact("na\u00efve caf\u00e9 \ufb01ne, \uff11\uff12") == "na\u00efve caf\u00e9 \ufb01ne, \uff11\uff12"


def test_a_server_echoing_the_key_in_fullwidth_leaks_none_of_it(tmp_path, monkeypatch):
    monkeypatch.setenv("RIG_KEY", SECRET)

    def fullwidth(key: str) -> str:
        return "".join(chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char for char in key)

    with FakeEndpoint(mode="echo-401", spell=fullwidth) as server:
        code, printed, said = measure(server.url, tmp_path / "rig.yaml", "--api-key-env", "RIG_KEY")
    assert code == 1 and "invalid credentials" in said, said
    assert fullwidth(SECRET)[5:15] not in said + printed and SECRET[5:15] not in said + printed
