"""A number's row on the pages: what it means and how it is computed (render/plan/meaning.py), written as the
film writes it, with its inputs' values and its sources' citations; and a measured fit in words."""

from __future__ import annotations

import re
from dataclasses import dataclass

from markupsafe import escape

from render import formatting as fmt
from render.plan.tracking import value_at
from render.plan.meaning import COMPARE, DTYPE, EFFICIENCY, EXPLANATIONS, GPU, INTERCONNECT, MEASURED, MODEL, \
    STORYBOARD, Explanation, unit_of
from render.plan.types import Plan

@dataclass(frozen=True)
class Source:
    kind: str
    label: str    # short: "H100 SXM datasheet"
    text: str     # the data's whole citation
    url: str      # its first link, if it has one


URL = re.compile(r"https?://[^\s,;]+")


def sources_of(plan: Plan, public: bool = False) -> dict[str, Source]:
    """Where each kind of input comes from, as data/ and the storyboard cite it; `public`: as the film's page says it,
    without the project's files and settings (the storyboard, EFFICIENCY=, a dataset's path)."""
    choice, dataset = plan.choice, plan.measured.dataset
    if public:
        cited = {GPU: (f"{choice.gpu.name} datasheet", choice.gpu.source),
                 COMPARE: (f"{choice.compare_gpu.name} datasheet", choice.compare_gpu.source),
                 INTERCONNECT: (f"{choice.gpu.name} interconnect", choice.gpu.interconnect_source),
                 MODEL: (f"{choice.model.name} config", choice.model.source),
                 DTYPE: (f"{choice.dtype.name} format", choice.dtype.source),
                 MEASURED: (f"Timings of {dataset.provider}'s endpoint"
                            + (f" ({dataset.cited_as})" if dataset.cited_as else ""), dataset.source
                            + (f" (measured {dataset.measured_on})" if dataset.measured_on else ""))}
        return {kind: source_of(kind, label, text, link_only=True) for kind, (label, text) in cited.items()}
    cited = {
        GPU: (f"{choice.gpu.name} datasheet", choice.gpu.source),
        COMPARE: (f"{choice.compare_gpu.name} datasheet", choice.compare_gpu.source),
        INTERCONNECT: (f"{choice.gpu.name} interconnect", choice.gpu.interconnect_source),
        MODEL: (f"{choice.model.name} config", choice.model.source),
        DTYPE: (f"{choice.dtype.name} format", choice.dtype.source),
        STORYBOARD: ("the storyboard", "script/storyboard.yaml: the film's parameters (prompt lengths, batch)"),
        MEASURED: (f"measured: {dataset.provider}", f"{dataset.path}: {dataset.source}"
                   + (f" (measured {dataset.measured_on})" if dataset.measured_on else "")),
        EFFICIENCY: ("EFFICIENCY=", f"expected numbers at {choice.efficiency.described}" if choice.efficiency
                     else "not given: every number is a ceiling"),
    }
    return {kind: source_of(kind, label, text) for kind, (label, text) in cited.items()}


def source_of(kind: str, label: str, text: str, link_only: bool = False) -> Source:
    """A citation and its first link; `link_only`: its text without addresses (the label is the link), as a page for
    readers lists it."""
    text = " ".join(text.split())
    link = URL.search(text)
    if link_only:
        text = re.sub(r"\s+([,;.)])", r"\1", " ".join(URL.sub("", text).split()))
        text = text.replace("()", "").replace(",;", ";").strip(" ,;")
    return Source(kind, label, text, link.group(0).rstrip(".,;)") if link else "")


@dataclass
class NumberRow:
    """One line of the numbers table: a number as the film writes it, what it means and where it comes from."""

    path: str
    meaning: str
    value: str          # as the film writes it
    exact: str          # every digit
    formula: str
    inputs: list[tuple[str, str]]
    sources: list[Source]
    beats: list[str]


def number_row(plan: Plan, path: str, value, written_as: str = "", beats: list[str] | None = None,
               public: bool = False) -> NumberRow:
    """The row of `path`, whose value is `value` (a plan number, or one the page's controls reach, already
    written as `written_as`); `public`: citing only the sources the film's page lists (sources_of's public ones)."""
    explanation = EXPLANATIONS.get(path) or Explanation("", "", (), ())
    sources = sources_of(plan, public)
    inputs = [name for name in explanation.inputs if not public or bears_on(plan, name)]
    return NumberRow(
        path, public_words(explanation.meaning) if public else explanation.meaning,
        written_as or written(value, unit_of(path)), exact(value),
        public_formula(explanation.formula, plan) if public else explanation.formula,
        [(input_words(name) if public else name, written(value_at(plan, name), unit_of(name))) for name in inputs],
        [sources[kind] for kind in explanation.sources if kind in sources], beats or [])


# What the public page says instead of the project's own words and a config's field names
PUBLIC_WORDS = {"the prefill beat's prompt": "the film's prompt", "kv_lora_rank": "latent rank",
                "qk_rope_head_dim": "rotary key size", "head_dim": "head size"}  # (the longer names first)
LATENT = " (latent attention: "
SUBSCRIPT = re.compile(r"\b([A-Za-z])_(\w+)")


def public_words(text: str) -> str:
    for said, public in PUBLIC_WORDS.items():
        text = text.replace(said, public)
    return text


# A formula's general terms, written for the deployment at hand: on one GPU nothing is split or exchanged, and a dense
# model's every parameter is active and its every weight read (the order matters: the longer forms first).
ONE_GPU = ((" + all-reduces", ""), (" (+ replicated KV heads)", ""), ("(T·peak)", "peak"), ("T·peak", "peak"),
           (" ÷ T", ""), ("bytes per GPU", "bytes"), ("k_T", "k"))
DENSE = ((" (a mixture of experts reads the experts the batch wakes)", ""), ("P_active", "P"),
          ("W_read(B)", "W"), ("W_read(N)", "W"), ("W_read(1)", "W"), ("W_read", "W"))


def public_formula(formula: str, plan: Plan) -> str:
    """A number's formula as the public page writes it: in words where the table writes a config's field, the latent
    attention case only for a model that has it, the terms of splitting over GPUs only on several, a mixture of
    experts' only for one; subscripts as subscripts (an HTML fragment: it is escaped here)."""
    if LATENT in formula and not plan.choice.model.is_mla:
        formula = formula[:formula.index(LATENT)]
    for general, here in (ONE_GPU if plan.choice.gpus == 1 else ()) + (() if plan.choice.model.is_moe else DENSE):
        formula = formula.replace(general, here)
    return SUBSCRIPT.sub(r"\1<sub>\2</sub>", str(escape(public_words(formula))))


# Inputs that do not bear on a deployment: the links between GPUs on one GPU, the peak of a format it does not
# multiply in
ONLY_WHEN_SPLIT = ("spec.allreduce_latency_seconds", "spec.interconnect_bandwidth", "spec.total_peak_flops",
                   "numbers.prefill.communication_seconds", "numbers.decode.communication_seconds", "spec.gpus")


def bears_on(plan: Plan, name: str) -> bool:
    if name in ONLY_WHEN_SPLIT:
        return plan.choice.gpus > 1
    if name in ("choice.gpu.bf16_flops", "choice.gpu.fp8_flops"):
        return name == f"choice.gpu.{plan.choice.arithmetic}_flops"
    return True


# A datasheet's or a config's field in words, for the public page (which names no plan path)
FIELD_WORDS = {"bytes_per_weight": "bytes per weight", "kv_bytes": "bytes per cached value",
               "bandwidth": "memory bandwidth", "bf16_flops": "BF16 peak", "fp8_flops": "FP8 peak",
               "attention_heads": "attention heads", "head_dim": "head size", "hidden_size": "hidden size",
               "kv_heads": "KV heads", "layers": "layers"}


def input_words(path: str) -> str:
    """An input of a number's formula as the public page names it: its meaning, or its field in words."""
    if path in EXPLANATIONS and EXPLANATIONS[path].meaning:
        return public_words(EXPLANATIONS[path].meaning)
    field = path.rsplit(".", 1)[-1]
    owner = {"gpu": "the GPU's", "model": "the model's", "dtype": "the data type's"}.get(path.split(".")[-2], "")
    return f"{owner} {FIELD_WORDS.get(field, field.replace('_', ' '))}".strip()


READABLE = {
    "FLOP/s": lambda v: fmt.teraflops(v, short=True), "bytes/s": lambda v: fmt.bandwidth(v, short=True),
    "seconds": lambda v: fmt.duration(v, short=True), "tokens/s": lambda v: fmt.tokens_per_second(v, short=True),
    "operations/byte": lambda v: fmt.ops_per_byte(v, short=True),
    "operations": lambda v: f"{fmt.large(v)} operations", "parameters": lambda v: f"{fmt.large(v)} parameters",
    "bytes": lambda v: fmt.gigabytes(v, short=True) if v >= 1e8 else f"{fmt.count(v)} bytes",
    "tokens": lambda v: f"{fmt.count(v)} tokens", "users": lambda v: f"{fmt.count(v)} users",
    "experts": lambda v: f"{fmt.approx(v)} experts", "share": lambda v: fmt.percent(v, short=True),
    "times": lambda v: fmt.times(v, short=True), "seconds per token": lambda v: fmt.nanoseconds(v),
}


def written(value, unit: str) -> str:
    """A value as the film writes it in its unit ('989 TFLOP/s', '34 ms', '13%', '3.2×'); a count with every
    digit (4,096, not 4,100)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if unit in READABLE:
        return READABLE[unit](value)
    if isinstance(value, int):
        return fmt.count(value)
    return fmt.plain(fmt.significant(value, 3))


def exact(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,}" if isinstance(value, int) or float(value).is_integer() else f"{value:.6g}"


def fit_view(fit, gpu_name: str, ceiling_tokens_per_second: float, public: bool = False) -> dict | None:
    """A measured endpoint's fit (the plan's MeasuredFit) as the pages and `film calibrate` show it: its figures
    in words, each with its uncertainty, each measured figure beside the fitted one, and the notes. `public`: each
    measured figure as its source gives it, without the precision the fit weighs it by (no measurement gave that)."""
    if fit is None:
        return None
    seconds = fmt.precise_seconds

    def share(figure) -> str:
        return fmt.share_of(figure.value, figure.uncertainty)

    figures = []
    if fit.overhead_seconds:
        figures.append(("Overhead per request", fmt.precise_seconds(fit.overhead_seconds.value,
                                                                          fit.overhead_seconds.uncertainty),
                        # (the public page gives no share of a wait beside the film's own "88% network": a reader
                        # takes two shares of the waits for one figure)
                        (f"{fit.overhead_share:.1%} of the shortest prompt's wait: "
                         if fit.overhead_share is not None and not public else "waited outside prefill on every "
                         "request: ") + "network, queueing, preparing the prompt"))
    if fit.step_overhead_seconds:
        figures.append(("Overhead per step", fmt.precise_seconds(fit.step_overhead_seconds.value,
                                                                 fit.step_overhead_seconds.uncertainty),
                        "spent by every step of the engine besides its work: scheduling, sampling, streaming"))
    if fit.compute_efficiency:
        figures.append(("Prefill arithmetic", share(fit.compute_efficiency),
                        f"of the {gpu_name}'s peak: {fmt.teraflops(fit.achieved_flops, short=True)}"))
    if fit.memory_efficiency:
        figures.append(("Decode bandwidth", share(fit.memory_efficiency),
                        f"of the {gpu_name}'s: {fmt.bandwidth(fit.achieved_bandwidth, short=True)}, about "
                        f"{fmt.tokens_per_second(fit.expected_tokens_per_second, short=True)} for one user, "
                        f"{fmt.tokens_per_second(ceiling_tokens_per_second, short=True)} at best"))
    if fit.kv_slope_seconds_per_token:
        slope = fit.kv_slope_seconds_per_token
        figures.append(("KV slope", f"{fmt.nanoseconds(slope.value, slope.uncertainty)} a cached token",
                        f"{fmt.nanoseconds(fit.kv_slope_predicted_seconds_per_token)} from the KV bytes at the fitted "
                        f"bandwidth; on its own, {share(fit.kv_slope_efficiency)} of it"))
    points = [{"what": (f"TTFT at {point.prompt_tokens:,} tokens" if point.kind == "ttft" else
                        f"decode step at {point.prompt_tokens:,} cached tokens" + (f", {point.streams} streams"
                                                                            if point.streams > 1 else "")),
               "measured": ("about " if point.approximate else "")
               + (seconds(point.measured_seconds) if public else
                  fmt.precise_seconds(point.measured_seconds, point.precision_seconds)),
               "fitted": seconds(point.fitted_seconds),
               "residual": fmt.signed_percent((point.measured_seconds - point.fitted_seconds) / point.fitted_seconds)}
              for point in fit.points]
    return {"figures": figures, "points": points, "notes": fit.notes}
