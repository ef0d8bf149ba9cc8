"""The serving simulator (render/serving/) against queueing theory, the roofline, and what each scheduler is for.

Every figure here is the simulator's own arithmetic, seeded: none depends on the machine's speed."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from render.errors import FilmError
from render.serving.costs import Costs, kv_blocks
from render.serving.metrics import Slo, summarise
from render.serving.schedulers import Chunked, Continuous, Disaggregated, Static
from render.serving.simulate import simulate
from render.serving.workload import Lengths, Request, at_rate, poisson, read_trace
from render.specs import roofline as rl
from render.specs.catalog import load_catalog
from render.specs.types import Deployment


@pytest.fixture(scope="module")
def h100():
    catalog = load_catalog()
    return Deployment(catalog.gpu("h100-sxm"), catalog.model("llama-3.1-8b"), catalog.dtype("bf16"))


def service_seconds(costs: Costs, prompt: int, answer: int) -> float:
    """One request alone: its prefill, then its answer's other tokens one step each (by the roofline)."""
    return costs.step(chunks=((prompt, 0),)) + costs.decode_run(1, prompt, answer - 1)


@pytest.mark.parametrize("load", [0.3, 0.5, 0.6])
def test_one_slot_and_fixed_lengths_is_md1_and_waits_as_pollaczek_khinchine_says(h100, load):
    costs = Costs.of(h100)
    prompt, answer = 100, 10
    service = service_seconds(costs, prompt, answer)
    rate = load / service
    requests = poisson(rate, 50_000, Lengths(prompt), Lengths(answer), seed=7)
    served = simulate(requests, costs, Continuous(max_seqs=1))
    prefill = costs.step(chunks=((prompt, 0),))
    waits = served.first_token - prefill - served.arrival
    assert np.allclose(served.finish - served.first_token + prefill, service)  # every service took S
    # Exactly Lindley's recursion for these arrivals: W(n+1) = max(0, W(n) + S − A(n+1))...
    lindley = np.zeros(len(waits))
    gaps = np.diff(served.arrival)
    for n, gap in enumerate(gaps):
        lindley[n + 1] = max(0.0, lindley[n] + service - gap)
    assert np.allclose(waits, lindley, rtol=1e-9, atol=1e-9)
    # ...whose mean is M/D/1's, W_q = λ S² / (2 (1 − ρ)) (over 50,000 requests one standard deviation is about 1.5%).
    assert np.mean(waits) == pytest.approx(rate * service ** 2 / (2 * (1 - load)), rel=0.02)


def test_littles_law_holds_for_a_busy_continuous_batch(h100):
    served = simulate(poisson(12, 3000, Lengths(1500, 800), Lengths(150, 100), seed=3), Costs.of(h100), Continuous())
    events = sorted([(t, 1) for t in served.arrival] + [(t, -1) for t in served.finish])
    area, inside, last = 0.0, 0, events[0][0]
    for moment, change in events:  # the number in the system, integrated over time
        area += inside * (moment - last)
        inside, last = inside + change, moment
    span = events[-1][0] - events[0][0]
    mean_inside = area / span
    rate = len(served.arrival) / span
    assert mean_inside == pytest.approx(rate * np.mean(served.finish - served.arrival), rel=0.01)


@pytest.mark.parametrize("shares", [None, (0.73, 0.74, 0.277, 1.0), (0.42, 0.9, 0.004, 0.0)])
def test_a_lone_request_waits_exactly_what_the_roofline_says(h100, shares):
    costs = Costs.of(h100, *shares[:3], overlap=shares[3]) if shares else Costs.of(h100)
    deployment = rl.achieved(h100.gpu, *shares[:2], overlap=shares[3]) if shares else h100.gpu
    running = dataclasses.replace(h100, gpu=deployment)
    overhead = shares[2] if shares else 0.0
    for scheduler in (Continuous(), Chunked(max_batched_tokens=4096), Static(batch=1), Disaggregated()):
        served = simulate(poisson(1e-4, 4, Lengths(2000), Lengths(200), seed=1), costs, scheduler)
        ttft = rl.time_on(running, rl.prefill(running, 2000)).seconds + overhead
        tpot = np.mean([rl.time_on(running, rl.decode_step(running, 1, 2000 + j)).seconds for j in range(199)])
        if isinstance(scheduler, Disaggregated):  # its second token waits for the cache to cross to the decoder
            kv = rl.kv_bytes_per_token_per_gpu(h100.model, h100.dtype, 1)
            tpot += kv * 2000 / h100.gpu.interconnect_bandwidth / 199
        assert served.ttft == pytest.approx(np.full(4, ttft), rel=1e-12), scheduler.name
        assert served.tpot == pytest.approx(np.full(4, tpot), rel=1e-9), scheduler.name


def test_a_lone_streams_gaps_are_its_decode_steps_and_a_prefill_between_them_is_one_gap(h100):
    """Every token's time is kept: a lone request's gaps are the roofline's decode steps, one by one, under every
    scheduler (disaggregated: the first waits for the cache to cross too), and they add up to its TPOT's span. A second
    prompt arriving as it decodes puts its prefill into one gap under continuous batching (that gap is the prefill
    and the next step of both: ITL's p99, where the mean TPOT hides it), and chunked prefill spreads it."""
    from render.serving.metrics import request_percentiles

    costs = Costs.of(h100)
    steps = [rl.time_on(h100, rl.decode_step(h100, 1, 2000 + j)).seconds for j in range(199)]
    transfer = rl.kv_bytes_per_token_per_gpu(h100.model, h100.dtype, 1) * 2000 / h100.gpu.interconnect_bandwidth
    for scheduler in (Continuous(), Chunked(max_batched_tokens=4096), Static(batch=1), Disaggregated()):
        served = simulate((Request(0.0, 2000, 200),), costs, scheduler)
        expected = np.array(steps)
        if isinstance(scheduler, Disaggregated):
            expected[0] += transfer
        assert served.itl_counts.tolist() == [199]
        assert served.itl == pytest.approx(expected, rel=1e-9), scheduler.name
        assert np.sum(served.itl) == pytest.approx(served.finish[0] - served.first_token[0], rel=1e-12)

    prefill = rl.time_on(h100, rl.prefill(h100, 4000)).seconds
    stalled = simulate((Request(0.0, 2000, 200), Request(0.5, 4000, 2)), costs, Continuous())
    gaps = stalled.request_itl(0)
    longest = int(np.argmax(gaps))  # the gap after token `longest` (0: the first): the prefill, then both decode
    both = rl.time_on(h100, rl.forward_step(h100, 2, (2000 + longest) + 4000)).seconds
    assert gaps[longest] == pytest.approx(prefill + both, rel=1e-9)
    assert np.delete(gaps, longest) == pytest.approx(np.delete(steps, longest) if longest < 199 else steps[:-1],
                                                     rel=0.05)  # (the others: one or two streams' steps)
    # Three such prompts: the stalls are ITL's tail (p99 of the gaps), which the mean TPOT averages away.
    three = simulate((Request(0.0, 2000, 200), *(Request(at, 4000, 2) for at in (0.3, 0.6, 0.9))), costs,
                     Continuous())
    report = summarise(three)
    assert report.itl_seconds.p99 > 5 * report.tpot_seconds.mean and report.itl_seconds.p50 < 1.1 * steps[-1]
    chunked = simulate((Request(0.0, 2000, 200), Request(0.5, 4000, 2)), costs, Chunked(max_batched_tokens=512))
    assert np.max(chunked.request_itl(0)) < gaps[longest] / 3
    # A request's own percentile of its gaps, as numpy reads each one's gaps, for every request of a run.
    busy = simulate(poisson(20, 300, Lengths(2000, 800), Lengths(200, 100), seed=5), costs, Continuous())
    for at in (50, 90, 99):
        own = [np.percentile(busy.request_itl(index), at) if busy.itl_counts[index] else np.nan
               for index in range(300)]
        assert request_percentiles(busy, at) == pytest.approx(np.array(own), rel=1e-12, nan_ok=True)


def test_a_run_past_the_tokens_whose_times_are_kept_has_no_itl_and_refuses_an_itl_objective(h100, monkeypatch):
    """Every token's time costs memory (a run of 1,000 answers of 100,000 tokens would hold 10⁸ gaps): past
    TOKENS_KEPT a run keeps none, shows no ITL, and an objective on it is one message naming what to give."""
    from render.serving import simulate as simulating

    monkeypatch.setattr(simulating, "TOKENS_KEPT", 1000)
    served = simulate(poisson(5, 30, Lengths(500), Lengths(50), seed=2), Costs.of(h100), Continuous())
    assert not served.itl_kept and len(served.itl) == 0 and served.finish.max() > 0
    report = summarise(served, 5, Slo(0.5, 0.05))
    assert np.isnan(report.itl_seconds.p99) and report.met_share is not None
    with pytest.raises(FilmError, match=r"this run's 1,500 tokens are more than the 1,000 whose times the "
                                        r"simulator keeps.*give fewer --requests or shorter --answer-tokens"):
        summarise(served, 5, Slo(itl_p99_seconds=0.1))


def test_tpot_is_vllms_and_an_itl_objective_holds_each_request_to_its_own_gaps(h100):
    """TPOT as vLLM's benchmark defines it, (end to end − TTFT) ÷ (tokens − 1), on a run whose requests wait outside
    the engine too; `--slo itl_p99=…` holds each request to its own gaps' 99th percentile."""
    from render.serving.metrics import parse_slo

    costs = Costs.of(h100, request_overhead=0.2)
    served = simulate(poisson(15, 200, Lengths(2000, 800), Lengths(200, 100), seed=6), costs, Continuous())
    many = served.answer_tokens > 1
    assert served.tpot == pytest.approx(((served.e2e - served.ttft) / (served.answer_tokens - 1))[many], rel=1e-12)
    slo = parse_slo("ttft=2,itl_p99=0.05")
    assert (slo.ttft_seconds, slo.itl_p99_seconds, str(slo)) == (2, 0.05, "ttft=2,itl_p99=0.05")
    own = np.array([np.percentile(served.request_itl(i), 99) if served.itl_counts[i] else 0 for i in range(200)])
    expected = (served.ttft <= 2) & (own <= 0.05)
    report = summarise(served, 15, slo)
    assert report.met_share == pytest.approx(np.mean(expected[20:]))  # (after the warm-up: the first 20 of 200)
    assert 0 < report.met_share < 1
    with pytest.raises(FilmError, match=r"give any of ttft=, tpot=, itl_p50=, itl_p90= and itl_p99="):
        parse_slo("itl_p95=0.1")


@pytest.mark.parametrize("overlap", [1.0, 0.5, 0.0])
def test_a_run_of_decode_steps_is_the_sum_of_its_steps(h100, overlap):
    """decode_run's closed form against the roofline step by step, on both sides of the ridge (a batch of 4,096
    starts bound by arithmetic and crosses to memory as its caches grow), at any overlap."""
    costs = Costs.of(h100, 0.6, 0.8, overlap=overlap)
    for batch, context, steps in ((1, 2000, 199), (64, 64 * 1000, 50), (4096, 4096 * 300, 400), (4096, 0, 3)):
        each = sum(costs.step(batch, context + j * batch) for j in range(steps))
        assert costs.decode_run(batch, context, steps) == pytest.approx(each, rel=1e-9), (batch, context)
    bounds = {rl.time_on(costs.deployment, rl.decode_step(costs.deployment, 4096, 300 + j)).bound
              for j in (0, 399)}
    assert bounds == {"compute", "memory"}  # (the third run crosses the ridge)


def test_chunked_prefill_keeps_decodes_moving_when_long_prompts_arrive(h100):
    requests = poisson(3, 1500, Lengths(8000, 4000), Lengths(300, 100), seed=5)
    costs = Costs.of(h100)
    whole = summarise(simulate(requests, costs, Continuous()))
    chunked = summarise(simulate(requests, costs, Chunked(max_batched_tokens=512)))
    assert chunked.tpot_seconds.p90 < 0.8 * whole.tpot_seconds.p90, (chunked.tpot_seconds, whole.tpot_seconds)


def test_continuous_batching_answers_sooner_than_static_at_the_same_throughput(h100):
    requests = poisson(4, 2000, Lengths(1000, 500), Lengths(200, 150), seed=9)
    costs = Costs.of(h100)
    static = summarise(simulate(requests, costs, Static(batch=16, max_wait=1.0)))
    continuous = summarise(simulate(requests, costs, Continuous()))
    assert continuous.throughput_tokens_per_second == pytest.approx(static.throughput_tokens_per_second, rel=0.05)
    assert continuous.ttft_seconds.p50 < 0.5 * static.ttft_seconds.p50


def test_disaggregation_takes_prefills_stalls_out_of_decode_for_the_cost_of_the_transfer(h100):
    requests = poisson(6, 1500, Lengths(4000, 2000), Lengths(200, 100), seed=11)
    costs = Costs.of(h100)
    together = simulate(requests, costs, Continuous())
    apart = simulate(requests, costs, Disaggregated(prefill_gpus=1, decode_gpus=1))
    assert np.percentile(apart.tpot, 90) < 0.8 * np.percentile(together.tpot, 90)
    # Each answer's second token waited for its cache to cross: at least the transfer after the first.
    transfer = np.array([costs.transfer(int(p)) for p in apart.prompt_tokens])
    assert np.all(apart.finish - apart.first_token >= transfer)
    with pytest.raises(FilmError, match="--decode-gpus 3: give a multiple of the deployment's 2 GPUs"):
        simulate(requests, Costs.of(dataclasses.replace(h100, gpus=2)), Disaggregated(prefill_gpus=2, decode_gpus=3))


def test_the_kv_cache_binds_where_it_should_and_no_token_is_generated_twice(h100):
    requests = poisson(2, 400, Lengths(12000, 3000), Lengths(800, 400), seed=2)
    costs = Costs.of(h100)
    roomy = simulate(requests, costs, Continuous())
    assert roomy.capacity_blocks == kv_blocks(h100) and int(np.sum(roomy.preemptions)) == 0
    tight = simulate(requests, costs, Continuous(), capacity_blocks=2500)  # 40,000 tokens: three long requests
    assert int(np.sum(tight.preemptions)) > 0
    for served in (roomy, tight):
        assert np.array_equal(served.generated, served.answer_tokens)  # every token once, pre-empted or not
        assert np.all(served.first_token >= served.arrival) and np.all(served.finish >= served.first_token)
    assert np.mean(tight.e2e) > np.mean(roomy.e2e)
    with pytest.raises(FilmError, match="needs more KV cache than the deployment holds"):
        simulate((Request(0.0, 50_000, 10),), costs, Continuous(), capacity_blocks=2500)


@pytest.mark.parametrize("scheduler", [Continuous(), Chunked(), Static(), Disaggregated()])
def test_the_same_seed_gives_the_same_result(h100, scheduler):
    costs = Costs.of(h100)
    first = simulate(poisson(8, 500, Lengths(2000, 1000), Lengths(200, 100), seed=4), costs, scheduler)
    again = simulate(poisson(8, 500, Lengths(2000, 1000), Lengths(200, 100), seed=4), costs, scheduler)
    other = simulate(poisson(8, 500, Lengths(2000, 1000), Lengths(200, 100), seed=5), costs, scheduler)
    assert np.array_equal(first.finish, again.finish) and np.array_equal(first.first_token, again.first_token)
    assert not np.array_equal(first.finish, other.finish)


def test_goodput_counts_the_requests_that_meet_both_objectives(h100):
    served = simulate(poisson(20, 1000, Lengths(2000), Lengths(200), seed=1), Costs.of(h100), Continuous())
    report = summarise(served, 20, Slo(0.5, 0.05))
    # Read after the warm-up: the first 100 of the 1,000 arrivals (they arrive in order) left out.
    after = slice(100, None)
    tpot = ((served.finish - served.first_token) / (served.answer_tokens - 1))[after]
    met = (served.ttft[after] <= 0.5) & (tpot <= 0.05)
    first, last = served.arrival[100], served.arrival[-1]
    finished = np.sum((served.finish > first) & (served.finish <= last))
    assert report.measured == 900 and report.sustained is None  # (1,000 requests: too few to judge)
    assert report.served_requests_per_second == pytest.approx(finished / (last - first))
    assert report.goodput_requests_per_second == pytest.approx(np.mean(met) * finished / (last - first))
    assert report.met_share == pytest.approx(np.mean(met)) and 0 < report.met_share < 1
    assert report.ttft_seconds.p90 == pytest.approx(np.percentile(served.ttft[after], 90))
    # Each objective on its own, set where it splits the requests: the share is the requests within it.
    for slo, figure in ((Slo(float(np.median(served.ttft[after])), None), served.ttft[after]),
                        (Slo(None, float(np.median(tpot))), tpot)):
        limit = slo.ttft_seconds if slo.ttft_seconds is not None else slo.tpot_seconds
        assert summarise(served, 20, slo).met_share == pytest.approx(np.mean(figure <= limit))
        assert 0.4 < np.mean(figure <= limit) <= 0.6


def test_a_run_sustains_its_rate_when_it_serves_what_arrives_after_the_warm_up(h100):
    """A long run's verdict: at half the deployment's throughput it finishes what arrives; at a tenth past its
    throughput its queue grows, and it serves less than arrives, whatever share of requests met the objectives."""
    from render.serving.load import LoadRequest, saturation_rate

    costs = Costs.of(h100)
    lengths = poisson(1, 4000, Lengths(2000), Lengths(200), seed=4)
    top = saturation_rate(LoadRequest(h100, (Continuous(),), requests=4000, prompt=Lengths(2000),
                                      answer=Lengths(200)))
    half = summarise(simulate(at_rate(lengths, top / 2, 4), costs, Continuous()), top / 2)
    assert half.sustained is True and half.measured == 3600
    assert half.served_requests_per_second == pytest.approx(top / 2, rel=0.05)
    loose = Slo(3600, 3600)  # (every request meets these: only the rate's being sustained can rule it out)
    over = summarise(simulate(at_rate(lengths, top * 1.5, 4), costs, Continuous()), top * 1.5, loose)
    assert over.met_share == 1 and over.sustained is False and not over.within
    assert over.served_requests_per_second < 0.98 * top * 1.5


@pytest.mark.parametrize("choice", [("h100-sxm", "llama-3.1-8b", "bf16", 1), ("a100-sxm-80gb", "llama-3.1-70b",
                                                                             "int8", 2)])
def test_a_capacity_is_sustained_never_above_what_a_run_served_and_a_tenth_more_is_refused(choice):
    """Every scheduler's capacity from a sweep: at most the most requests a second any of its runs served; within
    1% of the lowest rate found beyond it (or what the runs served, where less); and a long run a tenth above it
    misses (not sustained, or fewer than 90% of requests meeting the objectives)."""
    from render.serving.load import LoadRequest, SchedulerSettings, scheduler_of, sweep
    from render.serving.metrics import JUDGED_LEAST
    from render.serving.schedulers import SCHEDULERS

    catalog = load_catalog()
    gpu, model, dtype, gpus = choice
    deployment = Deployment(catalog.gpu(gpu), catalog.model(model), catalog.dtype(dtype), gpus)
    request = LoadRequest(deployment, tuple(scheduler_of(name, SchedulerSettings(), deployment)
                                            for name in SCHEDULERS), prompt=Lengths(2000), answer=Lengths(200))
    found = sweep(request)
    assert sum(capacity is not None for capacity in found.capacities.values()) >= 2
    for scheduler in request.schedulers:
        capacity, above = found.capacities[scheduler.name], found.above[scheduler.name]
        if capacity is None:
            continue
        assert capacity <= found.served[scheduler.name]
        # (searched on rates 1% apart, each to four figures; lower only where the runs served less)
        assert above / 1.011 <= capacity < above or capacity == found.served[scheduler.name] < above
        beyond = dataclasses.replace(request, rate=capacity * 1.1, requests=JUDGED_LEAST, schedulers=(scheduler,))
        report = summarise(simulate(beyond.workload(), beyond.costs, scheduler), beyond.rate, beyond.slo)
        assert not report.within, (scheduler.name, capacity, report.met_share, report.sustained)


def test_lengths_are_log_normal_with_the_mean_and_spread_given():
    requests = poisson(1, 40_000, Lengths(2000, 500), Lengths(200), seed=3)
    prompts = np.array([r.prompt_tokens for r in requests])
    assert np.mean(prompts) == pytest.approx(2000, rel=0.01) and np.std(prompts) == pytest.approx(500, rel=0.03)
    assert {r.answer_tokens for r in requests} == {200}
    gaps = np.diff([0.0] + [r.arrival for r in requests])
    assert np.mean(gaps) == pytest.approx(1.0, rel=0.02) and np.std(gaps) == pytest.approx(1.0, rel=0.03)
    assert [r.prompt_tokens for r in at_rate(requests, 5)] == list(prompts)


def test_a_trace_is_read_with_its_lines_checked(tmp_path):
    import os

    good = tmp_path / "trace.csv"
    good.write_text("arrival_seconds,prompt_tokens,answer_tokens\n0.0,100,20\n0.5,2000,200\n")
    assert read_trace(good) == (Request(0.0, 100, 20), Request(0.5, 2000, 200))
    lines = tmp_path / "trace.jsonl"
    lines.write_text('{"arrival_seconds": 1, "prompt_tokens": 10, "answer_tokens": 2}\n')
    assert read_trace(lines) == (Request(1.0, 10, 2),)
    cases = {"0.0,100,20\n1.0,100,20\n0.5,100,20\n": r"trace.csv:3: arrives at 0.5 s, before the row above \(1 s\)",
             "0.0,100,0\n": r"trace.csv:1: answer_tokens is 0.0; it must be a whole number of tokens from 1",
             "0.0,1e99,20\n": r"trace.csv:1: prompt_tokens is 1e\+99",
             "nan,100,20\n": r"trace.csv:1: arrival_seconds is nan",
             "0.0,100\n": r"trace.csv:1: 2 columns where the trace has 3",
             "arrival,prompt_tokens,answer_tokens\n": r"trace.csv:1: the header lacks arrival_seconds"}
    for text, message in cases.items():
        good.write_text(text)
        with pytest.raises(FilmError, match=message):
            read_trace(good)
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(FilmError, match="is a FIFO"):
        read_trace(fifo)
    huge = tmp_path / "huge.csv"
    with huge.open("wb") as file:
        file.truncate(65 * 2**20)
    with pytest.raises(FilmError, match="is over 64 MiB"):
        read_trace(huge)


# -- film load, as a user runs it ---------------------------------------------------------------------------


def film_load(*args: str, cwd=None):
    from conftest import ROOT, run_film

    return run_film("load", *args, cwd=cwd or ROOT, timeout=600)


def test_film_load_prints_its_figures_and_json_holds_every_named_key():
    import json

    result = film_load("--rate", "10", "--requests", "300", "--slo", "ttft=0.5,tpot=0.05", "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    for key in ("p50", "p90", "p99"):
        assert figures["ttft_seconds"][key] > 0
    for key in ("mean", "p50", "p90"):
        assert figures["tpot_seconds"][key] > 0
    assert figures["e2e_seconds"]["p50"] > 0 and figures["e2e_seconds"]["p90"] >= figures["e2e_seconds"]["p50"]
    assert figures["throughput_tokens_per_second"] > 0 and 0 < figures["goodput_requests_per_second"] <= 10 * 1.5
    assert 0 < figures["itl_seconds"]["p50"] <= figures["itl_seconds"]["p90"] <= figures["itl_seconds"]["p99"]
    assert figures["slo_attainment"] == figures["slo_met_share"] and (figures["measured_requests"],
                                                                    figures["warmup_requests"]) == (270, 30)
    assert figures["sustained"] is None and figures["served_requests_per_second"] > 0  # (300: too few to judge)
    text = film_load("--rate", "10", "--requests", "300", "--scheduler", "continuous,chunked")
    assert text.returncode == 0 and "Llama 3.1 8B in BF16 on H100 SXM, at the ceilings; 300 requests, Poisson at " \
        "10 a second, prompts 2000 and answers 200 tokens" in text.stdout, text.stdout
    assert "continuous" in text.stdout and "chunked" in text.stdout and "TTFT p90" in text.stdout
    # the engine's knobs in vLLM's words, at vLLM's defaults on an H100
    assert "seed 0; max_num_seqs 1,024, max_num_batched_tokens 8,192 (chunked), block_size 16\n" in text.stdout
    assert "ITL p99" in text.stdout


def test_a_sweep_gives_each_schedulers_capacity_and_a_chart_in_the_films_palette(tmp_path):
    from PIL import Image

    from scenes import style

    result = film_load("--sweep", "2:30:8", "--requests", "300", "--slo", "ttft=0.5,tpot=0.05", "--build",
                       str(tmp_path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    table = {line.split()[0]: line for line in lines if line.split() and line.split()[0] in
             ("static", "continuous", "chunked", "disaggregated")}
    assert set(table) == {"static", "continuous", "chunked", "disaggregated"}
    assert "requests/s" in table["chunked"] and "requests/s" in table["continuous"]
    assert "not at" in result.stdout and "served at most" in result.stdout and "sustains" in result.stdout
    png, svg = tmp_path / "load" / "sweep.png", tmp_path / "load" / "sweep.svg"
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()
    picture = Image.open(png).convert("RGB")
    colours = {colour for _, colour in picture.getcolors(1 << 20)}

    def present(hex_colour: str) -> bool:
        wanted = tuple(int(hex_colour[index:index + 2], 16) for index in (1, 3, 5))
        return any(max(abs(a - b) for a, b in zip(colour, wanted)) <= 8 for colour in colours)

    assert picture.size == (1280, 560) and picture.getpixel((5, 5)) == tuple(
        int(style.BACKGROUND[index:index + 2], 16) for index in (1, 3, 5))
    for colour in (style.MEMORY, style.COMPUTE, style.KV_CACHE, style.HIGHLIGHT):  # the lines and the objective
        assert present(colour), colour


SARATHI_ROWS = {  # docs/serving.md's published comparisons: the setup's own options, and the row's start
    "mistral-7b": (("--model", "mistral-7b-v0.3", "--slo", "ttft=2,itl_p99=0.1"), "`--prompt-tokens 2340~2089 "),
    "yi-34b-tp2": (("--gpus", "2", "--model", "docs/published/yi-34b/config.json", "--slo", "ttft=2,itl_p99=0.2"),
                   "`--gpus 2 --model docs/published/yi-34b/config.json --prompt-tokens 2340~2089 "),
}


@pytest.mark.parametrize("row", SARATHI_ROWS)
def test_sarathi_serves_strict_objective_is_reproduced(row):
    """docs/serving.md's published comparisons (Sarathi-Serve, chat lengths, a strict P99 between tokens: Mistral 7B
    on an A100, Yi-34B on two): film load's two capacities are the ones the table writes, and chunked prefill at 512
    tokens a step serves several times what continuous batching does, as the paper finds (2.6x, 3.7x; why the
    simulator differs, the docs say)."""
    import json

    from conftest import ROOT

    options, written_as = SARATHI_ROWS[row]
    common = ("--gpu", "a100-sxm-80gb", *options, "--dtype", "bf16", "--prompt-tokens", "2340~2089",
              "--answer-tokens", "439~266", "--max-num-seqs", "128", "--sweep", "--json")
    continuous = json.loads(film_load(*common, "--scheduler", "continuous").stdout)
    chunked = json.loads(film_load(*common, "--scheduler", "chunked", "--max-num-batched-tokens", "512").stdout)
    found = (continuous["capacity_requests_per_second"]["continuous"],
             chunked["capacity_requests_per_second"]["chunked"])
    table = (ROOT / "docs" / "serving.md").read_text()
    written = re.search(re.escape(written_as) + r"[^|]*`: continuous ([\d.]+), chunked \(`--max-num-batched-tokens "
                        r"512`\) ([\d.]+) requests/s: \*\*([\d.]+)×\*\*", table)
    assert written, f"docs/serving.md's Sarathi-Serve row for {row}"
    assert written.groups() == (f"{found[0]:.3g}", f"{found[1]:.3g}", f"{found[1] / found[0]:.2g}"), found
    assert found[1] / found[0] >= 2  # (the paper's direction: several times, at a strict objective between tokens)


def test_distserves_comparison_is_what_the_docs_say():
    """docs/serving.md's DistServe row (OPT-13B on A100s, ShareGPT's means, TTFT 0.25 s and TPOT 0.1 s): film load's
    per-GPU capacities of continuous batching on one GPU and disaggregation on three are the ones the table writes
    (where the simulator disagrees with the paper, the docs say why)."""
    import json

    from conftest import ROOT

    common = ("--gpu", "a100-sxm-80gb", "--model", "docs/published/opt-13b/config.json", "--dtype", "fp16",
              "--prompt-tokens", "755~755", "--answer-tokens", "200~200", "--slo", "ttft=0.25,tpot=0.1",
              "--max-num-seqs", "1024", "--sweep", "--json")
    continuous = json.loads(film_load(*common, "--scheduler", "continuous").stdout)
    apart = json.loads(film_load(*common, "--scheduler", "disaggregated", "--prefill-gpus", "2",
                                 "--decode-gpus", "1").stdout)
    found = (continuous["capacity_per_gpu_requests_per_second"]["continuous"],
             apart["capacity_per_gpu_requests_per_second"]["disaggregated"])
    assert apart["capacity_requests_per_second"]["disaggregated"] == pytest.approx(3 * found[1])
    written = re.search(r"`--gpu a100-sxm-80gb --model docs/published/opt-13b/config.json [^|]*`: continuous ([\d.]+) "
                        r"a GPU, disaggregated \(`--prefill-gpus 2 --decode-gpus 1`\) ([\d.]+) a GPU: "
                        r"\*\*([\d.]+)×\*\*", (ROOT / "docs" / "serving.md").read_text())
    assert written, "docs/serving.md's DistServe row"
    assert written.groups() == (f"{found[0]:.3g}", f"{found[1]:.3g}", f"{found[1] / found[0]:.2g}"), found


def test_a_capacity_over_several_seeds_says_its_spread():
    """--seeds N: each capacity found again for N seeds (each as a sweep at that seed alone finds it) and the spread
    said; without --sweep, refused by name."""
    import json

    sweep = ("--sweep", "4:24:6", "--scheduler", "continuous", "--requests", "300")
    figures = json.loads(film_load(*sweep, "--seeds", "3", "--json").stdout)
    over = figures["capacity_over_seeds_requests_per_second"]["continuous"]
    assert figures["seeds"] == [0, 1, 2] and len(over) == 3
    assert over[0] == figures["capacity_requests_per_second"]["continuous"]
    alone = json.loads(film_load(*sweep, "--seed", "2", "--json").stdout)
    assert over[2] == alone["capacity_requests_per_second"]["continuous"]
    text = film_load(*sweep, "--seeds", "3").stdout
    low, high = min(over), max(over)
    assert f"{low:.3g}–{high:.3g} over 3 seeds" in text, text
    refused = film_load("--requests", "50", "--seeds", "3")
    assert refused.returncode == 1 and refused.stderr.strip().endswith(
        "--seeds 3: the spread over seeds is of a sweep's capacities; give --sweep too"), refused.stderr


def test_a_sweeps_rates_are_a_round_step_apart():
    """film load's sweep (and the page's rate stops): from a round step (1, 2, 2.5 or 5 times a power of ten, the
    smallest that needs at most 20 stops) up to the top or the first stop past it."""
    from render.serving.load import even_rates

    for top, expected in ((34.7, (2.0, 18)), (23.9, (2.0, 12)), (20.0, (1.0, 20)), (0.0123, (0.001, 13)),
                          (1000.0, (50.0, 20)), (7.77, (0.5, 16)), (41.0, (2.5, 17))):
        rates = even_rates(top)
        assert (rates[0], len(rates)) == expected, (top, rates)
        assert rates == tuple(float(f"{rates[0] * index:.6g}") for index in range(1, len(rates) + 1))
        assert rates[-1] >= top > rates[-2]


def test_vllms_knobs_take_vllms_names_and_its_defaults_on_each_gpu():
    """--max-num-seqs, --max-num-batched-tokens and --block-size are vLLM's, and left out are `vllm serve`'s own on
    the GPU (EngineArgs.get_batch_defaults: 8,192 tokens and 1,024 sequences on a GPU of 70 GiB or more that is not an
    A100, else 2,048 and 256); chunked prefill's budget is max_num_batched_tokens, the decodes' tokens first."""
    import json

    from render.serving.load import LoadRequest, SchedulerSettings, scheduler_of

    catalog = load_catalog()
    expected = {"h100-sxm": (8192, 1024), "h200-sxm": (8192, 1024), "b200": (8192, 1024), "mi300x": (8192, 1024),
                "a100-sxm-80gb": (2048, 256), "l40s": (2048, 256), "rtx-4090": (2048, 256)}
    model, dtype = catalog.model("llama-3.1-8b"), catalog.dtype("bf16")
    for gpu, (tokens, seqs) in expected.items():
        deployment = Deployment(catalog.gpu(gpu), model, dtype)
        chunked = scheduler_of("chunked", SchedulerSettings(), deployment)
        assert (chunked.max_batched_tokens, chunked.max_seqs) == (tokens, seqs), gpu
        given = scheduler_of("chunked", SchedulerSettings(max_num_seqs=7, max_num_batched_tokens=640), deployment)
        assert (given.max_batched_tokens, given.max_seqs) == (640, 7)
        assert scheduler_of("continuous", SchedulerSettings(), deployment).max_seqs == seqs
    # The block size: the cache's blocks are of that many tokens (the same memory, twice the tokens a block).
    h100 = Deployment(catalog.gpu("h100-sxm"), model, dtype)
    request = LoadRequest(h100, (Continuous(),), rate=1.0, requests=50, kv_tokens=8192, block_tokens=32)
    assert request.capacity_blocks == 256
    result = film_load("--rate", "5", "--requests", "60", "--scheduler", "chunked", "--max-num-seqs", "8",
                       "--max-num-batched-tokens", "1024", "--block-size", "32", "--json")
    assert result.returncode == 0, result.stderr
    alias = film_load("--rate", "5", "--requests", "60", "--scheduler", "chunked", "--max-seqs", "8",
                      "--chunk-tokens", "1024", "--block-size", "32", "--json")
    assert json.loads(alias.stdout) == json.loads(result.stdout)  # (the earlier names still work)
    other = film_load("--rate", "5", "--requests", "60", "--scheduler", "chunked", "--json")
    assert json.loads(other.stdout) != json.loads(result.stdout)
    for args, says in ((("--block-size", "24"), "argument --block-size: 24 tokens is not one of vLLM's block sizes: "
                                                "give 8, 16, 32, 64 or 128"),
                       (("--max-num-batched-tokens", "8"), "argument --max-num-batched-tokens: must be at least 16, "
                                                           "not 8")):
        refused = film_load("--requests", "50", *args)
        assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1] == f"film load: error: {says}"


@pytest.mark.parametrize("args, says", [
    (("--rate", "0"), "--rate 0.0: give requests a second, from 1e-06 to 1,000,000"),
    (("--rate", "nan"), "--rate nan: give requests a second"),
    (("--prompt-tokens", "0"), "--prompt-tokens '0': the mean must be from 1 to 10,000,000 tokens"),
    (("--answer-tokens", "2000~x"), "--answer-tokens '2000~x': give tokens, fixed (2000) or a log-normal"),
    (("--slo", "ttft=-1"), "--slo 'ttft=-1': ttft='-1' must be from 0.000001 to 3600 seconds"),
    (("--slo", "latency=1"), "--slo 'latency=1': give any of ttft=, tpot=, itl_p50=, itl_p90= and itl_p99="),
    (("--scheduler", "fifo"), "--scheduler 'fifo': give one of static, continuous, chunked, disaggregated"),
    (("--sweep", "5:1"), "--sweep '5:1': give increasing rates"),
    (("--scheduler", "disaggregated", "--gpus", "2", "--decode-gpus", "3"),
     "--decode-gpus 3: give a multiple of the deployment's 2 GPUs"),
    (("--prompt-tokens", "600000"), "needs more KV cache than the deployment holds"),
])
def test_bad_load_settings_are_one_message(args, says):
    result = film_load("--requests", "50", *args)
    assert result.returncode in (1, 2) and "Traceback" not in result.stderr, result.stderr
    assert says in result.stderr and len(result.stderr.strip().splitlines()) <= 3, result.stderr


# -- film measure --load against a real server, and film load --compare ------------------------------------------


def test_measure_load_against_llama_cpp_records_every_request_and_compare_prints_every_figure(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT
    from render.measure.load import read_load
    from render.tools.llama_server import LlamaServer, write_tiny_model

    model = write_tiny_model(tmp_path / "tiny.gguf", context=2048)
    out = tmp_path / "load.yaml"
    again = tmp_path / "again.yaml"
    with LlamaServer(model, context=2048, slots=4) as server:
        results = [subprocess.run([sys.executable, "-m", "render.cli", "measure", "--load", "--base-url", server.url,
                                   "--model", "tiny-random-llama", "--prompt-tokens", "64", "--answer-tokens", "8",
                                   "--rate", "4", "--requests", "30", "--seed", "2", "--out", str(path)], cwd=ROOT,
                                  capture_output=True, text=True, timeout=300) for path in (out, again)]
    result = results[0]
    assert result.returncode == 0, result.stderr
    # The same seed again on the same server: the same arrivals and lengths, but prompts no cache of the first run's
    # can serve (llama.cpp keeps finished prompts in memory): the server's own count of cached tokens says so.
    assert results[1].returncode == 0 and "from its cache" not in results[1].stdout, results[1].stdout
    repeated = read_load(again).requests
    assert all(timed.cached_tokens is not None and timed.cached_tokens < 0.5 * timed.prompt_tokens
               for timed in repeated), [timed.cached_tokens for timed in repeated]
    assert f"wrote {out}: 30 requests timed (0 failed)" in result.stdout.replace(str(ROOT) + "/", "")
    dataset = read_load(out)
    assert len(dataset.requests) == 30 and dataset.rate == 4 and dataset.model_reported == "tiny-random-llama"
    planned = poisson(4, 30, Lengths(64), Lengths(8), seed=2)
    for timed, asked in zip(dataset.requests, planned):
        assert 0 < timed.ttft_seconds <= timed.e2e_seconds and timed.answer_tokens == 8
        assert abs(timed.prompt_tokens - 64) <= 3  # the server's own count, as calibrated
        assert timed.arrival_seconds >= asked.arrival - 0.05  # sent when its arrival came, not before
    arrivals = [timed.arrival_seconds for timed in dataset.requests]
    assert arrivals == sorted(arrivals)
    compared = film_load("--compare", str(out), "--kv-tokens", "8192", "--max-num-seqs", "4")
    assert compared.returncode == 0, compared.stderr
    names = [line.split("  ")[0] for line in compared.stdout.splitlines()[1:]]
    assert names == ["TTFT p50 (s)", "TTFT p90 (s)", "TTFT p99 (s)", "TPOT mean (s)", "TPOT p50 (s)", "TPOT p90 (s)",
                     "end to end p50 (s)", "end to end p90 (s)"], compared.stdout
    assert all(re.search(r"[+−]\d+\.\d%$", line) for line in compared.stdout.splitlines()[1:]), compared.stdout


def test_a_damaged_load_dataset_is_one_message_with_its_line(tmp_path):
    from render.measure.load import read_load

    path = tmp_path / "load.yaml"
    path.write_text("kind: load\nrate: 2\nrequests:\n  - {arrival_seconds: 0.5, prompt_tokens: 64, answer_tokens: 8, "
                    "ttft_seconds: 0.1, e2e_seconds: 0.3}\n  - {arrival_seconds: 0.2, prompt_tokens: 64, "
                    "answer_tokens: 8, ttft_seconds: 0.1, e2e_seconds: 0.3}\n")
    with pytest.raises(FilmError, match=r"load.yaml:5: sent before the request above"):
        read_load(path)
    path.write_text("kind: load\nrequests:\n  - {arrival_seconds: 0.5, prompt_tokens: -1, answer_tokens: 8, "
                    "ttft_seconds: 0.1, e2e_seconds: 0.3}\n")
    with pytest.raises(FilmError, match=r"load.yaml:3: prompt_tokens is -1; it must be a number from 1"):
        read_load(path)
    path.write_text("id: x\n")
    with pytest.raises(FilmError, match="not a load dataset"):
        read_load(path)


def test_a_runs_gaps_are_each_requests_own_differences_in_order():
    """A run's inter-token gaps (made as one difference of every token's time, the gaps across two requests left out)
    are each request's np.diff in turn, for requests of no, one and many tokens, first, last and between."""
    from render.serving.simulate import token_gaps

    draw = np.random.default_rng(3)
    for lengths in ([0, 3, 1, 0, 5, 0], [1], [0], [4, 4], [0, 0, 2], [2, 0, 0], list(draw.integers(0, 6, 200))):
        times = [np.sort(draw.random(length)) * 100 for length in lengths]
        gaps, counts = token_gaps(times)
        assert counts.tolist() == [max(length - 1, 0) for length in lengths]
        expected = np.concatenate([np.diff(each) for each in times])
        assert gaps.shape == expected.shape and np.array_equal(gaps, expected), lengths
