"""`film calibrate`: a measured dataset's fit (render/specs/calibration.py) as a reader wants it, in
words, and as the block `film measure` stores in the dataset it writes."""

from __future__ import annotations

from render import formatting as fmt
from render.specs import roofline as rl
from render.specs.calibration import Calibration, Estimate, Point
from render.specs.catalog import Catalog, MeasuredDataset
from render.specs.types import Deployment


def deployment_of(dataset: MeasuredDataset, catalog: Catalog, gpu: str | None = None, gpus: int = 1,
                  embedding_rows: bool = False) -> Deployment:
    """The deployment a dataset's timings are compared with: its model and precision on its GPU (or `gpu`), reading
    the bytes the storyboard's convention says a step reads (`embedding_rows`)."""
    deployment = Deployment(catalog.gpu(gpu or dataset.compared_gpu), catalog.model(dataset.model),
                            catalog.dtype(dataset.precision), gpus, embedding_rows)
    rl.check_gpu_count(deployment)
    return deployment


def share(estimate: Estimate) -> str:
    return fmt.share_of(estimate.value, estimate.uncertainty)


seconds = fmt.precise_seconds


def report(fit: Calibration) -> str:
    deployment = fit.deployment
    gpu = f"{deployment.gpus}× {deployment.gpu.name}" if deployment.gpus > 1 else deployment.gpu.name
    peak = rl.peak_flops(deployment.gpu, deployment.dtype) * deployment.gpus
    bandwidth = deployment.gpu.bandwidth * deployment.gpus
    lines = [f"calibration of {fit.dataset_id}: {deployment.model.name} in {deployment.dtype.name} against {gpu}'s "
             f"ceilings ({fmt.teraflops(peak, short=True)}, {fmt.bandwidth(bandwidth, short=True)})"]
    if fit.overhead_seconds is not None:
        lines.append(f"  overhead per request  {seconds(fit.overhead_seconds.value)} ± "
                     f"{seconds(fit.overhead_seconds.uncertainty)}  (waited outside prefill: network, queueing, "
                     f"the template)")
    if fit.compute_efficiency is not None:
        lines.append(f"  prefill arithmetic    {share(fit.compute_efficiency)} of peak  "
                     f"({fmt.teraflops(fit.achieved_flops * deployment.gpus, short=True)} achieved)")
        shortest = min(point.prompt_tokens for point in fit.points if point.kind == "ttft")
        lines.append(f"                        {fit.overhead_share(shortest):.1%} of a "
                     f"{shortest:,}-token prompt's wait is the overhead, not prefill")
    if fit.memory_efficiency is not None:
        ceiling = rl.decode_tokens_per_second(deployment)
        lines.append(f"  decode bandwidth      {share(fit.memory_efficiency)} of peak  "
                     f"({fmt.bandwidth(fit.achieved_bandwidth * deployment.gpus, short=True)} achieved: about "
                     f"{fmt.tokens_per_second(ceiling * fit.memory_efficiency.value, short=True)} for one user, "
                     f"{fmt.tokens_per_second(ceiling, short=True)} at best)")
    if fit.kv_slope is not None:
        slope = fit.kv_slope
        lines.append(f"  KV slope              {slope.seconds_per_token.value * 1e9:.1f} ± "
                     f"{slope.seconds_per_token.uncertainty * 1e9:.1f} ns a cached token, measured; "
                     f"{slope.predicted_seconds_per_token * 1e9:.1f} ns from the KV bytes at the fitted bandwidth "
                     f"({slope.ratio:.2f}×): on its own, {share(slope.efficiency)} of peak")
    lines.append("  each figure against the fit (residual: measured − fitted):")
    for point in fit.points:
        lines.append("    " + point_line(point))
    lines += [f"  note: {note}" for note in fit.notes]
    return "\n".join(lines)


def point_line(point: Point) -> str:
    what = f"TTFT at {point.prompt_tokens:,} tokens" if point.kind == "ttft" else (
        f"decode step at {point.prompt_tokens:,} cached" + (f", {point.streams} streams" if point.streams > 1 else ""))
    about = "about " if point.approximate else ""
    return (f"{what:<38} measured {about}{seconds(point.measured)} ± {seconds(point.precision)}, fitted "
            f"{seconds(point.fitted)}, residual {'+' if point.residual >= 0 else '−'}{seconds(abs(point.residual))} "
            f"({fmt.signed_percent(point.relative_residual)})")


def as_data(fit: Calibration) -> dict:
    """The fit as `film measure` stores it beside the timings (the film fits again from them: this is a record)."""
    def estimate(value: Estimate | None) -> dict | None:
        return None if value is None else {"value": round(value.value, 6), "uncertainty": round(value.uncertainty, 6)}

    return {
        "against": {"gpu": fit.deployment.gpu.id, "gpus": fit.deployment.gpus, "model": fit.deployment.model.id,
                    "precision": fit.deployment.dtype.id},
        "overhead_seconds": estimate(fit.overhead_seconds),
        "compute_efficiency": estimate(fit.compute_efficiency),
        "memory_efficiency": estimate(fit.memory_efficiency),
        "kv_slope_seconds_per_token": estimate(fit.kv_slope.seconds_per_token) if fit.kv_slope else None,
        "residuals": [{"kind": point.kind, "prompt_tokens": point.prompt_tokens, "streams": point.streams,
                       "measured_seconds": round(point.measured, 9), "fitted_seconds": round(point.fitted, 9)}
                      for point in fit.points],
        "notes": list(fit.notes),
    }
