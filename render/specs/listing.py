"""`film list`: the catalog's GPUs, models, data types or measured datasets as a table for a terminal."""

from __future__ import annotations

import logging

from render import formatting as fmt
from render.errors import FilmError
from render.specs import roofline as rl
from render.specs.catalog import Catalog
from render.text import clean_text, table

log = logging.getLogger("film")


def catalog_table(catalog: Catalog, what: str) -> str:
    """One kind of the catalog's entries, a row each, with its source: gpus, models, dtypes or measured."""
    if what == "gpus":
        rows = [(g.id, g.name, fmt.teraflops(g.bf16_flops, short=True),
                 fmt.teraflops(g.fp8_flops, short=True) if g.fp8_flops else "-",
                 fmt.bandwidth(g.bandwidth, short=True), f"{g.memory_gib:g} GiB", f"{g.sm_count} {g.compute_unit}s",
                 fmt.bandwidth(g.interconnect_bandwidth, short=True), g.source)
                for g in catalog.gpus.values()]
        header = ("id", "name", "BF16", "FP8", "bandwidth", "memory", "SMs / CUs", "GPU-GPU each way", "source")
    elif what == "models":
        rows = [(m.id, m.name, f"{m.parameters / 1e9:.2f}B",
                 f"{rl.active_parameters(m) / 1e9:.2f}B" if m.is_moe else "-",
                 f"{m.experts_per_token}/{m.experts}" if m.is_moe else "-", str(m.layers), str(m.hidden_size),
                 f"{m.attention_heads}/{m.kv_heads}" + (" MLA" if m.is_mla else ""), str(m.head_dim),
                 str(m.ffn_size), f"{m.vocab_size:,}", m.source)
                for m in catalog.models.values()]
        header = ("id", "name", "params", "active", "experts", "layers", "hidden", "heads/kv", "head_dim", "ffn",
                  "vocab", "source")
    elif what == "dtypes":
        rows = [(d.id, d.name, f"{d.bytes_per_weight:g}", d.arithmetic, "yes" if d.weight_only else "no",
                 f"{d.kv_dtype} ({d.kv_bytes:g} B)", d.source) for d in catalog.dtypes.values()]
        header = ("id", "name", "bytes/weight", "arithmetic", "weight-only", "KV cache", "source")
    else:
        rows = []
        for dataset_id in catalog.measured_ids():
            try:
                data = catalog.measured(dataset_id)
            except FilmError as error:  # the others are still worth listing; this one is named with its problem
                log.warning("left out: %s", clean_text(str(error)))
                continue
            rows.append((data.id, data.provider, data.precision, data.model, data.compared_gpu
                         + (" (assumed)" if data.compared_gpu_is_assumption else ""),
                         ", ".join(f"{p.prompt_tokens:,}" for p in data.prompts), data.source))
        header = ("id", "provider", "precision", "model", "compared with", "prompts", "source")
    return table(header, rows)
