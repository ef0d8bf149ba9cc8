"""The storyboard's choices of words, named: each a filter a narration uses where the words depend on the numbers.

A beat's narration reads as a script (`[[busy]]{{ prefill|how_busy(spec) }}`) while the branch behind it lives
here, in Python, once: whether the GPUs' links, the arithmetic or memory hold prefill up; what one token reads;
how two GPUs compare; what the measurements say. Each takes the plan's groups as a template sees them (views that
record what they read) and returns words written by the formatter. tests/test_choices.py and tests/test_plan.py
read them across the choices, as the narration they make.
"""

from __future__ import annotations

from dataclasses import replace

from render import formatting as fmt
from render.plan.tracking import untracked
from render.serving.schedulers import SHORT, WORDS


def present(group) -> bool:
    """A group the plan may leave out (expected numbers, the medium prompt) is there."""
    return bool(group) and untracked(group) is not None  # (bool first: a view records that it was asked)


# -- prefill and decode ------------------------------------------------------------------------------------------


def how_busy(prefill, spec) -> str:
    """What holds a prefill up: the links between GPUs, or the arithmetic ("with every core busy"), or memory."""
    if prefill.communication_fraction >= 0.5:
        return "most of it between GPUs"
    if prefill.communication_fraction >= 0.1:
        return f"{fmt.fraction(prefill.communication_fraction)} of it between GPUs"
    if prefill.ops_per_byte >= spec.ridge_ops_per_byte:
        return "with every core busy"
    return "and even then the cores wait on memory"


def here_and_at_best(seconds: float, expected_seconds) -> str:
    """A ceiling's time, or (EFFICIENCY=) the time here beside it: '46 milliseconds here, 34 at best'."""
    if not present(expected_seconds):
        return fmt.duration(seconds)
    return f"{fmt.duration(expected_seconds)} here, {fmt.duration_beside(seconds, expected_seconds)} at best"


def reads_per_token(spec) -> str:
    """What one decode step reads: every weight, or a mixture of experts' share of them."""
    if spec.experts:
        return f"reads {fmt.part_of(spec.active_parameters, spec.parameters)} parameters"
    return f"rereads all {fmt.gigabytes(spec.weight_bytes)} of weights"


def between_gpus(fraction: float, of: str) -> str:
    """', most of each step between GPUs', ', a tenth of it between GPUs', or nothing."""
    if fraction >= 0.5:
        return f", most of {of} between GPUs"
    if fraction >= 0.1:
        return f", {fmt.fraction(fraction)} of {of} between GPUs"
    return ""


def needs(gpu, expected) -> str:
    """The verb before a decode step's time ('needs'); none when the expected rate is said instead."""
    return "" if present(expected) else fmt.verb(gpu, "needs")


def token_time(gpu, decode, expected) -> str:
    """At the time cue: a step's time and the links' share of it, or (EFFICIENCY=) the verb of the rate."""
    if present(expected):
        return fmt.verb(gpu, "manages")
    return f"{fmt.milliseconds(decode.step_seconds)} a token{between_gpus(decode.communication_fraction, 'it')},"


def token_rate(decode, expected) -> str:
    """At the rate cue, after 'about': tokens a second at best, or here and at best with the links' share."""
    if not present(expected):
        return f"{fmt.integer(decode.tokens_per_second)} a second"
    return (f"{fmt.integer(expected.decode.tokens_per_second)} a second here, "
            f"{fmt.integer(decode.tokens_per_second)} at best"
            f"{between_gpus(expected.decode.communication_fraction, 'each step')}")


# -- batching ----------------------------------------------------------------------------------------------------


def step_growth(here, spec, expected) -> str:
    """How the step grows from one user to the batch: 'only' for a dense model, the experts woken for a mixture."""
    grows = (f"the step grows {'from' if spec.experts else 'only from'} "
             f"{fmt.milliseconds(here.decode.step_seconds, unit=False)} to {fmt.milliseconds(here.batch.step_seconds)}"
             f"{' here' if present(expected) else ''}")
    if not spec.experts:
        return grows
    woken = here.batch.experts_read
    if fmt.integer(woken) == fmt.integer(spec.experts):
        experts = "every expert"
    elif woken >= 0.8 * spec.experts:
        experts = "nearly every expert"
    else:
        experts = f"{fmt.integer(woken)} of {fmt.count(spec.experts)} experts"
    return f"{grows}, waking {experts}"


def the_chips(spec) -> str:
    return "the GPUs" if spec.gpus > 1 else "the chip"


# -- wasted money ------------------------------------------------------------------------------------------------


def teraflops_against(framing) -> str:
    """'three times an A100's teraflops', 'the same teraflops as an H200'."""
    if fmt.times(framing.flops_ratio) == "the same":
        return f"the same teraflops as {fmt.with_article(framing.other)}"
    return f"{fmt.times(framing.flops_ratio)} {fmt.possessive(framing.other)} teraflops"


def bandwidth_against(framing) -> str:
    """'but only 1.6 times its bandwidth', 'and twice its bandwidth', 'but the same bandwidth'."""
    ratio = framing.bandwidth_ratio
    if fmt.times(ratio) == "the same":
        return "but the same bandwidth"
    if ratio < 1 or ratio < framing.flops_ratio:
        return f"but only {fmt.times(ratio)} its bandwidth"
    return f"and {fmt.times(ratio)} its bandwidth"


def decode_gets(framing) -> str:
    """What the bandwidth does for one user's decode: 'no faster', 'slower, not faster', '1.6 times faster'."""
    if fmt.times(framing.bandwidth_ratio) == "the same":
        return "no faster"
    if framing.bandwidth_ratio < 1:
        return "slower, not faster"
    return fmt.faster(framing.decode_speedup)


def while_on(framing, gpu, spec) -> str:
    """'while', 'while on four H100s' (the film's own GPU, several of it), or 'while on an H100' (the other)."""
    if framing.subject.id == gpu.id and spec.gpus == 1:
        return "while"
    return f"while on {fmt.with_article(gpu)}"


def waits(framing, gpu) -> str:
    return "still waits" if framing.subject.id == gpu.id else "waits"


def about_here(seconds: float, expected) -> str:
    """'0.8 seconds', or (EFFICIENCY=) 'about 1.1 seconds here'."""
    return f"about {fmt.duration(seconds)} here" if present(expected) else fmt.duration(seconds)


# -- the measurements --------------------------------------------------------------------------------------------


def with_prompts(dataset) -> str:
    """' with cold prompts', ' with cached prompts', or nothing where the dataset does not say."""
    return f" with {dataset.prompt_cache} prompts" if dataset.prompt_cache else ""


def first_token(dataset) -> str:
    return "token, thinking included," if dataset.reasoning else "word"


def short_waits(measured) -> str:
    """The short prompt's wait, and the middle one's: said once when both round to the same seconds."""
    about = "about " if measured.short.ttft_approximate else ""
    short = fmt.seconds(measured.short.ttft_seconds)
    medium = measured.medium
    if present(medium) and fmt.seconds(medium.ttft_seconds) == short:
        return f"{about}{short} for a short prompt or one of {fmt.round_down(medium.prompt_tokens)} tokens,"
    said = f"{about}{short} for a short prompt,"
    if present(medium):
        said += f" {fmt.seconds(medium.ttft_seconds)} for one of {fmt.round_down(medium.prompt_tokens)} tokens,"
    return said


def mostly(measured) -> str:
    return "mostly network" if measured.network_fraction > 0.5 else "mostly prefill"


def slower_or_faster(slowdown: float) -> str:
    return f"{fmt.percent(slowdown)} slower" if slowdown >= 0 else f"{fmt.percent(-slowdown)} faster"


def because_or_while(measured) -> str:
    """'because' when the cache's extra bytes explain the slowdown (within a quarter of it), else 'while'."""
    return "because" if abs(measured.slowdown - measured.long_kv_ratio) <= measured.long_kv_ratio / 4 else "while"


# -- under load (the extended cut) ------------------------------------------------------------------------------


def first_token_wait(load) -> str:
    """What continuous batching does to the slowest tenth's wait for a first token, beside static batching's."""
    static, continuous = load.static.ttft_p90_seconds, load.continuous.ttft_p90_seconds
    if fmt.duration(continuous) == fmt.duration(static):
        return f"though the slowest tenth still wait {fmt.duration(continuous)} for a first token"
    if continuous < static:
        return f"cutting the slowest tenth's first-token wait from {fmt.duration_beside(static, continuous)} " \
               f"to {fmt.duration(continuous)}"
    return f"though the slowest tenth wait {fmt.duration(continuous)} for a first token, not {fmt.duration(static)}"


def capacities(load, gpu) -> str:
    """Each scheduler's capacity at the objectives on the deployment's own GPUs, after their name: 'serves 18 requests
    a second with continuous batching, 26 chunked, static fewer than 1.8'; or that none meets them at any rate the
    sweep tries."""
    found = [(name, load.scheduler(name).capacity) for name in ("continuous", "chunked", "static")]
    met = [(name, capacity) for name, capacity in found if capacity is not None]
    missed = [name for name, capacity in found if capacity is None]
    if not met:
        return (f"{fmt.verb(gpu, 'meets')} them under no scheduler, not even at {fmt.approx(load.rates[0])} requests "
                f"a second")
    said = [f"{fmt.approx(met[0][1])} requests a second with {WORDS[met[0][0]]}"]
    said += [f"{fmt.approx(capacity)} {SHORT[name]}" for name, capacity in met[1:]]
    # (one that misses them at the sweep's lowest rate may meet them at a lower one: said so, not "never")
    said += [f"{SHORT[name]} fewer than {fmt.approx(load.rates[0])}" for name in missed]
    return f"{fmt.verb(gpu, 'serves')} " + ", ".join(said)


def disaggregation(load, gpu) -> str:
    """DistServe's split in a sentence, with its own number: its GPUs' capacity, and each GPU's share of it."""
    split = load.disaggregated
    hardware = replace(untracked(gpu), count=split.gpus)
    if split.capacity is None:
        return (f"split prefill from decode, as DistServe does, and {fmt.with_article(hardware)} "
                f"miss them{' too' if load.best is None else ''}")
    return (f"split prefill from decode, as DistServe does, and {fmt.with_article(hardware)} take "
            f"{fmt.approx(split.capacity)}, {fmt.approx(split.capacity_per_gpu)} a GPU")


PHRASES = {function.__name__: function for function in (
    how_busy, here_and_at_best, reads_per_token, needs, token_time, token_rate, step_growth, the_chips,
    teraflops_against, bandwidth_against, decode_gets, while_on, waits, about_here, with_prompts, first_token,
    short_waits, mostly, slower_or_faster, because_or_while, first_token_wait, capacities, disaggregation)}
