"""The typed plan: every value the film speaks or shows, and when.

The resolve step (render/plan/resolve.py) builds a `Plan` from data/ and the storyboard; the
narration (render/voice/narration.py) returns the same plan with each beat's `timing` filled
in (the timed plan, build/timed-plan.json); the scenes and the beat cache read it. Scenes
read attributes (`plan.numbers.prefill.ops`), so a misspelt name fails at once.

    Plan
      choice        Choice: the GPU, model and data type, the comparison GPU, the measured dataset
      spec          SpecSheet: that GPU running that model (peak, bandwidth, ridge, weight bytes)
      numbers       Numbers: prefill, decode, batch, long_prompt, compare, quantised
      measured      MeasuredNumbers: the measured dataset, its prompts by role (short, medium, long)
      achieved      SpecSheet at the achieved ceilings (EFFICIENCY=), or None
      expected      Numbers at those ceilings: what the deployment should give, not its best; or None
      pills         Pill per GPU the roofline morphs through
      parameters    Parameters: the storyboard's prompt lengths, batch and comparison choices
      narration     NarrationSettings: voice, lead-in, gap, tempo, loudness
      beats         Beat per beat, with its narration, cues and (once narrated) its BeatTiming

`film plan --json` and build/timed-plan.json are this tree as JSON (render/plan/codec.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from render import formatting
from render.errors import FilmError
from render.plan import codec
from render.serving.schedulers import LABELS
from render.specs.catalog import MeasuredDataset
from render.specs.fields import datum
from render.specs.types import DataType, Deployment, Gpu, Hardware, Model
from render.text import echo

# Speech engines a storyboard or VOICE= may name (render/voice/speech.py implements them).
VOICE_ENGINES = ("hibari", "piper")
RECORDED = "recorded"

# Cues every beat's scene has besides its storyboard markers: when its speech starts and ends,
# and "end", when the beat's closing fade begins.
BUILT_IN_CUES = ("speech-start", "speech-end", "end")


# -- the choice and its spec sheet ---------------------------------------------------------------


@dataclass(frozen=True)
class Efficiency:
    """What share of its ceilings a deployment reaches (EFFICIENCY=): fitted from a measured dataset's timings
    (render/specs/calibration.py), or given as compute=…,memory=…[,overhead=…]."""

    compute: float            # of peak arithmetic (prefill's matrix multiplies)
    memory: float             # of bandwidth (decode's weight and cache reads)
    overhead_seconds: float   # waited per request outside prefill: network, queueing, the template
    fitted_from: str = ""     # the measured dataset's id; empty: given by hand
    overlap: float = 1.0      # of the shorter of a step's arithmetic and memory traffic hidden under the longer
    decode_overlap: float | None = None  # the same in a step that only decodes (None: as `overlap`)
    step_overhead_seconds: float = 0.0   # spent by every engine step outside the roofline (scheduling, sampling)

    @classmethod
    def fitted(cls, fit, fitted_from: str) -> "Efficiency":
        """A calibration's (render/specs/calibration.py's Calibration) shares, overheads and overlaps, named by the
        dataset they were fitted from: both shares must be there."""
        def value(estimate) -> float:
            return estimate.value if estimate is not None else 0.0

        return cls(fit.compute_efficiency.value, fit.memory_efficiency.value, value(fit.overhead_seconds), fitted_from,
                   fit.overlap, fit.decode_overlap, value(fit.step_overhead_seconds))

    @property
    def decode_step_overlap(self) -> float:
        return self.overlap if self.decode_overlap is None else self.decode_overlap

    @property
    def shares(self) -> str:
        """'73% of peak arithmetic and 74% of bandwidth' (', one after the other' where they do not overlap; which
        phase, where the two differ), and a step's overhead where there is one."""
        said = (f"{formatting.percent(self.compute, short=True)} of peak arithmetic and "
                f"{formatting.percent(self.memory, short=True)} of bandwidth")

        def overlapped(share: float) -> str:
            if share in (0, 1):
                return "one after the other" if share == 0 else "overlapped"
            return f"{formatting.percent(share, short=True)} overlapped"

        if self.decode_step_overlap != self.overlap:
            said += f", {overlapped(self.overlap)} in prefill and {overlapped(self.decode_step_overlap)} in decode"
        elif self.overlap != 1:
            said += f", {overlapped(self.overlap)}"
        if self.step_overhead_seconds:
            said += f", {formatting.duration(self.step_overhead_seconds, short=True)} a step besides"
        return said

    @property
    def source(self) -> str:
        """'fitted from <dataset>', or 'as given'."""
        return f"fitted from {self.fitted_from}" if self.fitted_from else "as given"

    @property
    def described(self) -> str:
        """What the expected numbers assume, as the end card and the video description say it."""
        return f"{self.shares}, {self.source}"

    @property
    def name(self) -> str:
        """'expected-openrouter-…' or 'expected-c0.6-m0.8[-o0.2]': the film's folder says which."""
        if self.fitted_from:
            return f"expected-{self.fitted_from}"
        overhead = f"-o{self.overhead_seconds:g}" if self.overhead_seconds else ""
        overlap = f"-v{self.overlap:g}" if self.overlap != 1 else ""
        decode = f"-dv{self.decode_overlap:g}" if self.decode_overlap not in (None, self.overlap) else ""
        step = f"-s{self.step_overhead_seconds:g}" if self.step_overhead_seconds else ""
        return f"expected-c{self.compute:g}-m{self.memory:g}{overhead}{overlap}{decode}{step}"


DEFAULT_CUT = "default"  # the film as the transcript times it


@dataclass(frozen=True)
class FilmRequest:
    """What a film is asked for, the one way a choice travels into resolve_plan: from the command line
    (`film … --gpu …`, make's GPU= …), a variant of a matrix (`make films`), a choice `check-choices` narrates.
    None: the storyboard's default; the resolve step checks every value and fills the defaults
    (render/plan/resolve.py)."""

    gpu: str | None = None
    model: str | None = None          # a catalog id, or the path of a Hugging Face config.json
    dtype: str | None = None
    gpus: int | None = None
    kv_dtype: str | None = None
    compare_gpu: str | None = None
    measured: str | None = None
    efficiency: str | None = None     # EFFICIENCY=: a measured dataset's id, or compute=…,memory=…[,overhead=…]
    voice: str | None = None
    recordings: Path | None = None
    cut: str | None = None            # CUT=: a cut the storyboard defines (extended); None: the film as timed

    DEPLOYMENT = ("gpu", "model", "dtype", "gpus", "kv_dtype")

    @property
    def asks_deployment(self) -> bool:
        """It names a GPU, model, data type, GPU count or KV format (not only the film's other settings)."""
        return any(getattr(self, name) is not None for name in self.DEPLOYMENT)

    def with_deployment_of(self, other: FilmRequest) -> FilmRequest:
        """This request for `other`'s deployment (a matrix's film, with the command line's other settings)."""
        return replace(self, **{name: getattr(other, name) for name in self.DEPLOYMENT})

    @property
    def make_variables(self) -> str:
        """The choice as make's variables (' GPU=a100-sxm-80gb GPUS=2'), for a message that says what to run."""
        return "".join(f" {name.upper()}={getattr(self, name)}" for name in self.__dataclass_fields__
                       if name not in ("voice", "recordings") and getattr(self, name) is not None)

    def __str__(self) -> str:
        """As VARIANTS= writes it: GPU/MODEL/DTYPE[/gpus=N][/kv=X] (one GPU goes without saying)."""
        parts = [self.gpu or "(default)", self.model or "(default)", self.dtype or "(default)"]
        parts += [f"gpus={self.gpus}"] if self.gpus and self.gpus > 1 else []
        parts += [f"kv={self.kv_dtype}"] if self.kv_dtype else []
        return "/".join(parts)


@dataclass(frozen=True)
class Choice:
    """What the film is about: a model in one data type, served by one GPU or tensor-parallel over several."""

    gpu: Gpu
    model: Model
    dtype: DataType      # the weights' format; its kv_dtype/kv_bytes are the KV cache's (KV_DTYPE=)
    arithmetic: str      # the format its matrix multiplies run in on this GPU: bf16 or fp8
    compare_gpu: Gpu     # the GPU the film compares its own with (as many of it)
    measured_id: str     # the measured dataset in data/measured/
    is_default: bool     # the storyboard's own GPU, model and data type, on one GPU
    gpus: int = 1        # T: tensor parallelism over this many of `gpu`
    kv_is_default: bool = True  # the KV cache in the data type's own format
    embedding_rows: bool = False  # a step gathers its rows of the input embedding table (parameters.embedding_reads)
    efficiency: Efficiency | None = None  # EFFICIENCY=: the film speaks expected numbers beside its ceilings
    cut: str = field(default=DEFAULT_CUT, metadata=codec.OMITTED_WHEN_DEFAULT)  # CUT=: the storyboard's cut

    @property
    def deployment(self) -> Deployment:
        return Deployment(self.gpu, self.model, self.dtype, self.gpus, self.embedding_rows)

    @property
    def hardware(self) -> Hardware:
        """What the narration names: 'an H100' or 'four H100s'."""
        return Hardware(self.gpu, self.gpus)

    @property
    def name(self) -> str:
        """'a100-sxm-80gb-llama-3.1-70b-int8', 'h100-sxm-x4-llama-3.1-70b-bf16-kv-fp8': the folder a
        regenerated film goes to."""
        gpus = f"-x{self.gpus}" if self.gpus > 1 else ""
        kv = "" if self.kv_is_default else f"-kv-{self.dtype.kv_dtype}"
        expected = f"-{self.efficiency.name}" if self.efficiency else ""
        cut = "" if self.cut == DEFAULT_CUT else f"-{self.cut}"
        return f"{self.gpu.id}{gpus}-{self.model.id}-{self.dtype.id}{kv}{expected}{cut}"

    def times(self, gpu_name: str) -> str:
        """A GPU's name as the deployment has it: 'H100', or '4× H100' on four."""
        return f"{self.gpus}× {gpu_name}" if self.gpus > 1 else gpu_name

    @property
    def label(self) -> str:
        """'H100 · Llama 3.1 8B · BF16', '4× H100 · Llama 3.1 70B · BF16 · KV FP8', as the beats' subtitles show it."""
        return f"{self.times(self.gpu.short_name)} · {self.model.name} · {self.dtype.name}{self.kv_label}"

    @property
    def long_label(self) -> str:
        """'H100 SXM · Llama 3.1 8B · BF16', with the GPU's full name (the end card)."""
        return f"{self.times(self.gpu.name)} · {self.model.name} · {self.dtype.name}{self.kv_label}"

    @property
    def kv_label(self) -> str:
        return "" if self.kv_is_default else f" · KV {self.dtype.kv_dtype.upper()}"


@dataclass(frozen=True)
class SpecSheet:
    """The film's GPUs running the film's model in its data type. Per-GPU figures unless named total."""

    peak_flops: float          # one GPU, at the arithmetic format the choice runs in (dense)
    memory_bandwidth: float    # one GPU, bytes/s
    memory_bytes: float        # one GPU
    sm_count: int
    ridge_ops_per_byte: float  # peak / bandwidth
    parameters: int            # the model's total
    weight_bytes: float        # all of them
    kv_bytes_per_token: float  # the whole model's
    gpus: int              # T
    total_peak_flops: float       # T x peak
    total_bandwidth: float        # T x bandwidth
    interconnect_bandwidth: float  # bytes/s per GPU, one direction
    allreduce_latency_seconds: float
    allreduce_latency_is_assumption: bool
    active_parameters: float      # what one token uses (= parameters for a dense model)
    experts: int                    # routed experts per MoE layer (0: dense)
    experts_per_token: int
    weight_bytes_per_gpu: float
    kv_bytes_per_token_per_gpu: float
    kv_dtype: str              # the KV cache's format


# -- the numbers, by beat topic ------------------------------------------------------------------


@dataclass(frozen=True)
class PrefillNumbers:
    """The prompt in one pass (the prefill beat)."""

    tokens: int
    ops: float
    linear_ops: float
    attention_ops: float
    bytes: float                  # what each GPU moves
    bytes_all_gpus: float
    seconds: float
    compute_seconds: float
    memory_seconds: float
    attention_fraction: float
    ops_per_byte: float
    compute_utilisation: float
    communication_seconds: float  # the all-reduces, on several GPUs
    communication_fraction: float
    experts_read: float           # distinct experts per MoE layer the prompt's tokens touch (expected)


@dataclass(frozen=True)
class DecodeNumbers:
    """One token at batch 1 with nothing cached (the decode beat)."""

    ops_per_token: float
    bytes_per_token: float     # every GPU's bytes together
    step_seconds: float
    compute_seconds: float
    tokens_per_second: float
    ops_per_byte: float        # per GPU
    compute_utilisation: float
    bytes_per_gpu: float
    weight_bytes_read: float   # the weights one token reads (a mixture of experts: only its experts')
    experts_read: float        # experts per MoE layer one token reads (K)
    memory_seconds: float
    communication_seconds: float
    communication_fraction: float


@dataclass(frozen=True)
class BatchNumbers:
    """Many users decoding together, each rereading its own KV cache (the batching beat)."""

    size: int
    context_tokens: int
    kv_bytes: float
    kv_ratio: float               # the batch's KV cache / the weights
    step_bytes: float
    step_seconds: float
    tokens_per_second: float
    ops_per_byte: float
    compute_utilisation: float
    size_at_ridge: int | None     # the smallest batch that reaches the ridge; None: none does
    ops_per_byte_limit: float | None  # what an endless batch tends to; None: no limit (nothing cached)
    ridge_value_size: int         # as many users as the ridge's value ...
    ridge_value_ops_per_byte: float  # ... and the intensity they reach
    bytes_per_gpu: float
    weight_bytes_read: float   # the weights the batch's tokens read together
    experts_read: float        # distinct experts per MoE layer the batch touches (expected)
    communication_seconds: float


@dataclass(frozen=True)
class LongPrefillNumbers:
    """A long prompt's prefill, split into its linear layers and attention."""

    tokens: int
    ops: float
    seconds: float
    attention_fraction: float     # of its operations
    attention_seconds: float
    linear_seconds: float
    kv_bytes: float
    communication_seconds: float
    attention_share: float        # of the whole wait, all-reduces included (what "X of that" says)


@dataclass(frozen=True)
class ComparisonFraming:
    """Who a comparison of two GPUs is about: the one with more arithmetic, ratios from its side."""

    subject: Gpu
    other: Gpu
    flops_ratio: float
    bandwidth_ratio: float
    decode_speedup: float


@dataclass(frozen=True)
class ComparisonNumbers:
    """The film's GPU against the comparison GPU (ratios: film GPU / comparison GPU)."""

    gpu: Gpu
    peak_flops: float
    memory_bandwidth: float
    ridge_ops_per_byte: float
    flops_ratio: float
    bandwidth_ratio: float
    decode_speedup: float
    prefill_speedup: float
    decode_tokens_per_second: float
    prefill_seconds: float
    long_prompt_seconds: float
    framing: ComparisonFraming


@dataclass(frozen=True)
class QuantisedDecode:
    """A budget card's quantisation lever: batch-1 decode with weight-only quantised weights."""

    dtype: DataType
    weight_bytes: float
    tokens_per_second: float
    speedup: float


@dataclass(frozen=True)
class Numbers:
    prefill: PrefillNumbers
    decode: DecodeNumbers
    batch: BatchNumbers
    long_prompt: LongPrefillNumbers
    compare: ComparisonNumbers
    quantised: QuantisedDecode | None  # the next smaller weight format; None: the weights are the smallest


@dataclass(frozen=True)
class MeasuredPromptNumbers:
    """One measured prompt beside the roofline's ideal prefill of it."""

    prompt_tokens: int
    ttft_seconds: float | None
    decode_tokens_per_second: float | None
    ttft_approximate: bool
    ideal_prefill_seconds: float


@dataclass(frozen=True)
class SweepPoint:
    """So many streams at once: the endpoint's tokens per second together, and the roofline's."""

    streams: int
    measured_tokens_per_second: float
    predicted_tokens_per_second: float


@dataclass(frozen=True)
class MeasuredSweep:
    """A measured concurrency sweep beside the roofline's aggregate throughput at each batch size."""

    prompt_tokens: int                            # the prompt length swept: each step rereads its cache
    points: tuple[SweepPoint, ...]
    curve: tuple[tuple[int, float], ...]          # (batch size, predicted tokens per second), 1 to the most


@dataclass(frozen=True)
class Fitted:
    """A figure fitted from measurements, with its one-sigma uncertainty."""

    value: float
    uncertainty: float


@dataclass(frozen=True)
class FitPoint:
    """One measured figure beside what the fit gives for it (seconds: a TTFT, or one decode step)."""

    kind: str            # "ttft" or "decode"
    prompt_tokens: int
    streams: int
    measured_seconds: float
    fitted_seconds: float
    precision_seconds: float
    approximate: bool


@dataclass(frozen=True)
class TtftCurvePoint:
    """A prompt length's wait for its first token: the roofline's ideal prefill, and the fit's (overhead + prefill at
    the achieved share of peak)."""

    prompt_tokens: int
    ideal_seconds: float
    fitted_seconds: float


@dataclass(frozen=True)
class MeasuredFit:
    """What the measured endpoint reaches of its GPU's ceilings (render/specs/calibration.py); None where the
    dataset cannot say."""

    overhead_seconds: Fitted | None          # waited outside prefill: network, queueing, the template
    compute_efficiency: Fitted | None        # of peak arithmetic, in prefill
    memory_efficiency: Fitted | None         # of bandwidth, in decode
    achieved_flops: float | None
    achieved_bandwidth: float | None
    expected_tokens_per_second: float | None  # one user's decode, nothing cached, at the achieved bandwidth
    overhead_share: float | None             # of the shortest prompt's fitted TTFT
    kv_slope_seconds_per_token: Fitted | None  # decode step time per cached token, fitted freely
    kv_slope_predicted_seconds_per_token: float | None  # the KV bytes per token at the achieved bandwidth
    kv_slope_efficiency: Fitted | None       # the fraction of bandwidth the slope alone implies
    points: tuple[FitPoint, ...]
    notes: tuple[str, ...]
    ttft_curve: tuple[TtftCurvePoint,
                      ...] = ()  # over the measured prompt lengths and beyond; empty: prefill not fitted
    step_overhead_seconds: Fitted | None = None  # every engine step's fixed time besides its work (per-phase fit)


@dataclass(frozen=True)
class MeasuredNumbers:
    """The measured beats: a dataset's own figures beside its model's roofline on its GPU."""

    dataset: MeasuredDataset
    model: Model
    gpu: Gpu
    precision: DataType
    short: MeasuredPromptNumbers
    medium: MeasuredPromptNumbers | None  # the middle prompt, when there are three or more with a TTFT
    long: MeasuredPromptNumbers
    weight_bytes: float
    kv_bytes_per_token: float
    ceiling_tokens_per_second: float
    ridge_ops_per_byte: float
    ceiling_fraction: float       # the short prompt's decode rate / the ceiling
    long_kv_bytes: float
    long_kv_ratio: float          # the long prompt's KV cache / the weights
    slowdown: float               # 1 - long decode rate / short decode rate
    network_fraction: float       # of the medium (else short) prompt's TTFT, the share that is not prefill
    other_decode_tokens_per_second: float | None
    sweep: MeasuredSweep | None = None  # when the dataset measured more than one concurrency level
    fit: MeasuredFit | None = None      # the dataset fitted against the GPU's ceilings


@dataclass(frozen=True)
class Pill:
    """A GPU the roofline beat morphs through, running the film's model and data type."""

    gpu_id: str
    name: str
    peak_flops: float
    memory_bandwidth: float
    ridge_ops_per_byte: float


# -- the storyboard's settings -------------------------------------------------------------------


@dataclass(frozen=True)
class Parameters:
    prompt_tokens: int = datum(1, 10_000_000, "tokens")           # the prefill beat's prompt
    batch_size: int = datum(1, 100_000, "users")                  # users decoding together in the batching beat
    batch_context_tokens: int = datum(0, 10_000_000, "tokens")    # cached tokens each of them rereads per step
    long_prompt_tokens: int = datum(1, 10_000_000, "tokens")      # a long prompt, whose prefill attention weighs in
    compare_gpu: str
    compare_gpu_when_same: str
    roofline_pills: tuple[str, ...]
    # What a step reads of the input embedding table: "table", all of it (the source's convention: "all 16 GB"),
    # or "rows", only its tokens' rows (what a real step gathers)
    embedding_reads: str = datum(one_of=("table", "rows"), default="table")

    @property
    def embedding_rows(self) -> bool:
        """A step reads only its tokens' rows of the input embedding table (Deployment.embedding_rows)."""
        return self.embedding_reads == "rows"


@dataclass(frozen=True)
class LoadParameters:
    """The extended cut's workload (the storyboard's cuts.<name>.load): a stream of requests the serving simulator
    (render/serving/) answers, each a prompt of parameters.prompt_tokens, under each scheduler. Left out, each is
    film load's own default (the page's Under load section of a film without the cut uses them all)."""

    answer_tokens: int = datum(2, 100_000, "tokens", default=200)          # each answer's length
    requests: int = datum(50, 20_000, "requests", default=1000)            # the stream's length
    seed: int = datum(0, 2**31 - 1, default=0)                             # its arrivals' seed: the same every time
    slo_ttft_seconds: float = datum(0.01, 600, "seconds", default=0.5)     # the objective for the first token ...
    slo_tpot_seconds: float = datum(0.001, 10, "seconds", default=0.05)    # ... and for each token after it
    static_batch: int = datum(1, 4096, "requests", default=8)              # static batching's batch ...
    static_wait_seconds: float = datum(0, 60, "seconds", default=0.5)      # ... which goes short after this wait
    # vLLM's max_num_batched_tokens: chunked prefill's tokens a step (None: vLLM's own default on the deployment's GPU)
    max_num_batched_tokens: int | None = datum(16, 65_536, "tokens", default=None)


@dataclass(frozen=True)
class NarrationSettings:
    voice: str              # hibari, piper or recorded, optionally engine:voice
    recordings: str         # folder of <beat-id>.wav/.flac recordings (absolute)
    lead_in: float = datum(0, 5, "seconds")          # silence before a beat's first word
    gap: float = datum(0, 5, "seconds")              # silence kept before the next beat
    max_tempo: float = datum(1, 2, "times")          # the fastest the voice may be sped up to fit its slot
    clause_pause: float = datum(0, 2, "seconds")
    sentence_pause: float = datum(0, 3, "seconds")
    loudness_lufs: float = datum(-40, -5, "LUFS")    # the track's integrated loudness (EBU R128)
    true_peak_dbtp: float = datum(-20, 0, "dBTP")

    @property
    def engine(self) -> str:
        return parse_voice(self.voice)[0]

    @property
    def engine_voice(self) -> str | None:
        return parse_voice(self.voice)[1]


def parse_voice(spec: str) -> tuple[str, str | None]:
    """'hibari', 'hibari:heart', 'piper:joe' or 'recorded' -> (engine, voice)."""
    engine, _, voice = spec.partition(":")
    engine = engine.strip().lower()
    if engine != RECORDED and engine not in VOICE_ENGINES:
        raise FilmError(f"unknown voice {echo(spec)}; use one of: {', '.join([*VOICE_ENGINES, RECORDED])} "
                        f"(optionally engine:voice, e.g. hibari:heart)")
    return engine, (voice.strip() or None)


# -- the beats -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimedClause:
    text: str
    start: float  # seconds into the film
    end: float


@dataclass(frozen=True)
class Subtitle:
    start: float
    end: float
    lines: tuple[str, ...]


@dataclass(frozen=True)
class BeatTiming:
    """Where a beat's speech lies in the film and when each cue is spoken (the narration's result)."""

    speech_start: float          # seconds into the film
    speech_end: float
    latest_end: float            # the speech must end by here (the next beat less the gap)
    tempo: float
    voice: str                   # "hibari:heart" or the recording's path
    cues: dict[str, float]       # cue name -> seconds into the film
    clauses: tuple[TimedClause, ...]
    subtitles: tuple[Subtitle, ...]

    @property
    def speech_seconds(self) -> float:
        return self.speech_end - self.speech_start

    @property
    def headroom(self) -> float:
        return self.latest_end - self.speech_end


@dataclass(frozen=True)
class PageStep:
    """A beat's step on the film's page (script/page.yaml's steps): the formula of "The maths" beside it ("measured":
    the measured timings), the controls it needs, its readout (each a label and a number the page shows), the values
    its sliders open at (each control's, from the plan path the page's words give; the rest open where "The maths"
    starts), for a beat whose picture is replaced midway, the cue whose picture the step shows first, and whether it
    says whose the measured timings are."""

    formula: str
    controls: tuple[str, ...] = ()
    readout: tuple[tuple[str, str], ...] = ()
    opens_at: tuple[tuple[str, int], ...] = ()
    earlier_picture: str | None = None
    says_whose_timings: bool = False  # it shows the measured timings: the line saying so where they are another model's


@dataclass(frozen=True)
class Beat:
    id: str
    title: str
    start: float                 # seconds into the film
    end: float
    narration: str               # filled, cue markers removed
    captions: dict[str, str]     # on-screen sentences, filled
    cue_offsets: dict[str, int]  # cue name -> character offset in the narration
    location: str                # file:line of the beat's narration in the storyboard
    timing: BeatTiming | None = None  # set by the narration
    holds: str | None = None     # a still picture the beat ends on by design, after its speech (the end card)
    reads: tuple[str, ...] = ()  # the plan paths its narration and captions read ("numbers.prefill.ops")
    step: PageStep | None = None  # its step on the film's page (script/page.yaml)

    @property
    def duration(self) -> float:
        return self.end - self.start


# -- under load (the extended cut) ----------------------------------------------------------------


@dataclass(frozen=True)
class SchedulerLoad:
    """One scheduler serving the cut's stream: at the film's rate, and its p90 TTFT over the sweep's rates."""

    name: str                          # static, continuous, chunked or disaggregated (render/serving/schedulers.py)
    gpus: int                          # the GPUs it takes (disaggregated: its prefill and decode instances')
    capacity: float | None             # requests a second meeting the objectives (None: not even the sweep's lowest)
    ttft_p50_seconds: float            # at the film's rate
    ttft_p90_seconds: float
    tpot_p90_seconds: float
    goodput: float                     # requests a second meeting both objectives, at the film's rate
    p90_ttft_curve: tuple[float, ...]  # p90 TTFT at each of LoadNumbers.rates

    @property
    def label(self) -> str:
        """How a chart's legend or a page's pill names it ("chunked prefill")."""
        return LABELS[self.name]

    @property
    def capacity_per_gpu(self) -> float | None:
        return None if self.capacity is None else self.capacity / self.gpus


@dataclass(frozen=True)
class LoadNumbers:
    """The deployment answering a stream of requests (render/serving/, seeded: the same numbers every time), as the
    extended cut's beats speak and draw it; `film load --json` gives the same numbers at the same settings."""

    parameters: LoadParameters
    prompt_tokens: int                 # each request's prompt (parameters.prompt_tokens)
    rate: float                        # the film's rate: half the deployment's saturation (film load's default)
    rates: tuple[float, ...]           # the sweep's: film load --sweep auto's (or on past the highest knee), and `rate`
    schedulers: tuple[SchedulerLoad, ...]
    arrivals: tuple[float, ...]        # the first requests' arrival times at the film's rate (seconds)
    kv_blocks: int                     # the KV cache's blocks after the weights
    block_tokens: int                  # tokens a block
    decode_step_seconds: float         # a decode step of the continuous batch at the film's rate
    batch: int                         # the sequences decoding in that step (mean over the run, rounded)
    long_prompt_tokens: int            # one long prompt (parameters.long_prompt_tokens) ...
    stall_seconds: float               # ... prefilled in one step, which every decode waits behind
    chunks: int                        # ... or in this many chunked steps, beside the decodes
    piece_tokens: int                  # each step's piece of it: the chunk's token budget less the decodes' tokens
    chunked_step_seconds: float        # one such step: the decodes and a chunk

    def knee_seconds(self, found: SchedulerLoad) -> float | None:
        """Where a scheduler's capacity lies on its curve: the p90 TTFT read there between the sweep's stops, on log
        scales as the capacity chart draws it (below the objective where the tokens after the first bind); None
        without a capacity."""
        from render.serving.load import curve_at

        if found.capacity is None:
            return None
        return curve_at(self.rates, list(found.p90_ttft_curve), found.capacity, log_rates=True)

    def scheduler(self, name: str) -> SchedulerLoad:
        return next(found for found in self.schedulers if found.name == name)

    @property
    def static(self) -> SchedulerLoad:
        return self.scheduler("static")

    @property
    def continuous(self) -> SchedulerLoad:
        return self.scheduler("continuous")

    @property
    def chunked(self) -> SchedulerLoad:
        return self.scheduler("chunked")

    @property
    def disaggregated(self) -> SchedulerLoad:
        return self.scheduler("disaggregated")

    @property
    def serves(self) -> bool:
        """Some scheduler meets the objectives at some rate."""
        return any(found.capacity is not None for found in self.schedulers)

    @property
    def best(self) -> SchedulerLoad | None:
        """The deployment's capacity: its best scheduler on its own GPUs (disaggregation takes more), if one serves."""
        own = [found for found in self.schedulers if found.name != "disaggregated" and found.capacity is not None]
        return max(own, key=lambda found: found.capacity) if own else None


# -- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Note:
    """Something the film assumes beyond the datasheets: a sentence any reader can follow (`text`, all the film's
    public page says) and, where a setting decides it, that setting (a data file's field, a storyboard parameter,
    EFFICIENCY=), which the review page and `film plan` add."""

    text: str
    setting: str = ""

    def __str__(self) -> str:
        return f"{self.text} Set by {self.setting}." if self.setting else self.text


@dataclass(frozen=True)
class Link:
    """Where a reader of the film's page goes next: a title, its address and, for a connected idea, a sentence on
    why it matters here (filled from the plan)."""

    title: str
    url: str
    text: str = ""


@dataclass(frozen=True)
class Paper:
    """A primary source beyond the datasheets, and what the page draws from it."""

    authors: str
    year: int
    title: str
    url: str
    shows: str


@dataclass(frozen=True)
class Prose:
    """The film's page in words (script/page.yaml), filled for this deployment: its article (a paragraph each: the
    two jobs, the deployment, the roofline, batching, the measurements, the caveats), why it matters, what to read
    first, connected ideas, related terms and the papers behind it."""

    article: tuple[str, ...] = ()
    why_it_matters: str = ""
    read_first: tuple[Link, ...] = ()
    connected: tuple[Link, ...] = ()
    related: tuple[Link, ...] = ()
    papers: tuple[Paper, ...] = ()
    byline: str = ""                  # "series · author · 4 December 2026", the film's own
    standfirst: str = ""              # the sentence under the summary that says what to watch for
    rule_of_thumb: Link | None = None  # what real kernels reach, in its source's words (text), and the source


@dataclass(frozen=True)
class Plan:
    title: str
    duration: float
    source: str
    choice: Choice
    spec: SpecSheet
    numbers: Numbers
    measured: MeasuredNumbers
    pills: tuple[Pill, ...]
    parameters: Parameters
    narration: NarrationSettings
    pronunciations: tuple[tuple[str, str], ...]
    beats: tuple[Beat, ...]
    notes: tuple[Note, ...] = field(default_factory=tuple)
    summary: str = ""  # the film in a sentence, its numbers filled in (the storyboard's film.summary)
    # EFFICIENCY=: the spec sheet at the achieved ceilings, and every number of `numbers` at them (None: the ceilings
    # only)
    achieved: SpecSheet | None = None
    expected: Numbers | None = None
    prose: Prose = field(default_factory=Prose)  # the film's page in words (script/page.yaml), filled
    # CUT=extended: the deployment under a stream of requests, from the serving simulator (None in the film as timed)
    load: LoadNumbers | None = field(default=None, metadata=codec.OMITTED_WHEN_DEFAULT)

    def beat(self, beat_id: str) -> Beat:
        for beat in self.beats:
            if beat.id == beat_id:
                return beat
        raise FilmError(f"unknown beat {echo(beat_id)}; the beats are: {', '.join(b.id for b in self.beats)}")

    @property
    def is_timed(self) -> bool:
        return all(beat.timing is not None for beat in self.beats)

    def timed(self, timings: dict[str, BeatTiming]) -> Plan:
        """This plan with each beat's speech timing: the timed plan the scenes render from."""
        return replace(self, beats=tuple(replace(beat, timing=timings[beat.id]) for beat in self.beats))

    def slice_for(self, beat_id: str) -> Plan:
        """All that rendering one beat needs, to send to a worker: this plan with that beat and only
        the ids and titles of its neighbours (a scene reads its own beat, which beats are around it,
        and the plan's numbers)."""
        ids = [beat.id for beat in self.beats]
        position = ids.index(self.beat(beat_id).id)

        def bare(beat: Beat) -> Beat:
            return replace(beat, narration="", captions={}, cue_offsets={}, timing=None, reads=())

        around = self.beats[max(position - 1, 0):position + 2]
        return replace(self, beats=tuple(beat if beat.id == beat_id else bare(beat) for beat in around), summary="",
                       prose=Prose())

    @property
    def subtitles(self) -> list[Subtitle]:
        return [cue for beat in self.beats if beat.timing for cue in beat.timing.subtitles]

    def to_json(self) -> str:
        return codec.dumps(self)

    @classmethod
    def from_json(cls, text: str, where: str = "the timed plan") -> Plan:
        return codec.loads(cls, text, where)
