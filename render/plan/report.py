"""What the plan says, as text: `film roofline` (a deployment's spec sheet and the timing of each phase at a prompt,
a batch and a context, typed as the plan's own SpecSheet, as the table a person reads or the JSON a script reads)
and `film plan` (each beat's times, words and captions, and the module that draws it)."""

from __future__ import annotations

from dataclasses import dataclass

from render import formatting as fmt
from render.plan import codec
from render.plan.beat_scene import scene_of
from render.plan.numbers import spec_sheet
from render.plan.types import Plan, SpecSheet
from render.specs import roofline as rl
from render.specs.types import Deployment


@dataclass(frozen=True)
class PhaseTiming:
    """One phase's step on the roofline: its work, its bytes, which resource limits it and its rate."""

    tokens: int               # the tokens it carries: the prompt's for prefill, one per user for decode
    batch: int
    context_tokens: int       # cached tokens each user rereads
    operations: float
    bytes_per_gpu: float
    ops_per_byte: float
    seconds: float
    compute_seconds: float
    memory_seconds: float
    communication_seconds: float
    bound: str                # "compute" or "memory"
    tokens_per_second: float  # prefill: the prompt's tokens through it a second (not one over the TTFT)

    @classmethod
    def of(cls, deployment: Deployment, step: rl.Step, tokens: int, batch: int, context: int) -> PhaseTiming:
        timing = rl.time_on(deployment, step)
        return cls(tokens=tokens, batch=batch, context_tokens=context, operations=step.operations,
                   bytes_per_gpu=step.bytes, ops_per_byte=step.ops_per_byte, seconds=timing.seconds,
                   compute_seconds=timing.compute_seconds, memory_seconds=timing.memory_seconds,
                   communication_seconds=timing.communication_seconds, bound=timing.bound,
                   tokens_per_second=tokens / timing.seconds)


@dataclass(frozen=True)
class RooflineReport:
    gpu: str
    model: str
    dtype: str
    arithmetic: str                     # the format the multiplies run in (bf16 for weight-only FP8 on an A100)
    spec: SpecSheet
    prefill_attention_fraction: float
    batch_size_at_ridge: int | None     # None: decode never reaches the ridge at this context
    phases: dict[str, PhaseTiming]      # prefill, decode (one user) and, for a batch, decode_batch

    def as_data(self) -> dict:
        """The JSON `film roofline --json` prints: the ids and the spec sheet's figures at the top level."""
        data = codec.to_data(self)
        spec = data.pop("spec")
        ids = {key: data.pop(key) for key in ("gpu", "model", "dtype", "arithmetic")}
        return {**ids, **spec, **data}


def asked_roofline(deployment: Deployment, prompt: int, batch: int, context: int) -> RooflineReport:
    """`film roofline`: the report, refused (one message) where the prompt or the batch's cache does not fit."""
    rl.check_fits(deployment, max(prompt, batch * context),
                  f"a {prompt:,}-token prompt" if prompt >= batch * context
                  else f"{batch} sequences of {context:,} cached tokens")
    return roofline_report(deployment, prompt, batch, context)


def roofline_report(deployment: Deployment, prompt: int, batch: int, context: int) -> RooflineReport:
    """Each phase's timing at a prompt, a batch and a context."""
    phases = {"prefill": PhaseTiming.of(deployment, rl.prefill(deployment, prompt), prompt, 1, 0),
              "decode": PhaseTiming.of(deployment, rl.decode_step(deployment, 1, context), 1, 1, context)}
    if batch > 1:
        phases["decode_batch"] = PhaseTiming.of(deployment, rl.decode_step(deployment, batch, context), batch,
                                                batch, context)
    return RooflineReport(
        gpu=deployment.gpu.id, model=deployment.model.id, dtype=deployment.dtype.id,
        arithmetic=rl.arithmetic_format(deployment.gpu, deployment.dtype), spec=spec_sheet(deployment),
        prefill_attention_fraction=rl.prefill_attention_fraction(deployment.model, prompt),
        batch_size_at_ridge=rl.batch_size_at_ridge(deployment, context), phases=phases)


def roofline_table(label: str, deployment: Deployment, report: RooflineReport) -> str:
    """The report as a person reads it: the spec sheet in three lines, a row a phase, where decode meets the ridge."""
    dtype, spec, gpus = deployment.dtype, report.spec, deployment.gpus
    per_gpu = " per GPU" if gpus > 1 else ""
    lines = [
        label + (" (weight-only, BF16 arithmetic)" if report.arithmetic != dtype.arithmetic or dtype.weight_only
                 else ""),
        f"  peak {fmt.teraflops(spec.peak_flops, short=True)}, bandwidth "
        f"{fmt.bandwidth(spec.memory_bandwidth, short=True)}, "
        f"ridge {fmt.ops_per_byte(spec.ridge_ops_per_byte, short=True)}{per_gpu}",
        f"  weights {fmt.gigabytes(spec.weight_bytes, short=True)}"
        + (f" ({fmt.gigabytes(spec.weight_bytes_per_gpu, short=True)} per GPU)" if gpus > 1 else "")
        + f", KV cache {fmt.count(spec.kv_bytes_per_token)} bytes/token "
        f"({fmt.bytes_per_token(spec.kv_bytes_per_token, short=True)}, {spec.kv_dtype.upper()})",
    ]
    if spec.active_parameters != spec.parameters:
        lines.append(f"  mixture of experts: {fmt.part_of(spec.active_parameters, spec.parameters)} "
                     f"parameters used per token")
    if gpus > 1:
        lines.append(f"  interconnect {fmt.bandwidth(spec.interconnect_bandwidth, short=True)} per GPU each way, "
                     f"all-reduce latency {spec.allreduce_latency_seconds * 1e6:g} µs"
                     + (" (assumed)" if spec.allreduce_latency_is_assumption else ""))
    lines += [
        "",
        f"  {'phase':<13}{'tokens':>8}{'batch':>7}{'context':>9}{'operations':>12}{'bytes/GPU':>11}"
        f"{'ops/byte':>10}{'time':>10}{'all-reduce':>12}  {'bound':<8}{'rate':>14}",
    ]
    for name, phase in report.phases.items():
        rate = (f"TTFT {fmt.duration(phase.seconds, short=True)}" if name == "prefill"
                else fmt.tokens_per_second(phase.tokens_per_second, short=True))
        all_reduce = fmt.duration(phase.communication_seconds, short=True) if phase.communication_seconds else "-"
        lines.append(
            f"  {name.replace('_', ' '):<13}{fmt.count(phase.tokens):>8}{phase.batch:>7}"
            f"{fmt.count(phase.context_tokens):>9}{fmt.large(phase.operations, short=True):>12}"
            f"{fmt.gigabytes(phase.bytes_per_gpu, short=True):>11}"
            f"{fmt.ops_per_byte(phase.ops_per_byte, unit=False):>10}"
            f"{fmt.duration(phase.seconds, short=True):>10}{all_reduce:>12}  {phase.bound:<8}{rate:>14}"
        )
    lines += [
        "",
        f"  prefill attention: {fmt.percent(report.prefill_attention_fraction, short=True)} of its operations",
        f"  decode reaches the ridge at batch {fmt.count(report.batch_size_at_ridge)}" if report.batch_size_at_ridge
        else "  decode never reaches the ridge at this context: each sequence's KV cache grows with the batch",
    ]
    return "\n".join(lines)


def plan_listing(plan: Plan) -> str:
    """`film plan`: the choice, then each beat's times, title and module, its narration and its captions."""
    choice = plan.choice
    lines = [f"{plan.title}: {choice.gpu.name}, {choice.model.name}, {choice.dtype.name} "
             f"(compared with {choice.compare_gpu.name}; measured: {choice.measured_id})"]
    for beat in plan.beats:
        times = f"{fmt.timestamp(beat.start)}-{fmt.timestamp(beat.end)}"
        lines += ["", f"{times}  {beat.title}  [{scene_of(beat.id).path}]", f"  {beat.narration}",
                  *(f"  ({name}) {caption}" for name, caption in beat.captions.items())]
    return "\n".join(lines)
