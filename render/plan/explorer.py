"""The numbers a reader of the film's page can move: every stop of every control, for every GPU and
data-type pill, computed here by the roofline module and written by the project's formatter.

The page's script only looks these up (no second implementation of the maths in JavaScript), and
at the film's own settings every number equals the plan's.

    prompt slider     16 to 131,072 tokens (powers of two, and the film's own prompt): prefill's
                      operations, time to first token, attention's share, its point on the roofline
    batch slider      1 to 512 users (powers of two, and the film's batch): a decode step's time,
                      tokens per second, bytes per step (W + B·C·k), its point on the roofline
    context slider    cached tokens each user rereads (0 to 131,072, and the measured long prompt): the
                      decode step's bytes and the cache's share of them
    cache slider      the cache block's own: a prompt kept in one user's cache (the context slider's stops),
                      against the weights (C·k ÷ W), and what it does to that user's decode
    answer slider     an answer of n tokens: TTFT + (n - 1)·TPOT, its terms written to the digits that add up to the
                      total, and the share of it spent decoding
    pills             every catalog GPU the model fits on (the film's first, then its roofline pills),
                      as many of it as it needs; every data type it fits in
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from render import formatting as fmt
from render.specs import roofline as rl
from render.specs.catalog import Catalog
from render.specs.types import Deployment

PROMPT_STOPS = tuple(2**power for power in range(4, 18))          # 16 ... 131,072
BATCH_STOPS = tuple(2**power for power in range(0, 10))           # 1 ... 512
CONTEXT_STOPS = (0, 256, 1_024, 4_096, 16_384, 32_768, 65_536, 131_072)
ANSWER_STOPS = (1, 10, 50, 100, 200, 500, 1_000, 2_000, 4_000)
ANSWER_TOKENS = 200  # where the answer slider starts: the source explainer's worked example (a 200-token answer)

# The roofline chart's axes (log scales), in the page's SVG user units.
CHART_WIDTH, CHART_HEIGHT, CHART_MARGIN = 640, 360, 56
CHART_LEFT = 90  # room for the FLOP/s ticks ("10,000") and the axis title, large enough to read on a phone
INTENSITY_RANGE = (0.1, 1e6)          # operations per byte: every stop of every pill (prefill of 131,072 tokens of a
                                      # mixture of experts reaches 524,288; decode with a long cache 0.37)
FLOPS_RANGE = (1e11, 1e16)            # FLOP/s per GPU: 0.1 to 10,000 TFLOP/s


def with_stops(stops: tuple[int, ...], values: tuple[int, ...]) -> tuple[int, ...]:
    """The stops with the film's own values among them (so the page and each step open where the film is), each in
    place of a stop within 10% of it (2,000 tokens instead of 2,048: no two stops a step apart that say the same)."""
    kept = (stop for stop in stops if not any(0 < abs(stop - value) <= 0.1 * value for value in values))
    return tuple(sorted({*kept, *values}))


def chart_point(intensity: float, flops: float) -> tuple[float, float]:
    """Where (intensity, attainable FLOP/s) lies on the page's log-log chart."""
    def scale(value: float, low: float, high: float) -> float:
        value = min(max(value, low), high)
        return (math.log10(value) - math.log10(low)) / (math.log10(high) - math.log10(low))

    x = CHART_LEFT + scale(intensity, *INTENSITY_RANGE) * (CHART_WIDTH - CHART_LEFT - CHART_MARGIN)
    y = CHART_HEIGHT - CHART_MARGIN - scale(flops, *FLOPS_RANGE) * (CHART_HEIGHT - 2 * CHART_MARGIN)
    return round(x, 1), round(y, 1)


@dataclass(frozen=True)
class PrefillStop:
    tokens: int
    ops: str              # "33 trillion"
    ops_scientific: str   # "3.3|13": 3.3 × 10¹³, as the filled formula ends
    ttft: str             # "34 ms"
    attention_share: str  # "3%"
    ops_per_byte: str
    bound: str            # "compute" or "memory"
    fits: bool
    unfit: str            # what does not fit and by how much: "<needed per GPU>|<times what one holds>", "" if it fits
    point: tuple[float, float]
    ops_per_gpu: str      # "3.3|13": each GPU's share of the operations, as the time's filled formula writes it
    arithmetic: str       # those operations at peak: "34 ms"
    bytes: str            # what each GPU reads and writes: "16 GB"
    reading: str          # those bytes at the bandwidth: "4.8 ms"


@dataclass(frozen=True)
class DecodeStop:
    batch: int
    context: int
    step: str             # "5.4 ms"
    tokens_per_second: str
    bytes_per_step: str   # per GPU
    weights: str          # W_read / T
    cache: str            # B·C·k_T
    cache_share: str      # of the step's bytes
    ops_per_byte: str
    bound: str
    fits: bool
    unfit: str
    point: tuple[float, float]
    ops_per_gpu: str      # "1.0|12": each GPU's share of the step's operations (2PB / T)
    arithmetic: str       # those operations at peak
    reading: str          # the step's bytes at the bandwidth


@dataclass(frozen=True)
class AnswerStop:
    tokens: int
    latency: str          # TTFT + (n - 1)·TPOT
    decoding_share: str   # of that, the (n - 1)·TPOT
    terms: str            # "34|4.87|ms": TTFT and TPOT in the total's unit, to the digits that add up to `latency`


@dataclass(frozen=True)
class DeploymentView:
    """One pill's numbers at every stop."""

    key: str              # "h100-sxm/1/bf16"
    gpu: str              # the pill's words: "H100", "2× A100"
    dtype: str
    label: str            # "H100 SXM · Llama 3.1 8B · BF16"
    gpu_name: str         # "H100 SXM", "2× H200 SXM"
    peak: str
    bandwidth: str
    ridge: str
    weights: str
    kv_per_token: str
    memory: str           # one GPU's, in the unit what it must hold is written in: "86 GB (80 GiB)"
    gpus: int             # T, the GPUs the model is split over
    # The inputs the filled formulas show: P, L, d of 2PN + 2LdN²; k and W of C·k ÷ W in whole bytes; k_T, one GPU's
    # share of k (B·C·k_T is what each GPU rereads)
    parameters: str       # "8.03|9"
    layers: str           # "32"
    attention_width: str  # "4,096"
    kv_bytes: str         # "131,072"
    weight_bytes: str     # "1.61|10"
    kv_per_gpu: str       # "128 KiB"
    roof: tuple[tuple[float, float], ...]   # the chart's roof: slope to the ridge, then flat
    ridge_point: tuple[float, float]
    prefill: tuple[PrefillStop, ...]        # per prompt stop
    decode: tuple[tuple[DecodeStop, ...], ...]  # per batch stop, per context stop
    ridge_batch: tuple[str, ...]            # per context stop: "371" or "never"
    cache_to_weights: tuple[str, ...]            # per context stop: one user's cache against the weights, C·k ÷ W
    cache_bytes: tuple[str, ...]                 # per context stop: one user's cache, C·k (every GPU's together)
    answers: tuple[tuple[AnswerStop, ...], ...]  # per prompt stop, per answer stop (batch 1, the prompt cached)


@dataclass(frozen=True)
class Explorer:
    default: str                            # the film's own deployment's key
    prompt_stops: tuple[int, ...]
    batch_stops: tuple[int, ...]
    context_stops: tuple[int, ...]
    answer_stops: tuple[int, ...]
    start: dict[str, int]                   # each slider's starting stop: the settings the source's maths speaks of
    steps: dict[str, dict[str, int]]        # each beat's step: the stop it opens each slider at (the rest at start)
    gpus: tuple[str, ...]                   # GPU pill ids, the film's first
    dtypes: tuple[str, ...]
    deployments: dict[str, DeploymentView]  # every (GPU, data type) that fits, by key

    def stops_of(self, slider: str) -> tuple[int, ...]:
        return {"prompt": self.prompt_stops, "batch": self.batch_stops, "context": self.context_stops,
                "answer": self.answer_stops}[STOPS_OF[slider]]


def key_of(deployment: Deployment) -> str:
    return f"{deployment.gpu.id}/{deployment.gpus}/{deployment.dtype.id}"


# The sliders, each with its stops: the cache block's own slider moves over the context slider's stops.
SLIDERS = ("prompt", "batch", "context", "cache", "answer")
STOPS_OF = {"prompt": "prompt", "batch": "batch", "context": "context", "cache": "context", "answer": "answer"}


def explore(catalog: Catalog, deployment: Deployment, pills: tuple[str, ...], start: dict[str, int],
            steps: dict[str, dict[str, int]], kv_tokens: int) -> Explorer:
    """Every pill's numbers at every stop, around the film's own deployment. `start`: where each slider of SLIDERS
    starts; `steps`: the values each beat's step opens sliders at. Every one of those values is made a stop."""
    spoken = {group: tuple({value for settings in (start, *steps.values()) for slider, value in settings.items()
                            if STOPS_OF[slider] == group}) for group in ("prompt", "batch", "context", "answer")}
    prompts, batches = with_stops(PROMPT_STOPS, spoken["prompt"]), with_stops(BATCH_STOPS, spoken["batch"])
    contexts, answers = with_stops(CONTEXT_STOPS, spoken["context"]), with_stops(ANSWER_STOPS, spoken["answer"])
    stops = {"prompt": prompts, "batch": batches, "context": contexts, "answer": answers}
    gpu_order = [deployment.gpu.id, *[gpu for gpu in pills if gpu != deployment.gpu.id],
                 *[gpu for gpu in catalog.gpus if gpu != deployment.gpu.id and gpu not in pills]]
    views: dict[str, DeploymentView] = {}
    shown_gpus = []
    for gpu_id in gpu_order:
        for dtype in catalog.dtypes.values():
            candidate = replace(deployment, gpu=catalog.gpu(gpu_id),
                                dtype=dtype if dtype.id != deployment.dtype.id else deployment.dtype)
            if not rl.fits(candidate, kv_tokens):
                count = rl.smallest_gpu_count(candidate, kv_tokens)
                if count is None:
                    continue
                candidate = replace(candidate, gpus=count)
            views[key_of(candidate)] = view_of(candidate, prompts, batches, contexts, answers)
            if gpu_id not in shown_gpus:
                shown_gpus.append(gpu_id)
    return Explorer(
        default=key_of(deployment), prompt_stops=prompts, batch_stops=batches, context_stops=contexts,
        answer_stops=answers,
        start={slider: stops[STOPS_OF[slider]].index(start[slider]) for slider in SLIDERS},
        steps={beat: {slider: stops[STOPS_OF[slider]].index(value) for slider, value in settings.items()}
               for beat, settings in steps.items()},
        gpus=tuple(shown_gpus), dtypes=tuple(catalog.dtypes), deployments=views)


def wait(seconds: float) -> str:
    """A whole answer's wait: milliseconds to ten seconds ('1,438 ms', as the source's worked example), then seconds."""
    return fmt.milliseconds(seconds, short=True) if seconds < 10 else fmt.duration(seconds, short=True)


def latency_terms(ttft: float, tpot: float, tokens: int) -> str:
    """TTFT and TPOT as the page writes them in TTFT + (n − 1)·TPOT beside its total (`wait`), as "TTFT|TPOT|unit":
    both in the total's unit, each to two significant figures, with more where the sum, written as the total is,
    would not be the total as shown ('34 ms + 199 × 4.87 ms' beside '1,003 ms', where '4.9 ms' would add up to
    1,009). The multiplied term gets the extra digits first: its rounding is multiplied too."""
    latency = rl.latency(ttft, tpot, tokens)
    total = wait(latency)
    unit, scale = ("ms", 1e3) if latency < 10 else ("s", 1.0)
    first_digits, step_digits = significant_digits(ttft * scale), significant_digits(tpot * scale)
    choices = [(first_digits + extra - more, step_digits + more) for extra in range(8) for more in range(extra, -1, -1)]
    def adds_up(first_at: int, step_at: int) -> bool:
        return tokens == 1 or wait((round(ttft * scale, first_at) + (tokens - 1) * round(tpot * scale, step_at))
                                   / scale) == total

    for first_at, step_at in choices:
        if adds_up(first_at, step_at):
            break
    # Two times of one size are written to the same decimals ('0.5217 ms + 3,999 × 0.5217 ms', never '0.52 ms + …
    # 0.5217 ms' for what reads as one figure twice); of different sizes, each to its own ('34 ms + 199 × 4.87 ms').
    if first_at < step_at and ttft > 0 and tpot > 0 and \
            math.floor(math.log10(ttft * scale)) == math.floor(math.log10(tpot * scale)) and adds_up(step_at, step_at):
        first_at = step_at
    return f"{round(ttft * scale, first_at):,.{first_at}f}|{round(tpot * scale, step_at):,.{step_at}f}|{unit}"


def significant_digits(value: float, figures: int = 2) -> int:
    """The decimals that show `value` to `figures` significant figures (4.87 -> 1 for two; 0.0049 -> 4)."""
    if value <= 0:
        return 0
    return max(0, figures - 1 - math.floor(math.log10(value)))


def unfit(deployment: Deployment, kv_tokens: float) -> str:
    """What the weights and `kv_tokens` of cache need on each GPU, and that against what one holds, as
    "1,168 GB|14×"; '' when they fit (the page says the sentence around it)."""
    if rl.fits(deployment, kv_tokens):
        return ""
    needed, held = rl.memory_needed_per_gpu(deployment, kv_tokens), deployment.gpu.memory_bytes
    return f"{fmt.gigabytes(needed, short=True)}|{fmt.times(needed / held, short=True)}"


def view_of(deployment: Deployment, prompts, batches, contexts, answers) -> DeploymentView:
    gpu, model, dtype, gpus = deployment.gpu, deployment.model, deployment.dtype, deployment.gpus
    peak, bandwidth = rl.peak_flops(gpu, dtype), gpu.bandwidth
    ridge = rl.ridge_ops_per_byte(gpu, dtype)
    prefill = [prefill_stop(deployment, tokens) for tokens in prompts]
    decode = [tuple(decode_stop(deployment, size, cached) for cached in contexts) for size in batches]
    at_ridge = tuple(fmt.count(found) if (found := rl.batch_size_at_ridge(deployment, cached)) else "never"
                     for cached in contexts)
    answer_rows = []
    for tokens in prompts:
        ttft = rl.time_on(deployment, rl.prefill(deployment, tokens)).seconds
        tpot = rl.time_on(deployment, rl.decode_step(deployment, 1, tokens)).seconds
        answer_rows.append(tuple(
            AnswerStop(n, wait(rl.latency(ttft, tpot, n)),
                       fmt.percent((n - 1) * tpot / rl.latency(ttft, tpot, n), short=True),
                       latency_terms(ttft, tpot, n)) for n in answers))
    low, high = INTENSITY_RANGE
    roof = (chart_point(low, attainable(deployment, low)), chart_point(ridge, peak), chart_point(high, peak))
    return DeploymentView(
        key=key_of(deployment), gpu=f"{gpus}× {gpu.short_name}" if gpus > 1 else gpu.short_name, dtype=dtype.name,
        label=f"{f'{gpus}× ' if gpus > 1 else ''}{gpu.name} · {model.name} · {dtype.name}",
        gpu_name=f"{gpus}× {gpu.name}" if gpus > 1 else gpu.name,
        peak=fmt.teraflops(peak, short=True), bandwidth=fmt.bandwidth(bandwidth, short=True),
        ridge=fmt.integer(ridge, short=True), weights=fmt.gigabytes(rl.weight_bytes(model, dtype), short=True),
        kv_per_token=fmt.bytes_per_token(rl.kv_bytes_per_token(model, dtype), short=True),
        memory=f"{fmt.gigabytes(gpu.memory_bytes, short=True)} ({gpu.memory_gib:g} GiB)", gpus=gpus,
        parameters=fmt.scientific(rl.active_parameters(model)), layers=fmt.count(model.layers),
        attention_width=fmt.count(model.attention_width), kv_bytes=fmt.count(rl.kv_bytes_per_token(model, dtype)),
        weight_bytes=fmt.scientific(rl.weight_bytes(model, dtype)),
        kv_per_gpu=fmt.bytes_per_token(rl.kv_bytes_per_token_per_gpu(model, dtype, gpus), short=True),
        roof=roof, ridge_point=chart_point(ridge, peak), prefill=tuple(prefill), decode=tuple(decode),
        ridge_batch=at_ridge, answers=tuple(answer_rows),
        cache_to_weights=tuple(fmt.percent(cached * rl.kv_bytes_per_token(model, dtype) / rl.weight_bytes(model, dtype),
                                           short=True) for cached in contexts),
        cache_bytes=tuple(fmt.gigabytes(cached * rl.kv_bytes_per_token(model, dtype), short=True)
                          for cached in contexts))


def attainable(deployment: Deployment, intensity: float) -> float:
    """The roofline's height at an intensity: the lower of the peak and what the bandwidth feeds."""
    return min(rl.peak_flops(deployment.gpu, deployment.dtype), intensity * deployment.gpu.bandwidth)


def prefill_stop(deployment: Deployment, tokens: int) -> PrefillStop:
    """Prefill of a `tokens`-token prompt as the page shows it."""
    timing = rl.time_on(deployment, rl.prefill(deployment, tokens))
    intensity = timing.step.ops_per_byte
    return PrefillStop(
        tokens, fmt.large(timing.step.operations, short=True), fmt.scientific(timing.step.operations, 2),
        fmt.duration(timing.seconds, short=True),
        fmt.percent(rl.prefill_attention_fraction(deployment.model, tokens), short=True),
        fmt.ops_per_byte(intensity, short=True), timing.bound, rl.fits(deployment, tokens),
        unfit(deployment, tokens), chart_point(intensity, attainable(deployment, intensity)),
        fmt.scientific(timing.step.operations_per_gpu, 2), fmt.duration(timing.compute_seconds, short=True),
        fmt.gigabytes(timing.step.bytes, short=True), fmt.duration(timing.memory_seconds, short=True))


def decode_stop(deployment: Deployment, size: int, cached: int) -> DecodeStop:
    """A decode step of `size` users with `cached` tokens each as the page shows it."""
    model, dtype, gpus = deployment.model, deployment.dtype, deployment.gpus
    timing = rl.time_on(deployment, rl.decode_step(deployment, size, cached))
    weights = rl.weight_bytes_read(model, dtype, size, deployment.embedding_rows) / gpus
    cache = size * cached * rl.kv_bytes_per_token_per_gpu(model, dtype, gpus)
    intensity = timing.step.ops_per_byte
    return DecodeStop(
        size, cached, fmt.duration(timing.seconds, short=True),
        fmt.tokens_per_second(size / timing.seconds, short=True),
        fmt.gigabytes(timing.step.bytes, short=True), fmt.gigabytes(weights, short=True),
        fmt.gigabytes(cache, short=True), fmt.percent(cache / timing.step.bytes, short=True),
        fmt.ops_per_byte(intensity, short=True), timing.bound, rl.fits(deployment, size * cached),
        unfit(deployment, size * cached), chart_point(intensity, attainable(deployment, intensity)),
        fmt.scientific(timing.step.operations_per_gpu, 2), fmt.duration(timing.compute_seconds, short=True),
        fmt.duration(timing.memory_seconds, short=True))
