"""The deployment the studio draws, chosen on its page without a restart: GPU, model, data type, GPU count, the KV
cache's format and EFFICIENCY=. What the page sends is checked here (ids and counts only: never a path, never more
than a line) before the resolve step checks it against the catalog like any command line's choice."""

from __future__ import annotations

import re

from render.errors import FilmError
from render.files import DATA_DIR
from render.plan.resolve import kv_formats
from render.plan.types import Plan
from render.specs.catalog import load_catalog
from render.specs.roofline import LARGEST_GPU_COUNT
from render.text import echo

FIELDS = ("gpu", "model", "dtype", "gpus", "kv_dtype", "efficiency")
CATALOG_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,79}")
EFFICIENCY = re.compile(r"[a-z0-9][a-z0-9._=,-]{0,119}")  # a measured dataset's id, or compute=…,memory=…
MAX_BODY_BYTES = 4096


def asked_choice(data: object) -> dict[str, object]:
    """The page's choice as FilmRequest fields (an empty value: the storyboard's), or one message saying which
    value is wrong and what to give."""
    if not isinstance(data, dict) or set(data) - set(FIELDS):
        raise FilmError(f"a choice is an object of {', '.join(FIELDS)}")
    asked: dict[str, object] = {}
    for name in FIELDS:
        value = data.get(name)
        if value in (None, ""):
            asked[name] = None
        elif name == "gpus":
            if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isascii() \
                    or not str(value).isdigit() or not 1 <= int(value) <= LARGEST_GPU_COUNT:
                raise FilmError(f"GPUs {echo(value)}: give a whole number from 1 to {LARGEST_GPU_COUNT}")
            asked[name] = int(value)
        elif not isinstance(value, str) or not (EFFICIENCY if name == "efficiency" else CATALOG_ID).fullmatch(value):
            what = ("a measured dataset's id, or compute=…,memory=…" if name == "efficiency"
                    else "an id from the catalog (film list)")
            raise FilmError(f"{name} {echo(value)}: give {what}")
        else:
            asked[name] = value
    return asked


def choice_of(plan: Plan) -> dict[str, object]:
    """What the page's form shows as chosen: the plan's own choice, by id."""
    choice = plan.choice
    efficiency = choice.efficiency
    given = (efficiency.fitted_from or f"compute={efficiency.compute:g},memory={efficiency.memory:g},"
             f"overhead={efficiency.overhead_seconds:g}") if efficiency else ""
    return {"gpu": choice.gpu.id, "model": choice.model.id, "dtype": choice.dtype.id, "gpus": choice.gpus,
            "kv_dtype": "" if choice.kv_is_default else choice.dtype.kv_dtype, "efficiency": given,
            "label": choice.long_label}


def options() -> dict[str, list[list[str]]]:
    """What the page offers: the catalog's GPUs, models and data types (id and name), its KV formats and measured
    datasets."""
    catalog = load_catalog(DATA_DIR)
    return {"gpu": [[gpu.id, gpu.name] for gpu in catalog.gpus.values()],
            "model": [[model.id, model.name] for model in catalog.models.values()],
            "dtype": [[dtype.id, dtype.name] for dtype in catalog.dtypes.values()],
            "kv_dtype": [["", "the data type's own"], *([kv.id, kv.name] for kv in kv_formats(catalog).values())],
            "efficiency": [["", "the ceilings"], *([dataset, dataset] for dataset in catalog.measured_ids())]}
