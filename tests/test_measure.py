"""`film measure` against a real loopback server with configured delays and failures."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import pytest
import yaml

from render import formatting as fmt
from render.errors import FilmError
from render.plan.resolve import resolve_plan
from render.specs.catalog import load_measured
from render.measure.client import Endpoint
from render.measure.timings import measure

from conftest import ROOT
from fake_endpoint import TEMPLATE_TOKENS, FakeEndpoint


def quiet(line):
    pass


def test_ttft_and_tpot_match_the_servers_delays():
    with FakeEndpoint(first_delay=0.25, token_delay=0.02, tokens=30) as server:
        results = measure(Endpoint(server.url, "m"), [40, 400], max_tokens=64, runs=3, say=quiet).prompts
    for entry, wanted in zip(results, (40, 400)):
        assert entry.ttft_seconds == pytest.approx(0.25, abs=0.06)
        assert entry.decode_tokens_per_second == pytest.approx(50, rel=0.2)      # 1 / 20 ms
        assert entry.inter_token_latency_seconds["p50"] == pytest.approx(0.02, abs=0.008)
        assert abs(entry.prompt_tokens - wanted) <= max(1, wanted * 0.01)       # calibrated within 1%
        assert entry.token_counts == "usage" and entry.runs == 3 and entry.output_tokens == 30


def test_without_streamed_usage_the_prompt_is_counted_by_the_server_and_outputs_flagged_approximate():
    with FakeEndpoint(usage=False, tokens=10, first_delay=0.05) as server:
        measured = measure(Endpoint(server.url, "m"), [30, 600], max_tokens=16, runs=2, say=quiet)
        # every timed prompt was counted by a non-streamed request for the same text, after it
        timed = [text for index, text in enumerate(server.prompts) if server.streamed[index]]
        for text in timed:
            position = server.prompts.index(text)
            assert not server.streamed[position + 1] and server.prompts[position + 1] == text
    assert measured.counted_by == "request"
    assert all(entry.token_counts == "approximate (chunks counted)" for entry in measured.prompts)
    timed = [len(text.split()) + TEMPLATE_TOKENS for text, streamed in server.seen if streamed]
    for entry, wanted, counts in zip(measured.prompts, (30, 600), (timed[:2], timed[2:])):
        assert entry.prompt_tokens == counts[0] == counts[1]                  # the server's own count
        assert abs(entry.prompt_tokens - wanted) <= max(1, 0.01 * wanted)     # the size asked for


def test_a_server_that_reports_no_usage_at_all_gets_estimates_said_so(tmp_path):
    with FakeEndpoint(usage=False, answer_usage=False, tokens=6, first_delay=0.01, token_delay=0.002) as server:
        result = run_measure_cli(server.url, tmp_path / "rig.yaml")
    assert result.returncode == 0, result.stderr
    raw = yaml.safe_load((tmp_path / "rig.yaml").read_text())
    assert raw["prompt_tokens_estimated"] is True and raw["prompt_tokens_counted_by"].startswith("estimated")
    assert "prompt tokens: estimated" in result.stdout


@pytest.mark.parametrize("mode, message", [
    ("http500", "HTTP 500 Internal Server Error: model overloaded"),
    ("error-event", "the endpoint reported an error mid-stream: KV cache full"),
    ("llama-error", "the endpoint reported an error mid-stream: slot unavailable"),
    ("cut-short", "the stream ended without [DONE]; the same prompt without streaming: HTTP 400 Bad Request: "
                  "llama_decode returned -3"),
    ("malformed", "malformed stream: a chunk that is not JSON"),
    ("no-done", "the stream ended without [DONE] (truncated)"),
])
def test_each_failure_mode_has_its_message_and_nothing_is_averaged(mode, message):
    with FakeEndpoint(mode=mode, first_delay=0.01) as server:
        with pytest.raises(FilmError) as error:
            measure(Endpoint(server.url, "m"), [30, 60], max_tokens=8, runs=2, say=quiet)
    assert message in str(error.value) and "Nothing was written" in str(error.value) \
        or message in str(error.value) and "nothing was written" in str(error.value)


def test_a_timeout_is_reported():
    with FakeEndpoint(mode="hang") as server:
        with pytest.raises(FilmError, match=r"no answer within 0.5 s \(--timeout\)"):
            measure(Endpoint(server.url, "m", timeout=0.5), [30, 60], max_tokens=8, runs=1, say=quiet)


def test_a_refused_connection_is_reported():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(FilmError, match=rf"cannot connect to 127.0.0.1:{port}"):
        measure(Endpoint(f"http://127.0.0.1:{port}/v1", "m", timeout=2), [30, 60], max_tokens=8, runs=1, say=quiet)


def test_429_is_retried_after_retry_after():
    with FakeEndpoint(rate_limited=2, retry_after="0.2", first_delay=0.01) as server:
        results = measure(Endpoint(server.url, "m"), [30, 60], max_tokens=8, runs=1, say=quiet).prompts
    assert len(results) == 2


def test_429_with_a_long_retry_after_gives_up():
    with FakeEndpoint(rate_limited=99, retry_after="100") as server:
        with pytest.raises(FilmError, match="Retry-After 100 s is longer than 30 s"):
            measure(Endpoint(server.url, "m"), [30, 60], max_tokens=8, runs=1, say=quiet)


def test_the_request_cap_bounds_the_run():
    with FakeEndpoint(first_delay=0.01) as server:
        with pytest.raises(FilmError, match=r"stopped after 3 requests \(--max-requests\)"):
            measure(Endpoint(server.url, "m", max_requests=3), [30, 60], max_tokens=8, runs=3, say=quiet)


def run_measure_cli(url: str, out, extra_env=None, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "render.cli", "measure", "--base-url", url, "--model", "m",
                           "--prompt-tokens", "34,2081", "--runs", "2", "--max-tokens", "12", "--label", "test rig",
                           "--out", str(out), *args], cwd=ROOT, capture_output=True, text=True, env=env,
                           timeout=timeout)


def test_the_api_key_is_sent_but_never_shown_or_written(tmp_path):
    secret = "sk-test-5ecret-value-0123456789"
    with FakeEndpoint(first_delay=0.05, token_delay=0.005, tokens=12) as server:
        result = run_measure_cli(server.url, tmp_path / "rig.yaml", {"RIG_KEY": secret}, "--api-key-env", "RIG_KEY")
        assert result.returncode == 0, result.stderr
        assert set(server.authorizations) == {f"Bearer {secret}"}
    written = (tmp_path / "rig.yaml").read_text()
    assert secret not in written and secret not in result.stdout and secret not in result.stderr
    with FakeEndpoint(mode="http500") as server:
        failed = run_measure_cli(server.url, tmp_path / "bad.yaml", {"RIG_KEY": secret}, "--api-key-env", "RIG_KEY")
    assert failed.returncode == 1 and secret not in failed.stderr + failed.stdout
    assert not (tmp_path / "bad.yaml").exists()


def test_a_missing_key_variable_is_refused(tmp_path):
    result = run_measure_cli("http://127.0.0.1:9/v1", tmp_path / "x.yaml", {}, "--api-key-env", "NO_SUCH_VAR_HERE")
    assert result.returncode == 1
    assert "--api-key-env NO_SUCH_VAR_HERE: that environment variable is empty" in result.stderr


def test_the_written_dataset_loads_into_the_plan_and_changes_the_measured_beats(tmp_path, data_copy):
    data = data_copy("gpus.yaml")
    out = data / "measured" / "rig.yaml"
    with FakeEndpoint(first_delay=0.45, token_delay=0.01, tokens=12) as server:
        result = run_measure_cli(server.url, out)
    assert result.returncode == 0, result.stderr
    # Written outside the project's data/measured/ (a copy here): the hint says how to film it from there.
    assert f"to film it, move it into data/measured/: mv {out} data/measured/ && make film MEASURED=rig" \
        in result.stdout
    dataset = load_measured(out)
    assert dataset.provider == "test rig" and dataset.compared_gpu_is_assumption
    raw = yaml.safe_load(out.read_text())
    assert raw["model_reported"] == "served/model" and raw["runs"] == 2 and raw["endpoint_host"].startswith("127.0.0.1")
    plan = resolve_plan(data_dir=data, measured="rig")
    narration = plan.beat("measured").narration
    assert narration != resolve_plan().beat("measured").narration
    assert f"after {fmt.seconds(dataset.prompts[0].ttft_seconds)} for a short prompt" in narration
    assert "on test rig" in narration
    assert plan.beat("cache-rides-along").narration.startswith(
        f"Decode ran at {fmt.integer(dataset.prompts[0].decode_tokens_per_second)} tokens a second")


def test_a_server_that_echoes_the_key_everywhere_never_gets_it_shown_or_written(tmp_path):
    secret = "sk-echo-5ecret-value-9876543210"
    with FakeEndpoint(mode="echo-401") as server:
        failed = run_measure_cli(server.url, tmp_path / "bad.yaml", {"RIG_KEY": secret}, "--api-key-env", "RIG_KEY")
    assert failed.returncode == 1 and "HTTP 401" in failed.stderr and "invalid credentials: Bearer ***" in failed.stderr
    assert secret not in failed.stderr + failed.stdout
    with FakeEndpoint(mode="echo-model", first_delay=0.02, token_delay=0.002, tokens=8) as server:
        result = run_measure_cli(server.url, tmp_path / "rig.yaml", {"RIG_KEY": secret}, "--api-key-env", "RIG_KEY")
    assert result.returncode == 0, result.stderr
    written = (tmp_path / "rig.yaml").read_text()
    assert secret not in written + result.stdout + result.stderr
    raw = yaml.safe_load(written)
    assert raw["model_reported"] == "served/model for Bearer ***" and "Bearer ***" in raw["source"]


def test_absurd_usage_figures_are_refused_not_written():
    with FakeEndpoint(mode="negative-usage", first_delay=0.01) as server:
        with pytest.raises(FilmError, match="usage says completion_tokens is -5, which is not a token count"):
            measure(Endpoint(server.url, "m", max_requests=20), [30, 60], max_tokens=8, runs=1, say=quiet)
        assert server.requests <= 5  # refused at once, not calibrated towards an impossible length


def test_the_timeout_bounds_the_whole_request_not_each_read():
    import time
    with FakeEndpoint(first_delay=0.05, token_delay=0.5, tokens=40) as server:  # a 20 s stream
        started = time.perf_counter()
        with pytest.raises(FilmError, match=r"the answer took longer than 1 s \(--timeout\)"):
            measure(Endpoint(server.url, "m", timeout=1), [30, 60], max_tokens=64, runs=1, say=quiet)
        assert time.perf_counter() - started < 10  # 1 s, not the stream's 20 (a margin no busy machine takes up)


def test_a_giant_stream_line_is_refused_without_reading_it_whole():
    with FakeEndpoint(mode="giant-line", first_delay=0.01) as server:
        with pytest.raises(FilmError, match="a line longer than 1 MiB"):
            measure(Endpoint(server.url, "m"), [30, 60], max_tokens=8, runs=1, say=quiet)


@pytest.mark.parametrize("args, message", [
    (["--timeout", "-1"], "--timeout -1: give the seconds one request may take, above 0 and at most 3600"),
    (["--base-url", "http://127.0.0.1:99999/v1"], "the port must be a number from 1 to 65535"),
    (["--prompt-tokens", "34,99999999"], "at most 2,000,000"),
    (["--runs", "100000"], "--runs: at most 100"),
])
def test_out_of_range_options_are_refused_before_any_request(tmp_path, args, message):
    result = run_measure_cli("http://127.0.0.1:9/v1", tmp_path / "x.yaml", {}, *args)
    assert result.returncode in (1, 2) and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "x.yaml").exists()


def test_reasoning_deltas_count_as_tokens_and_ttft_comes_before_the_first_content(tmp_path):
    with FakeEndpoint(first_delay=0.1, token_delay=0.02, tokens=10, reasoning=15) as server:
        measured = measure(Endpoint(server.url, "m"), [30, 60], max_tokens=64, runs=2, say=quiet)
        shown = run_measure_cli(server.url, tmp_path / "thinking.yaml", None, "--max-tokens", "64")
    assert shown.returncode == 0, shown.stderr
    assert "TTFC (median)" in shown.stdout and "reasoning tokens" in shown.stdout
    # The server's sleeps are lower bounds a busy machine only lengthens: each time is checked against what the sleeps
    # before its token make it at least, and the first reasoning token against the 15 sleeps that follow it.
    for entry in measured.prompts:
        assert 0.1 <= entry.ttft_seconds < entry.ttfc_seconds - 0.15           # the first reasoning token
        assert entry.ttfc_seconds >= 0.1 + 15 * 0.02                           # the first content token
        assert entry.reasoning_tokens == 15 and entry.output_tokens == 25
        assert 50 / 4 < entry.decode_tokens_per_second <= 50 * 1.1              # reasoning steps are decode too


def test_every_request_opens_with_words_no_other_request_shares():
    with FakeEndpoint(first_delay=0.01, token_delay=0.001, tokens=4) as server:
        measured = measure(Endpoint(server.url, "m"), [30, 300], max_tokens=4, runs=4, say=quiet)
        openings = [tuple(prompt.split()[:2]) for prompt in server.prompts]
    assert measured.prompt_cache == "cold"
    assert len(set(openings)) == len(openings) == len(server.prompts)  # calibration's prompts as well


def test_a_warm_prefix_sends_each_lengths_one_prompt_first_then_times_it_again():
    with FakeEndpoint(first_delay=0.01, token_delay=0.001, tokens=4) as server:
        measured = measure(Endpoint(server.url, "m"), [30, 300], max_tokens=4, runs=3, say=quiet, warm_prefix=True)
        timed = [prompt for prompt, streamed in server.seen if streamed]
    assert measured.prompt_cache == "cached"
    assert len(set(timed[:3])) == 1 and len(set(timed[3:])) == 1 and timed[0] != timed[3]
    assert server.prompts.index(timed[0]) < server.prompts.index(timed[0]) + 1 and not server.streamed[
        server.prompts.index(timed[0])]  # first seen unstreamed: the warm-up


def test_a_concurrency_sweep_runs_the_streams_at_once_and_records_each_level():
    # A server that never slows down, its answers paced by sleeps (not by the CPU, so a busy machine keeps the pace).
    with FakeEndpoint(first_delay=0.1, token_delay=0.05, tokens=20) as server:
        measured = measure(Endpoint(server.url, "m"), [30, 60], max_tokens=32, runs=2, say=quiet,
                           concurrency=(1, 4))
        assert server.most_at_once == 4  # the streams at once, as the server saw them
    for entry in measured.prompts:
        one, four = entry.concurrency
        assert (one.streams, one.rounds, four.streams, four.rounds) == (1, 2, 4, 2)
        # four streams at once in about the time of one: about four times the tokens a second (one after another:
        # the same)
        assert four.aggregate_tokens_per_second == pytest.approx(4 * one.aggregate_tokens_per_second, rel=0.4)
        assert four.decode_tokens_per_second == pytest.approx(one.decode_tokens_per_second, rel=0.4)
        assert entry.ttft_seconds == one.ttft_seconds and entry.runs == 2


def test_the_shortest_possible_prompt_is_named_when_a_shorter_one_is_asked_for():
    with FakeEndpoint(first_delay=0.01) as server:
        with pytest.raises(FilmError, match=r"the shortest prompt this endpoint counts is 11 tokens .*ask for at "
                                            r"least 12"):
            measure(Endpoint(server.url, "m"), [5, 60], max_tokens=4, runs=1, say=quiet)


def test_a_prompt_beyond_the_fake_context_window_reports_the_servers_words():
    with FakeEndpoint(first_delay=0.01, context=500) as server:
        with pytest.raises(FilmError, match=r"2,000-token prompt: HTTP 400 Bad Request: Requested tokens \(\d+\) "
                                            r"exceed context window of 500; nothing was written"):
            measure(Endpoint(server.url, "m"), [30, 2000], max_tokens=4, runs=1, say=quiet)


@pytest.mark.parametrize("args, message", [
    (["--concurrency", "4,8"], "--concurrency '4,8': give increasing numbers of streams starting with 1"),
    (["--concurrency", "1,x"], "--concurrency '1,x': 'x' is not a whole number"),
    (["--concurrency", "1,1000"], "--concurrency '1,1000': at most 256"),
    (["--concurrency", "1,64", "--max-requests", "100"], "this run needs 260 timed requests (2 prompt lengths x 2 "
                                                         "runs x 65 streams over --concurrency 1,64)"),
])
def test_bad_concurrency_is_refused_before_any_request(tmp_path, args, message):
    result = run_measure_cli("http://127.0.0.1:9/v1", tmp_path / "x.yaml", {}, *args)
    assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr


def sweep_dataset(data, name="swept", cache="cold", reasoning=0):
    """A measured dataset as `film measure --concurrency 1,4,16` writes it, into a copy of data/."""
    path = data / "measured" / f"{name}.yaml"
    levels = [{"streams": streams, "aggregate_tokens_per_second": rate, "decode_tokens_per_second": rate / streams,
               "ttft_seconds": 0.05 * streams, "rounds": 3} for streams, rate in ((1, 150.0), (4, 520.0), (16, 1500.0))]
    path.write_text(yaml.safe_dump({
        "id": name, "route": "direct to 127.0.0.1:8000 (rig)", "provider": "rig", "precision": "bf16",
        "model": "llama-3.1-8b", "compared_gpu": "h100-sxm", "compared_gpu_is_assumption": True,
        "source": "film measure", "prompt_cache": cache,
        "prompts": [{"prompt_tokens": 128, "ttft_seconds": 0.05, "decode_tokens_per_second": 150.0,
                     "reasoning_tokens": reasoning, "concurrency": levels},
                    {"prompt_tokens": 2048, "ttft_seconds": 0.4, "decode_tokens_per_second": 140.0}]}))
    return path


def test_a_measured_sweep_reaches_the_plan_beside_the_roofline_and_the_narration_names_the_cache(data_copy):
    from render.specs import roofline as rl
    from render.specs.types import Deployment

    data = data_copy("gpus.yaml")
    sweep_dataset(data)
    plan = resolve_plan(data_dir=data, measured="swept")
    sweep = plan.measured.sweep
    assert [point.streams for point in sweep.points] == [1, 4, 16]
    assert [point.measured_tokens_per_second for point in sweep.points] == [150.0, 520.0, 1500.0]
    deployment = Deployment(plan.measured.gpu, plan.measured.model, plan.measured.precision)
    assert sweep.points[1].predicted_tokens_per_second == pytest.approx(rl.decode_tokens_per_second(deployment, 4, 128))
    assert sweep.curve[0][0] == 1 and sweep.curve[-1][0] == 16
    assert all(a[1] < b[1] for a, b in zip(sweep.curve, sweep.curve[1:]))  # batching raises throughput
    assert plan.beat("measured").narration.startswith("Measured on a real endpoint with cold prompts, BF16 Llama")
    assert "the first word came after" in plan.beat("measured").narration
    sweep_dataset(data, "thinking", cache="cached", reasoning=40)
    thinking = resolve_plan(data_dir=data, measured="thinking").beat("measured").narration
    assert thinking.startswith("Measured on a real endpoint with cached prompts,")
    assert "the first token, thinking included, came after" in thinking
    assert resolve_plan().measured.sweep is None  # the seed dataset has no sweep: the beat stays as it was


@pytest.mark.parametrize("change, message", [
    ({"prompt_cache": "lukewarm"}, "'prompt_cache' must be cold or cached, not 'lukewarm'"),
    ({"levels": [{"streams": 4, "aggregate_tokens_per_second": 10.0}]}, "concurrency levels must start at 1 stream"),
    ({"levels": [{"streams": 1, "aggregate_tokens_per_second": -3.0}]},
     "'aggregate_tokens_per_second' is -3.0; it must be between 0.01 and 10,000,000 tokens/s"),
])
def test_a_bad_sweep_or_cache_field_is_refused_with_its_place(data_copy, change, message):
    data = data_copy("gpus.yaml")
    path = sweep_dataset(data)
    document = yaml.safe_load(path.read_text())
    if "prompt_cache" in change:
        document["prompt_cache"] = change["prompt_cache"]
    else:
        document["prompts"][0]["concurrency"] = change["levels"]
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(FilmError, match=f"swept.yaml:\\d+: .*{re.escape(message)}"):
        resolve_plan(data_dir=data, measured="swept")
