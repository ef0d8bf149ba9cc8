"""`film calibrate`: a measured dataset's fit (render/specs/calibration.py) as the pages show it (one view:
render/publish/explain.py), in text, and as the block `film measure` stores in the dataset it writes."""

from __future__ import annotations

from render import formatting as fmt
from render.plan.codec import to_data
from render.plan.numbers import measured_fit
from render.plan.types import MeasuredFit
from render.publish.explain import fit_view
from render.specs import roofline as rl
from render.specs.calibration import Calibration


def plan_fit(fit: Calibration) -> MeasuredFit:
    """The fit as the plan carries it (shares of the shortest measured prompt's wait)."""
    return measured_fit(fit, min((point.prompt_tokens for point in fit.points if point.kind == "ttft"), default=0))


def report(fit: Calibration) -> str:
    deployment = fit.deployment
    gpu = f"{deployment.gpus}× {deployment.gpu.name}" if deployment.gpus > 1 else deployment.gpu.name
    peak = rl.peak_flops(deployment.gpu, deployment.dtype) * deployment.gpus
    bandwidth = deployment.gpu.bandwidth * deployment.gpus
    view = fit_view(plan_fit(fit), deployment.gpu.name, rl.decode_tokens_per_second(deployment))
    lines = [f"calibration of {fit.dataset_id}: {deployment.model.name} in {deployment.dtype.name} against {gpu}'s "
             f"ceilings ({fmt.teraflops(peak, short=True)}, {fmt.bandwidth(bandwidth, short=True)})"]
    lines += [f"  {name if name.split()[0].isupper() else name.lower():<22}{value}  ({meaning})"
              for name, value, meaning in view["figures"]]
    lines.append("  each figure against the fit (residual: (measured − fitted) ÷ fitted):")
    lines += [f"    {point['what']:<38} measured {point['measured']}, fitted {point['fitted']}, residual "
              f"{point['residual']}" for point in view["points"]]
    lines += [f"  note: {note}" for note in view["notes"]]
    return "\n".join(lines)


def as_data(fit: Calibration) -> dict:
    """The fit as `film measure` stores it beside the timings (the film fits again from them: this is a record)."""
    return {"against": {"gpu": fit.deployment.gpu.id, "gpus": fit.deployment.gpus, "model": fit.deployment.model.id,
                        "precision": fit.deployment.dtype.id},
            **to_data(plan_fit(fit))}
