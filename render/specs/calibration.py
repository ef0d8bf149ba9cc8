"""What a deployment achieves, fitted from its measured timings: the fraction of its ceiling it reaches.

Pure maths (no Manim, no files). Every number the roofline gives is a ceiling; a measured endpoint
reaches part of it, and waits for things the roofline does not model. Two linear models, each fitted
by bounded, weighted least squares:

    TTFT(N)        = overhead + (operations of prefilling N tokens / peak) / compute efficiency
    decode step(C) = (bytes one step reads with C cached tokens / bandwidth) / memory efficiency

per measured prompt of N tokens, and per measured decode rate (a step is 1 / tokens per second;
C is the prompt's tokens, which the step rereads; the few hundred it generates are left out). The
overhead is what a request waits for outside prefill: network, queueing, the chat template. The
unknowns enter linearly (the overhead, and one over each efficiency), so the fit is exact linear
algebra, bounded below by zero: with one or two unknowns, each set of them left free is solved and the
best that keeps every one at or above zero is the answer (what scipy's `lsq_linear` and `nnls` find,
as the tests check; importing scipy.optimize cost 0.4 s of every plan, so of every still).

A figure is weighted by its precision as written: half a unit of its last digit ("about 0.3 s" is
0.3 +- 0.05), and at least 1% (run-to-run noise). Each result's uncertainty is the fit's covariance,
scaled up by the residuals where there are more points than unknowns (and by Student's t for their
number); where there are exactly as many, it comes from the figures' precision alone, and the fit
says so.

Those are the roofline's overlapped steps: prefill bound by its arithmetic, decode by its memory traffic, the other
hidden underneath. Where that model does not describe the figures (a CPU's small batches: the bench's llama.cpp
takes nearly twice as long for four streams' decode step as for one's, which a memory-bound step cannot), each phase
is fitted by its own terms, over both phases at once (phase_fit): prefill keeps its weight reads under its
arithmetic, while decode's arithmetic and memory traffic may follow one another (decode overlap 0), and every engine
step may spend a fixed time besides (the step overhead s; the request overhead r is TTFT's alone):

    TTFT(N)           = r + s + max(arithmetic(N) / compute efficiency, memory(N) / memory efficiency)
    decode step(C, k) =     s + arithmetic(C, k) / compute efficiency + memory(C, k) / memory efficiency   (overlap 0)
                        or  s + max(arithmetic(C, k) / compute efficiency, memory(C, k) / memory efficiency)

Where there are concurrency levels and prompts of several lengths to tell them apart, of the models that describe
every figure (the roofline's own among them, where it describes its phases), the one with the least Akaike criterion
(chi-square + 2 x unknowns) is taken: an unknown more must buy its keep. Where the roofline's own is taken, or there
are no levels, each phase is fitted on its own, as above. EFFICIENCY= carries the fit's decode overlap and step
overhead to the roofline (rl.achieved) for the expected numbers, and to the serving simulator, which runs each step
by its phase. A step's overhead and its weight reads are one constant in a decode step: the fit tells them apart by
how much of the step grows with the cached tokens, so only where the sweep's contexts are long enough to say.

The check of the decode fit is its slope: decode time against cached context is a line whose slope
is the KV bytes per token over the achieved bandwidth. Fitted freely (two or more contexts), the
slope gives an efficiency of its own, which should agree with the one from the step times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from render.specs import roofline as rl
from render.specs.catalog import Catalog, MeasuredDataset
from render.specs.fitting import Estimate, LinearFit, inverse, predicted, weighted_fit, written_precision
from render.specs.types import Deployment

# A share of a ceiling the fit may report: above ten times the datasheet no deployment is what is assumed, and a share
# whose uncertainty is larger than itself says nothing (flat TTFTs gave "300,527% ± 23,304,099,824%").
MOST_PLAUSIBLE_SHARE = 10.0


@dataclass(frozen=True)
class Point:
    """One measured figure against what the fit gives for it."""

    kind: str              # "ttft" or "decode"
    prompt_tokens: int
    streams: int           # 1, or the streams of a concurrency level
    measured: float        # seconds (TTFT, or one decode step)
    precision: float       # its one-sigma precision, as written
    fitted: float
    approximate: bool = False

    @property
    def residual(self) -> float:
        return self.measured - self.fitted

    @property
    def relative_residual(self) -> float:
        return self.residual / self.fitted if self.fitted else math.inf


@dataclass(frozen=True)
class KvSlope:
    """Decode time against cached context, fitted freely: its slope beside what the KV bytes predict."""

    seconds_per_token: Estimate        # measured: extra step time per cached token
    predicted_seconds_per_token: float  # KV bytes per token / (memory efficiency x bandwidth)
    efficiency: Estimate               # the fraction of bandwidth the slope alone implies

    @property
    def ratio(self) -> float:
        return self.seconds_per_token.value / self.predicted_seconds_per_token


@dataclass(frozen=True)
class Calibration:
    """A measured dataset's fit against one deployment's ceilings. None where the data cannot say."""

    dataset_id: str
    deployment: Deployment
    overhead_seconds: Estimate | None
    compute_efficiency: Estimate | None
    memory_efficiency: Estimate | None
    kv_slope: KvSlope | None
    points: tuple[Point, ...]
    notes: tuple[str, ...]
    prefill_fit: LinearFit | None = None  # (overhead, 1 / compute efficiency) and their covariance
    decode_fit: LinearFit | None = None   # (1 / memory efficiency,) and its variance
    overlap: float = 1.0                  # of prefill's shorter part hidden (the roofline's 1)
    phased: PhasedFit | None = None       # both phases at once, each by its own terms (phase_fit), where taken

    @property
    def phase_fit(self) -> LinearFit | None:
        """The per-phase fit's (r, [s,] 1 / compute efficiency, 1 / memory efficiency) and their covariance."""
        return self.phased.fit if self.phased else None

    @property
    def phase_model(self) -> PhaseModel | None:
        return self.phased.model if self.phased else None

    @property
    def decode_overlap(self) -> float | None:
        """Of a decode step's shorter part, the share hidden (None: as prefill's)."""
        return self.phased.model.decode_overlap if self.phased else None

    @property
    def step_overhead_seconds(self) -> Estimate | None:
        """Every engine step's fixed time besides its work (None: not fitted)."""
        return self.phased.estimates[1] if self.phased else None

    @property
    def prefill_exactly_determined(self) -> bool:
        fit = self.phase_fit or self.prefill_fit
        return fit is not None and fit.exactly_determined

    @property
    def decode_exactly_determined(self) -> bool:
        fit = self.phase_fit or self.decode_fit
        return fit is not None and fit.exactly_determined

    def predicted_ttft(self, prompt_tokens: float) -> Estimate | None:
        """What a prompt of this length should wait for its first token, by the fit."""
        if self.phased is not None:
            return self.phased.predicted(self.deployment, rl.prefill(self.deployment, prompt_tokens))
        if self.prefill_fit is None or self.compute_efficiency is None:
            return None
        return predicted(self.prefill_fit, np.array([1.0, prefill_compute_seconds(self.deployment, prompt_tokens)]))

    def predicted_step(self, context: float, streams: int = 1) -> Estimate | None:
        """One decode step's seconds with `streams` sequences of `context` cached tokens, by the fit."""
        if self.phased is not None:
            return self.phased.predicted(self.deployment, rl.decode_step(self.deployment, streams, context))
        if self.decode_fit is None or self.memory_efficiency is None:
            return None
        return predicted(self.decode_fit, np.array([decode_memory_seconds(self.deployment, context, streams)]))

    def predicted_throughput(self, context: float, streams: int) -> Estimate | None:
        """All the streams' tokens a second together, by the fit."""
        step = self.predicted_step(context, streams)
        return None if step is None else Estimate(streams / step.value, streams * step.uncertainty / step.value ** 2)

    @property
    def achieved_flops(self) -> float | None:
        return self.compute_efficiency.value * rl.peak_flops(self.deployment.gpu, self.deployment.dtype) \
            if self.compute_efficiency else None

    @property
    def achieved_bandwidth(self) -> float | None:
        return self.memory_efficiency.value * self.deployment.gpu.bandwidth if self.memory_efficiency else None

    def overhead_share(self, prompt_tokens: int) -> float | None:
        """The part of a prompt's fitted TTFT that is not prefill."""
        ttft = self.predicted_ttft(prompt_tokens)
        if self.overhead_seconds is None or self.compute_efficiency is None or ttft is None:
            return None
        return self.overhead_seconds.value / ttft.value


@dataclass(frozen=True)
class PhaseModel:
    """Which of the per-phase models (phase_fit): decode's overlap (1 or 0), and whether a step overhead is fitted."""

    decode_overlap: float
    step_overhead: bool

    @property
    def unknowns(self) -> int:
        return 4 if self.step_overhead else 3


ROOFLINE_MODEL = PhaseModel(1.0, False)  # the roofline's overlapped steps (fitted phase by phase: fit_prefill, …)
PHASE_MODELS = (ROOFLINE_MODEL, PhaseModel(0.0, False), PhaseModel(1.0, True), PhaseModel(0.0, True))


def phase_row(deployment: Deployment, step: rl.Step, model: PhaseModel, shares: tuple[float, float]) \
        -> tuple[np.ndarray, float]:
    """A step's row of the per-phase design, (the request overhead's 1 where it prefills, [the step overhead's 1,]
    arithmetic seconds, memory seconds), each at the datasheet's ceilings (so their fitted coefficients are one over
    the shares), and its fixed seconds (the all-reduces). Where the step's phase overlaps, only the part that binds at
    `shares` (compute, memory) is in it."""
    timing = rl.time_on(deployment, step)
    arithmetic, memory = timing.compute_seconds, timing.memory_seconds
    if step.prefilling or model.decode_overlap == 1:
        arithmetic, memory = (arithmetic, 0.0) if arithmetic / shares[0] >= memory / shares[1] else (0.0, memory)
    row = [1.0 if step.prefilling else 0.0] + ([1.0] if model.step_overhead else []) + [arithmetic, memory]
    return np.array(row), timing.communication_seconds


# A fit whose residuals its figures' precision cannot explain (chi-square beyond its 99.9% point) and that misses a
# figure by more than this share is not a description of the data: its shares are refused, and the figure named.
MISFIT_SHARE = 0.25
MISFIT_P = 0.001


def misfit(points: list[Point], unknowns: int) -> Point | None:
    """The point a fit misses worst, where the fit does not describe its figures: more of them than unknowns, the
    residuals' chi-square (each against the figure's own precision) improbable at MISFIT_P, and a miss beyond
    MISFIT_SHARE of the fitted value (the roofline is an ideal: a 10% miss of a real server is the model's to make)."""
    freedom = len(points) - unknowns
    if freedom <= 0:
        return None
    chi_square = sum((point.residual / point.precision) ** 2 for point in points)
    worst = max(points, key=lambda point: abs(point.residual / point.precision))
    from scipy.special import chdtri  # (chi-square's quantile; imported here: 0.6 s a command that fits nothing)

    if chi_square > float(chdtri(freedom, MISFIT_P)) and abs(worst.relative_residual) > MISFIT_SHARE:
        return worst
    return None


def prefill_compute_seconds(deployment: Deployment, prompt_tokens: float) -> float:
    """Prefill's arithmetic at the datasheet peak, all GPUs together: the part an efficiency scales."""
    return rl.time_on(deployment, rl.prefill(deployment, prompt_tokens)).compute_seconds


def decode_memory_seconds(deployment: Deployment, context: float, streams: int = 1) -> float:
    """One decode step's memory traffic at the datasheet bandwidth (weights once, each stream's cache)."""
    return rl.time_on(deployment, rl.decode_step(deployment, streams, context)).memory_seconds


def deployment_of(dataset: MeasuredDataset, catalog: Catalog, gpu: str | None = None, gpus: int = 1,
                  embedding_rows: bool = False) -> Deployment:
    """The deployment a dataset's timings are compared with: its model and precision on its GPU (or `gpu`), reading
    the bytes the storyboard's convention says a step reads (`embedding_rows`)."""
    deployment = Deployment(catalog.gpu(gpu or dataset.compared_gpu), catalog.model(dataset.model),
                            catalog.dtype(dataset.precision), gpus, embedding_rows)
    rl.check_gpu_count(deployment)
    return deployment


@dataclass(frozen=True)
class PhaseFit:
    """One phase's fit: its estimates (overhead and compute for prefill, memory and the KV slope for decode), the
    figures on its line, what it says, and why the overlapped model is refused (None: it is not)."""

    first: Estimate | None
    second: Estimate | KvSlope | None
    fit: LinearFit | None
    points: list[Point]
    notes: list[str]
    refusal: str | None = None


def fit_prefill(deployment: Deployment, timed: list) -> PhaseFit:
    """TTFT against the ideal prefill's arithmetic time: the overhead (intercept) and the share of peak (1 / slope)."""
    lengths = {prompt.prompt_tokens for prompt in timed}
    if len(lengths) == 1:
        return PhaseFit(None, None, None, [], [
            f"one prompt length ({next(iter(lengths)):,} tokens) cannot separate the overhead from prefill's "
            "arithmetic: measure two or more lengths, far apart (say 64 and 4,096 tokens)"])
    if not lengths:
        return PhaseFit(None, None, None, [], ["no TTFT was measured: the overhead and prefill's arithmetic are "
                                               "unknown"])
    ideal = np.array([prefill_compute_seconds(deployment, prompt.prompt_tokens) for prompt in timed])
    measured = np.array([prompt.ttft_seconds for prompt in timed])
    sigma = np.array([written_precision(prompt.ttft_seconds, prompt.ttft_approximate, prompt.ttft_written)
                      for prompt in timed])
    fit = weighted_fit(np.column_stack([np.ones_like(ideal), ideal]), measured, sigma)
    overhead = Estimate(float(fit.coefficients[0]), math.sqrt(fit.covariance[0, 0]))
    compute = inverse(float(fit.coefficients[1]), float(fit.covariance[1, 1]))
    fitted = fit.coefficients[0] + fit.coefficients[1] * ideal
    points = [Point("ttft", prompt.prompt_tokens, 1, prompt.ttft_seconds, float(error), float(value),
                    prompt.ttft_approximate) for prompt, error, value in zip(timed, sigma, fitted)]
    missed = misfit(points, 2)
    if missed is not None:
        return PhaseFit(None, None, None, points, [], prefill_misfit_note(missed, timed, ideal))
    notes = [] if compute is not None else [
        "TTFT does not grow with the prompt here, so prefill's arithmetic cannot be told apart from the overhead: "
        "measure longer prompts (thousands of tokens)"]
    return PhaseFit(overhead, compute, fit, points, notes)


def decode_steps(dataset: MeasuredDataset) -> list[tuple[int, int, float, str | None]]:
    """Every decode rate measured: (cached tokens, streams, tokens a second, as written), one stream's first."""
    steps = [(prompt.prompt_tokens, 1, prompt.decode_tokens_per_second, prompt.decode_written)
             for prompt in dataset.prompts if prompt.decode_tokens_per_second]
    return steps + [(prompt.prompt_tokens, level.streams, level.decode_tokens_per_second, None)
                    for prompt in dataset.prompts for level in prompt.concurrency
                    if level.streams > 1 and level.decode_tokens_per_second]


def fit_decode(deployment: Deployment, every_step: list) -> PhaseFit:
    """A decode step's time against the ideal time to read its bytes: the share of bandwidth (1 / slope), and the
    check of it, the slope against cached context."""
    # A step at many streams may be bound by arithmetic, not bandwidth: only memory-bound steps measure bandwidth.
    steps = [step for step in every_step
             if rl.time_on(deployment, rl.decode_step(deployment, step[1], step[0])).bound == "memory"]
    if not steps:
        return PhaseFit(None, None, None, [], ["no decode rate was measured: the achieved bandwidth is unknown"])
    ideal = np.array([decode_memory_seconds(deployment, context, streams) for context, streams, _, _ in steps])
    measured = np.array([1 / rate for _, _, rate, _ in steps])
    sigma = np.array([written_precision(rate, written=written) / rate ** 2
                      for _, _, rate, written in steps])  # of 1 / rate
    fit = weighted_fit(ideal[:, None], measured, sigma)
    memory = inverse(float(fit.coefficients[0]), float(fit.covariance[0, 0]))
    points = [Point("decode", context, streams, float(step), float(error), float(value))
              for (context, streams, _, _), step, error, value in zip(steps, measured, sigma,
                                                                      fit.coefficients[0] * ideal)]
    missed = misfit(points, 1)
    refusal = None
    if missed is not None:
        refusal = (f"this model does not describe the data: the decode step at {missed.prompt_tokens:,} cached tokens"
                   f"{f', {missed.streams} streams' if missed.streams > 1 else ''} takes "
                   f"{missed.measured * 1e3:.3g} ms, {ratio_words(missed)}the fit's {missed.fitted * 1e3:.3g} ms, far "
                   f"beyond its figures' precision: the step does not grow as the bytes it reads do, so decode's "
                   f"bandwidth is not fitted (measure again, a few runs each)")
        memory, fit = None, None
    slope = kv_slope(deployment, [step[:3] for step in steps if step[1] == 1], memory)
    return PhaseFit(memory, slope, fit, points, [], refusal)


def calibrate(dataset: MeasuredDataset, deployment: Deployment) -> Calibration:
    """The dataset's timings fitted against the deployment's ceilings (see the module's docstring)."""
    gpu_named = f"{deployment.gpu.name}" + (f" x{deployment.gpus}" if deployment.gpus > 1 else "")
    timed = [prompt for prompt in dataset.prompts if prompt.ttft_seconds is not None]
    every_step = decode_steps(dataset)
    prefill, decode = fit_prefill(deployment, timed), fit_decode(deployment, every_step)
    overhead, compute, memory, slope = prefill.first, prefill.second, decode.first, decode.second
    points, notes = prefill.points + decode.points, prefill.notes + decode.notes
    refusals = [refusal for refusal in (prefill.refusal, decode.refusal) if refusal]
    prefill_fit, decode_fit, phased = prefill.fit, decode.fit, None
    if len({prompt.prompt_tokens for prompt in timed}) >= 2 and any(streams > 1 for _, streams, _, _ in every_step):
        # Concurrency levels and prompts of several lengths: enough to tell the models apart. The roofline's own
        # competes where it describes its phases (then fitted phase by phase, as without the levels).
        phased = phase_fit(deployment, timed, every_step, PHASE_MODELS[1:] if refusals else PHASE_MODELS)
        phased = None if phased is not None and phased.model == ROOFLINE_MODEL else phased
    if phased is not None:
        # A per-phase model describes every figure, where the roofline's overlapped one does not or describes them
        # worse by Akaike's criterion (a CPU's small batches): both phases are fitted together, each by its own terms.
        prefill_fit, decode_fit, points = None, None, phased.points
        overhead, _, compute, memory = phased.estimates
        slope = kv_slope(deployment, [step[:3] for step in every_step if step[1] == 1], memory)
        notes.append(phase_note(phased, every_step))
    else:
        notes += refusals
    compute = telling(compute, "prefill's arithmetic", "TTFT hardly grows with the prompt here, so prefill's "
                      "arithmetic cannot be told apart from the overhead: measure longer prompts (thousands of tokens)",
                      gpu_named, notes)
    memory = telling(memory, "decode's bandwidth", "the decode rates do not pin it down: measure more of them (several "
                     "prompt lengths, a few runs each)", gpu_named, notes)
    notes += checks_of(deployment, gpu_named, compute, memory, slope if memory is not None else None)
    if dataset.compared_gpu_is_assumption:
        assumed = f"{gpu_named}, assumed" if gpu_named.startswith("this ") else f"an assumed {gpu_named}"
        notes.append(f"the provider does not say its hardware: the fractions are of {assumed}")
    exact = [name for name, fit in (("the overhead and prefill", prefill_fit), ("decode", decode_fit),
                                    ("the per-phase fit", phased.fit if phased else None))
             if fit is not None and fit.exactly_determined]
    if exact:
        notes.append(f"{' and '.join(exact)}: as many figures as unknowns, so nothing is left over to check the fit "
                     "by; the uncertainties come from the figures' written precision alone")
    return Calibration(dataset.id, deployment, overhead, compute, memory, slope if memory is not None else None,
                       tuple(points), tuple(notes), prefill_fit, decode_fit, 1.0, phased)


def phase_note(phased: PhasedFit, every_step: list) -> str:
    most = max(streams for _, streams, _, _ in every_step)
    one = [point for point in phased.points if point.kind == "decode" and point.streams == 1]
    many = [point for point in phased.points if point.kind == "decode" and point.streams == most]
    took = (f"a decode step takes {np.mean([p.measured for p in one]) * 1e3:.3g} ms at one stream and "
            f"{np.mean([p.measured for p in many]) * 1e3:.3g} ms at {most}")
    step = phased.estimates[1]
    besides = (f", and every step spends {step.value * 1e3:.3g} ms besides its work (± {step.uncertainty * 1e3:.2g})"
               if step is not None else "")
    if phased.model.decode_overlap == 0:
        said = (f"decode's arithmetic and memory traffic do not overlap here: {took}, growing with the streams' "
                f"arithmetic where the roofline's overlapped steps would not, so each phase is fitted by its own "
                f"terms: prefill's weight reads under its arithmetic, decode's two one after the other (decode "
                f"overlap 0), as a CPU's small batches run{besides}")
    else:
        said = (f"the roofline's steps describe the figures only with a fixed time in every step: {took}{besides}")
    return said


def checks_of(deployment: Deployment, gpu_named: str, compute: Estimate | None, memory: Estimate | None,
              slope: KvSlope | None) -> list[str]:
    """What the estimates say about the deployment assumed: a share over its ceiling, and the KV slope's check."""
    notes = []
    for name, estimate in (("prefill's arithmetic", compute), ("decode's bandwidth", memory)):
        if estimate is not None and estimate.value > 1:
            notes.append(f"{name} comes out at {estimate.value:.0%} of the {gpu_named}'s ceiling, more than it can "
                         f"do: the deployment is not what is assumed (a faster GPU, more of them, or a smaller or "
                         f"more compressed model than {deployment.model.name} in {deployment.dtype.name})")
    if slope is not None:
        if abs(slope.ratio - 1) > max(0.25, 2 * slope.seconds_per_token.relative):
            notes.append(f"the cached tokens slow each step {slope.ratio:.2g}× as much as reading their KV bytes "
                         f"at the fitted bandwidth would: something else grows with the context (attention's "
                         f"arithmetic, a cache in another format or place than assumed)")
        else:
            notes.append(f"the cached tokens slow each step as reading their KV bytes explains ({slope.ratio:.2f}×, "
                         f"within the uncertainty): decode is bound by memory traffic, weights and cache alike")
    return notes


@dataclass(frozen=True)
class PhasedFit:
    """The per-phase model taken (phase_fit): which one, its fit and the figures on it."""

    model: PhaseModel
    fit: LinearFit
    points: list[Point]
    shares: tuple[float, float]  # (compute, memory): those that decided which part of an overlapped step binds
    criterion: float  # Akaike's: chi-square + 2 x unknowns

    def predicted(self, deployment: Deployment, step: rl.Step) -> Estimate:
        """A step's seconds (a prefill's with the request overhead: its TTFT), by the fit, with its uncertainty."""
        row, fixed = phase_row(deployment, step, self.model, self.shares)
        found = predicted(self.fit, row)
        return Estimate(found.value + fixed, found.uncertainty)

    @property
    def estimates(self) -> tuple[Estimate, Estimate | None, Estimate | None, Estimate | None]:
        """The request overhead, the step overhead (None where not fitted), the share of peak arithmetic and the
        share of bandwidth."""
        coefficients, covariance = self.fit.coefficients, self.fit.covariance

        def plain(index: int) -> Estimate:
            return Estimate(float(coefficients[index]), math.sqrt(max(float(covariance[index, index]), 0.0)))

        last = len(coefficients) - 1
        return (plain(0), plain(1) if self.model.step_overhead else None,
                inverse(float(coefficients[last - 1]), float(covariance[last - 1, last - 1])),
                inverse(float(coefficients[last]), float(covariance[last, last])))


def phase_fit(deployment: Deployment, timed: list, steps: list, models: tuple[PhaseModel, ...] = PHASE_MODELS) \
        -> PhasedFit | None:
    """Each phase by its own terms (the module's docstring): of `models`, those that describe every figure (more
    of them than unknowns, no misfit, both shares above zero), the least by Akaike's criterion; None if none does.
    Which part of an overlapped step binds depends on the shares being fitted: the datasheet's first, then the fit's,
    until they agree."""
    figures = [(rl.prefill(deployment, prompt.prompt_tokens), prompt.ttft_seconds,
                written_precision(prompt.ttft_seconds, prompt.ttft_approximate, prompt.ttft_written),
                ("ttft", prompt.prompt_tokens, 1, prompt.ttft_approximate)) for prompt in timed]
    figures += [(rl.decode_step(deployment, streams, context), 1 / rate,
                 written_precision(rate, written=written) / rate ** 2, ("decode", context, streams, False))
                for context, streams, rate, written in steps]
    measured = np.array([figure[1] for figure in figures])
    sigma = np.array([figure[2] for figure in figures])
    found = []
    for model in models:
        if len(figures) <= model.unknowns:
            continue
        shares, seen = (1.0, 1.0), set()
        while shares not in seen:
            seen.add(shares)
            rows = [phase_row(deployment, figure[0], model, shares) for figure in figures]
            design = np.array([row for row, _ in rows])
            fixed = np.array([extra for _, extra in rows])
            fit = weighted_fit(design, measured - fixed, sigma)
            if fit.coefficients[-2] <= 0 or fit.coefficients[-1] <= 0:
                break
            shares = (1 / float(fit.coefficients[-2]), 1 / float(fit.coefficients[-1]))
        else:
            fitted = design @ fit.coefficients + fixed
            points = [Point(kind, tokens, streams, float(value), float(error), float(model_value), approximate)
                      for (kind, tokens, streams, approximate), value, error, model_value
                      in zip((figure[3] for figure in figures), measured, sigma, fitted)]
            if misfit(points, model.unknowns) is None:
                chi_square = float(np.sum(((measured - fitted) / sigma) ** 2))
                found.append(PhasedFit(model, fit, points, shares, chi_square + 2 * model.unknowns))
    return min(found, key=lambda phased: phased.criterion, default=None)


def times(ratio: float) -> str:
    """'17.1×', '96.8×', '553,000×' (three figures, never an exponent)."""
    return f"{ratio:.3g}×" if ratio < 1000 else f"{float(f'{ratio:.3g}'):,.0f}×"


def ratio_words(point: Point) -> str:
    ratio = point.measured / point.fitted if point.fitted else math.inf
    return f"{times(ratio)} " if ratio >= 1 else f"{times(1 / ratio)} under "


def prefill_misfit_note(missed: Point, timed: list, ideal: np.ndarray) -> str:
    """Why a prefill fit fails, as the data shows it: which figure it misses, and where TTFT rises far more steeply
    with the prompt than prefill's arithmetic does."""
    order = [int(index) for index in np.argsort(ideal)]
    pairs = [(earlier, later,
              (timed[later].ttft_seconds / timed[earlier].ttft_seconds) / (ideal[later] / ideal[earlier]))
             for earlier, later in zip(order, order[1:]) if ideal[earlier] > 0]

    def between(earlier: int, later: int) -> str:
        return (f"{times(timed[later].ttft_seconds / timed[earlier].ttft_seconds)} from "
                f"{timed[earlier].ttft_seconds:.3g} s at {timed[earlier].prompt_tokens:,} tokens to "
                f"{timed[later].ttft_seconds:.3g} s at {timed[later].prompt_tokens:,}, against "
                f"{times(ideal[later] / ideal[earlier])} the operations")

    steepest = max(pairs, key=lambda pair: pair[2], default=None)
    if steepest is not None and steepest[2] > 2:
        shape = (f"TTFT rises far more steeply than prefill's arithmetic ({between(*steepest[:2])}): something else "
                 f"grows with the prompt (queueing behind other requests, memory spilled, a timeout), so the overhead "
                 f"and prefill's arithmetic are not fitted")
    else:
        shape = ("TTFT does not follow prefill's arithmetic across the prompts, so the overhead and prefill's "
                 "arithmetic are not fitted")
    return (f"this model does not describe the data: the TTFT at {missed.prompt_tokens:,} tokens, "
            f"{missed.measured:.3g} s, is {ratio_words(missed)}the fit's {missed.fitted:.3g} s, far beyond its "
            f"figures' precision; {shape} (measure again, a few runs of each length)")


def telling(estimate: Estimate | None, name: str, remedy: str, gpu_named: str, notes: list[str]) -> Estimate | None:
    """A fitted share, or None (with a note saying why) where it says nothing: far beyond the datasheet, or less
    certain than its own size."""
    if estimate is None:
        return None
    if estimate.value > MOST_PLAUSIBLE_SHARE:
        notes.append(f"{name} comes out at more than {MOST_PLAUSIBLE_SHARE:g} times the {gpu_named}'s ceiling, which "
                     f"no deployment of it reaches: {remedy}")
        return None
    if estimate.uncertainty > estimate.value:
        notes.append(f"{name} is undetermined (its uncertainty is larger than the share itself): {remedy}")
        return None
    return estimate


def kv_slope(deployment: Deployment, steps: list[tuple[int, int, float]], memory: Estimate | None) -> KvSlope | None:
    """Single-stream step time against cached context, a free line, where there are two contexts or more."""
    if memory is None or len({context for context, _, _ in steps}) < 2:
        return None
    contexts = np.array([context for context, _, _ in steps], dtype=float)
    measured = np.array([1 / rate for _, _, rate in steps])
    sigma = np.array([written_precision(rate) / rate ** 2 for _, _, rate in steps])
    fit = weighted_fit(np.column_stack([np.ones_like(contexts), contexts]), measured, sigma)
    per_token = Estimate(float(fit.coefficients[1]), math.sqrt(fit.covariance[1, 1]))
    kv_bytes = rl.kv_bytes_per_token_per_gpu(deployment.model, deployment.dtype, deployment.gpus)
    bandwidth = deployment.gpu.bandwidth
    implied = inverse(per_token.value * bandwidth / kv_bytes, float(fit.covariance[1, 1]) * (bandwidth / kv_bytes) ** 2)
    if implied is None:
        return None
    return KvSlope(per_token, kv_bytes / (memory.value * bandwidth), implied)
