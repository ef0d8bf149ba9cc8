"""The film's formulas, written once: the scenes typeset them (Manim's MathTex) and the film's page shows
them (MathML converted from the same LaTeX), so the page can never show a different formula.

A formula is its parts, as MathTex takes them: each a piece of LaTeX and the role that colours it like
the picture it explains (compute warm, memory cool, the KV cache in its accent). The LaTeX a formula
is typeset from is its parts joined by spaces, as MathTex joins them.
"""

from __future__ import annotations

from dataclasses import dataclass

TEXT, COMPUTE, MEMORY, KV_CACHE, MUTED, HIGHLIGHT = "text", "compute", "memory", "kv-cache", "muted", "highlight"


@dataclass(frozen=True)
class Formula:
    parts: tuple[tuple[str, str], ...]   # (LaTeX, role)

    @property
    def latex(self) -> str:
        return " ".join(tex for tex, _ in self.parts)


def formula(*parts: str | tuple[str, str]) -> Formula:
    return Formula(tuple((part, TEXT) if isinstance(part, str) else part for part in parts))


# The latency of an answer of n tokens: the wait, then one step per remaining token.
LATENCY = formula(r"\text{latency}", "=", (r"\text{TTFT}", COMPUTE), "+", r"(n-1)\cdot", (r"\text{TPOT}", MEMORY))
# A prefill's work: two operations per weight per token, and causal attention's square of the prompt.
PREFILL_WORK = formula(r"\text{operations}", "=", (r"2PN", COMPUTE), "+", (r"2LdN^2", KV_CACHE))
# The roofline and its ridge.
ATTAINABLE = formula(r"\text{attainable FLOP/s}")
ROOFLINE = formula("=", r"\min(", (r"\text{peak}", COMPUTE), ",", (r"I \times \text{bandwidth}", MEMORY), ")")
RIDGE = formula((r"\text{ridge}", HIGHLIGHT), "=", r"\frac{\text{peak}}{\text{bandwidth}}")
# What a decode step reads: the weights once for the batch, and every sequence's own cache.
BYTES_PER_STEP = formula(r"\text{bytes per step}", "=", ("W", MEMORY), "+", (r"B\,C\,k", KV_CACHE))
BYTES_PER_STEP_MOE = formula(r"\text{bytes per step}", "=", (r"W_\text{read}", MEMORY), "+", (r"B\,C\,k", KV_CACHE))
# Why the cache slows decode: its bytes as a share of the weights'.
CACHE_SHARE = formula((r"\frac{C\,k}{W}", KV_CACHE))
# A measured first token: the prompt's prefill, and the rest of the wait (network, queueing, the provider's own work).
MEASURED_WAIT = formula(r"\text{TTFT}_\text{measured}", "=", (r"\text{prefill}", COMPUTE), "+",
                        (r"\text{the rest}", MUTED))


def token_time(mixture_of_experts: bool, gpus: int) -> Formula:
    """A decode step's time at batch 1: the weights read over the bandwidth (plus the all-reduces on several)."""
    read = r"\text{weights read}" if mixture_of_experts else r"\text{weight bytes}"
    if gpus == 1:
        return formula(r"t_\text{token}", "=", (rf"\frac{{{read}}}{{\text{{bandwidth}}}}", MEMORY))
    return formula(r"t_\text{token}", "=", (rf"\frac{{{read}}}{{T \times \text{{bandwidth}}}}", MEMORY), "+",
                   (r"\text{all-reduces}", MUTED))


def bytes_per_step(mixture_of_experts: bool) -> Formula:
    return BYTES_PER_STEP_MOE if mixture_of_experts else BYTES_PER_STEP
