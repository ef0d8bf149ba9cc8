"""`film measure` against a real OpenAI-compatible server written by others: llama.cpp's own
server on 127.0.0.1 (from the xllamacpp wheel: render/tools/llama_server.py), serving a tiny random-weight model.

What these tests assert does not depend on how fast or busy the machine is: the server's own reports (its token
counts, the prompt tokens it found in its cache) and the dataset's shape. How the times compare (a long prompt's
TTFT against a short one's, a warm prefix against a cold one, four streams' throughput against one's) is
`make bench`'s to report (render/tools/bench.py, "server").

The server keeps a prompt's KV cache, as vLLM and SGLang do, and batches concurrent streams; its
tokenizer spends about six tokens a word. So these tests see what the fake endpoint cannot:
cache hits, real token counts, the server's own error messages and real batching."""

from __future__ import annotations

import statistics

import pytest
import yaml

from render.errors import FilmError
from render.specs.catalog import load_measured
from render.measure.client import Endpoint
from render.measure.timings import measure

from render.tools.llama_server import WIDE, LlamaServer, write_tiny_model
from test_measure import quiet, run_measure_cli

SHORT, LONG = 64, 2048


class RecordingEndpoint(Endpoint):
    """The tool's own endpoint client, noting every prompt it streams (to ask the server about them after) and
    the usage the server reported for it (llama.cpp's, as OpenAI's and vLLM's: prompt_tokens_details.cached_tokens
    says how many of the prompt's tokens it took from its cache)."""

    def __post_init__(self):
        super().__post_init__()
        self.streamed: list[str] = []
        self.usages: list[dict] = []

    def stream(self, prompt, max_tokens):
        self.streamed.append(prompt)
        return super().stream(prompt, max_tokens)

    def note_model(self, event):
        if event.get("usage"):
            self.usages.append(event["usage"])
        super().note_model(event)


def cached_tokens(usage: dict) -> int:
    return usage["prompt_tokens_details"]["cached_tokens"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return write_tiny_model(tmp_path_factory.mktemp("model") / "tiny.gguf", context=4096)


@pytest.fixture(scope="module")
def server(model):
    with LlamaServer(model, context=4096, slots=4) as running:
        yield running


def test_cold_prompts_measure_prefill_and_their_sizes_are_the_servers_own(server):
    endpoint = RecordingEndpoint(server.url, "tiny-random-llama", timeout=60)
    measured = measure(endpoint, [SHORT, LONG], max_tokens=16, runs=3, say=quiet)
    short, long = measured.prompts
    assert measured.prompt_cache == "cold" and measured.counted_by == "stream"
    assert short.ttft_seconds > 0 and long.ttft_seconds > 0 and long.ttft_spread_seconds[0] > 0
    # The recorded sizes are the server's own counts, and the requested sizes, within 1%.
    for entry, wanted in ((short, SHORT), (long, LONG)):
        assert abs(entry.prompt_tokens - wanted) <= max(1, 0.01 * wanted)
    long_texts = endpoint.streamed[-3:]
    server_counts = [server.prompt_tokens(text) for text in long_texts]
    assert abs(long.prompt_tokens - statistics.median(server_counts)) <= 0.01 * long.prompt_tokens
    # Every timed prompt opened differently: the server's cache could serve none of them, and by its own account
    # it served none of the long prompts' tokens (at most the chat template's opening, which every prompt shares).
    assert len({tuple(text.split()[:2]) for text in endpoint.streamed}) == len(endpoint.streamed)
    long_runs = [usage for usage in endpoint.usages if usage["prompt_tokens"] > LONG / 2]
    assert len(long_runs) >= 3
    assert all(cached_tokens(usage) < 0.05 * usage["prompt_tokens"] for usage in long_runs), long_runs


def test_a_warm_prefix_measures_the_cache_on_purpose(server):
    cold_endpoint = RecordingEndpoint(server.url, "tiny-random-llama")
    cold = measure(cold_endpoint, [SHORT, LONG], max_tokens=8, runs=2, say=quiet)
    warm_endpoint = RecordingEndpoint(server.url, "tiny-random-llama")
    cached = measure(warm_endpoint, [SHORT, LONG], max_tokens=8, runs=2, say=quiet, warm_prefix=True)
    assert cold.prompt_cache == "cold" and cached.prompt_cache == "cached"
    # By the server's own account: the warm runs of the long prompt were served almost whole from its cache, the
    # cold ones not at all (that this makes them faster is make bench's to show).
    def long_runs(endpoint):
        return [usage for usage in endpoint.usages if usage["prompt_tokens"] > LONG / 2]

    assert all(cached_tokens(usage) < 0.05 * usage["prompt_tokens"] for usage in long_runs(cold_endpoint))
    warm_runs = long_runs(warm_endpoint)
    assert len(warm_runs) >= 2
    assert sum(cached_tokens(usage) > 0.9 * usage["prompt_tokens"] for usage in warm_runs) >= 2, warm_runs


def test_a_prompt_beyond_the_context_window_fails_with_the_servers_message(server, tmp_path):
    out = tmp_path / "too-long.yaml"
    result = run_measure_cli(server.url, out, None, "--prompt-tokens", "64,8000", "--max-tokens", "4")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "8,000-token prompt: HTTP 400 Bad Request: request (" in result.stderr
    assert "exceeds the available context size (4096 tokens)" in result.stderr
    assert not out.exists()


def test_a_prompt_shorter_than_the_template_and_opening_is_refused_naming_the_shortest(server):
    # Six tokens a word: a 20-token prompt cannot be built; calibration must get down to one character to say so.
    with pytest.raises(FilmError, match=r"20-token prompt: the shortest prompt this endpoint counts is \d+ tokens"):
        measure(Endpoint(server.url, "tiny-random-llama"), [20, 200], max_tokens=4, runs=1, say=quiet)


@pytest.fixture(scope="module")
def wide_sweeps(tmp_path_factory):
    """Sweeps of the wide model (its weights outgrow the CPU's caches, so a decode step is bound by reading them and
    the server's batching of concurrent streams pays, as on a GPU): two prompt lengths at 1, 2 and 4 streams, one
    run a level, 24 tokens out. `sweep(n)` is the n-th, made when first asked for (the tests share the first)."""
    folder = tmp_path_factory.mktemp("wide")
    model = write_tiny_model(folder / "wide.gguf", context=2048, shape=WIDE)
    made: list[tuple] = []

    def sweep(index: int):
        while len(made) <= index:
            out = folder / str(len(made)) / "sweep.yaml"
            out.parent.mkdir()
            with LlamaServer(model, context=2048, slots=4) as server:
                result = run_measure_cli(server.url, out, None, "--prompt-tokens", "48,448", "--max-tokens",
                                         "24", "--runs", "1", "--concurrency", "1,2,4", timeout=400)
            assert result.returncode == 0, result.stderr
            made.append((result, out))
        return made[index]

    return sweep


def test_a_concurrency_sweep_records_every_level_and_the_dataset_loads(wide_sweeps):
    result, out = wide_sweeps(0)
    raw = yaml.safe_load(out.read_text())
    assert raw["prompt_cache"] == "cold" and raw["prompt_tokens_counted_by"] == "usage in the stream"
    assert raw["model_reported"] == "tiny-random-llama" and "vLLM" in raw["definitions"]
    for entry in raw["prompts"]:
        levels = entry["concurrency"]
        assert [level["streams"] for level in levels] == [1, 2, 4]
        for level in levels:  # every level has its figures, each a positive rate
            assert level["aggregate_tokens_per_second"] > 0 and level["decode_tokens_per_second"] > 0, level
    dataset = load_measured(out)
    assert [level.streams for level in dataset.prompts[0].concurrency] == [1, 2, 4]
    assert dataset.prompt_cache == "cold"
    # The fit, printed and stored beside the timings, is the fit of the timings as the film loads them (a CPU is not
    # the GPU they are compared with, and the fit says what it can of that).
    from render.specs.calibration import calibrate
    from render.specs.catalog import load_catalog
    from render.specs.calibration import deployment_of
    from render.tools.calibrate import as_data

    assert "calibration of sweep: " in result.stdout and "each figure against the fit" in result.stdout
    stored = raw["calibration"]
    assert stored == yaml.safe_load(yaml.safe_dump(as_data(calibrate(dataset, deployment_of(dataset, load_catalog())))))
    assert {entry["streams"] for entry in stored["points"] if entry["kind"] == "decode"} >= {1}
    for figure in ("overhead_seconds", "memory_efficiency"):  # a figure the fit gives is >= 0; one it cannot, a note
        assert stored[figure] is None and stored["notes"] or stored[figure]["value"] >= 0, stored
