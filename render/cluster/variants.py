"""Which films a matrix makes: VARIANTS written out, or MATRIX=all|gpus|models from the catalog.

    VARIANTS="h100-sxm/llama-3.1-8b/bf16 a100-sxm-80gb/llama-3.1-70b/int8/gpus=2/kv=fp8"
    MATRIX=all      every GPU x model x data type that fits (at GPUS=, one GPU by default)
    MATRIX=gpus     every GPU, with the chosen (else the storyboard's) model and data type
    MATRIX=models   every model, on the chosen (else the storyboard's) GPU and data type
"""

from __future__ import annotations

import re
from collections.abc import Callable

from render.errors import FilmError
from render.files import DATA_DIR
from render.plan.storyboard import Storyboard
from render.plan.types import FilmRequest, Plan
from render.specs.catalog import Catalog, load_catalog
from render.text import echo

MATRICES = ("all", "gpus", "models")
FORMAT = ("write each variant as GPU/MODEL/DTYPE with catalog ids (film list gpus|models|dtypes), optionally "
          "followed by /gpus=N and /kv=fp8, separated by spaces: "
          "VARIANTS=\"h100-sxm/llama-3.1-8b/bf16 a100-sxm-80gb/llama-3.1-70b/int8/gpus=2\"")


def parse_variants(text: str) -> list[FilmRequest]:
    """VARIANTS= as the user wrote it: one variant per word, GPU/MODEL/DTYPE[/gpus=N][/kv=X]."""
    variants = []
    for word in text.replace(",", " ").split():
        fields = word.split("/")
        if len(fields) < 3 or not all(fields[:3]):
            raise FilmError(f"VARIANTS: {echo(word)} is not GPU/MODEL/DTYPE; {FORMAT}")
        options = {}
        for option in fields[3:]:
            name, equals, value = option.partition("=")
            if name in options:
                raise FilmError(f"VARIANTS: {echo(word)}: {name}= is given twice; give each option once")
            if name not in ("gpus", "kv") or not equals or not value:
                raise FilmError(f"VARIANTS: {echo(word)}: {echo(option)} is not gpus=N or kv=DTYPE; {FORMAT}")
            options[name] = value
        gpus = None
        if "gpus" in options:
            if not re.fullmatch(r"[0-9]{1,4}", options["gpus"]):  # ASCII digits: '²' is a digit to isdigit()
                raise FilmError(f"VARIANTS: {echo(word)}: gpus={options['gpus']} is not a whole number of GPUs")
            gpus = int(options["gpus"])
        variants.append(FilmRequest(fields[0], fields[1], fields[2], gpus, options.get("kv")))
    if not variants:
        raise FilmError(f"VARIANTS is empty; {FORMAT}")
    return variants


def matrix_variants(kind: str, catalog: Catalog, storyboard: Storyboard, around: FilmRequest) -> list[FilmRequest]:
    """The candidate films of MATRIX=kind, around the given choice (the storyboard's where not
    given). Whether each fits is the plan's to say: a candidate that does not is left out."""
    defaults = storyboard.defaults
    gpu, model = around.gpu or defaults["gpu"], around.model or defaults["model"]
    dtype = around.dtype or defaults["dtype"]
    if kind == "all":
        choices = [(g, m, d) for g in catalog.gpus for m in catalog.models for d in catalog.dtypes]
    elif kind == "gpus":
        choices = [(g, model, dtype) for g in catalog.gpus]
    elif kind == "models":
        choices = [(gpu, m, dtype) for m in catalog.models]
    else:
        raise FilmError(f"MATRIX={kind}: use one of {', '.join(MATRICES)}")
    return [FilmRequest(g, m, d, around.gpus, around.kv_dtype) for g, m, d in choices]


def plans_for(variants: list[FilmRequest], resolve: Callable[[FilmRequest], Plan],
              strict: bool) -> tuple[list[Plan], list[str]]:
    """Each variant's plan, and the variants left out (with why). A variant the user wrote out must
    resolve (`strict`: its error names it); a matrix simply leaves out what does not fit."""
    plans, left_out = [], []
    for variant in variants:
        try:
            plan = resolve(variant)
        except FilmError as error:
            if strict:
                raise FilmError(f"VARIANTS: {variant}: {error}") from None
            left_out.append(f"{variant} ({str(error).split(':')[0]})")
            continue
        plans.append(plan)
    return plans, left_out


def films_asked(variants: str | None, matrix: str | None, around: FilmRequest, storyboard: Storyboard,
                resolve: Callable[[FilmRequest], Plan], say: Callable[[str], None] = print) -> list[Plan]:
    """`make films`: the plans VARIANTS= or MATRIX= asks for around the command line's choice (`resolve` makes a
    variant's plan with the command line's other settings); a matrix's choices that do not fit are left out and
    said, and a matrix of which none fits is refused."""
    if bool(variants) == bool(matrix):
        raise FilmError("make films: say which films, either VARIANTS=\"h100-sxm/llama-3.1-8b/bf16 …\" or "
                        f"MATRIX={'|'.join(MATRICES)} (not both)")
    if variants:
        if around.asks_deployment:
            raise FilmError("make films: with VARIANTS each variant names its own GPU, model and data type; "
                            "leave GPU, GPUS, MODEL, DTYPE and KV_DTYPE unset (or use MATRIX=gpus|models around them)")
        candidates = parse_variants(variants)
    else:
        candidates = matrix_variants(matrix, load_catalog(DATA_DIR), storyboard, around)
    plans, left_out = plans_for(candidates, resolve, strict=bool(variants))
    if left_out:
        say(f"films: MATRIX={matrix} leaves out {len(left_out)} of its {len(candidates)} choices, which do not fit: "
            + "; ".join(left_out[:3]) + (" …" if len(left_out) > 3 else ""))
    if not plans:
        raise FilmError(f"MATRIX={matrix}: no choice around {around} fits; try another GPU, more GPUS= or a "
                        f"smaller data type")
    return plans
