"""The storyboard reads as a script (issue 44): its branches are named phrase filters (render/plan/phrases.py), each
read here across the layout lint's choices against the plan's numbers, as the narration they make is."""

from __future__ import annotations

import re

import pytest

from render import formatting as fmt
from render.files import STORYBOARD_PATH
from render.plan import phrases
from test_layout import LINT_CHOICES, plan_of

CHOICES = [("h100-sxm", 1, "llama-3.1-8b", "bf16"), ("a100-sxm-80gb", 1, "llama-3.1-8b", "bf16"),
           ("h200-sxm", 1, "llama-3.1-8b", "bf16"), *LINT_CHOICES]
MAX_BRANCHES = 5


@pytest.fixture(scope="module")
def plans():
    return {choice: plan_of(choice) for choice in CHOICES}


def test_the_storyboard_branches_at_most_five_times_and_uses_every_phrase():
    text = STORYBOARD_PATH.read_text(encoding="utf-8")
    assert len(re.findall(r"\{%-?\s*(?:if|elif)\b", text)) <= MAX_BRANCHES
    assert not re.search(r"\{%-?\s*set\b", text)
    used = set(re.findall(r"\|\s*([a-z_]+)", text))
    assert set(phrases.PHRASES) <= used, sorted(set(phrases.PHRASES) - used)


@pytest.mark.parametrize("choice", CHOICES, ids=lambda choice: "/".join(map(str, choice)))
def test_each_phrase_says_what_the_numbers_say(plans, choice):
    plan = plans[choice]
    spec, numbers, expected, gpu = plan.spec, plan.numbers, plan.expected, plan.choice.hardware
    here = expected or numbers
    prefill, decode, framing = numbers.prefill, numbers.decode, numbers.compare.framing
    beat = {b.id: b.narration for b in plan.beats}

    busy = phrases.how_busy(prefill, spec)
    assert (busy == "with every core busy") == (prefill.communication_fraction < 0.1
                                                 and prefill.ops_per_byte >= spec.ridge_ops_per_byte)
    assert ("between GPUs" in busy) == (prefill.communication_fraction >= 0.1)
    assert busy in beat["prefill"]

    reads = phrases.reads_per_token(spec)
    assert reads.startswith("reads " if spec.experts else "rereads all ") and reads in beat["decode"]
    rate = phrases.token_rate(decode, expected)
    assert f"about {rate}." in beat["decode"]
    assert (" here, " in rate) == (expected is not None)
    assert rate.startswith(fmt.integer(here.decode.tokens_per_second))

    growth = phrases.step_growth(here, spec, expected)
    assert ("waking" in growth) == bool(spec.experts) and ("only from" in growth) == (not spec.experts)
    assert fmt.milliseconds(here.batch.step_seconds) in growth and growth in beat["batching"]

    against = phrases.bandwidth_against(framing), phrases.decode_gets(framing)
    if framing.bandwidth_ratio < 1 and fmt.times(framing.bandwidth_ratio) != "the same":
        assert against == (f"but only {fmt.times(framing.bandwidth_ratio)} its bandwidth", "slower, not faster")
    elif framing.bandwidth_ratio >= framing.flops_ratio:
        assert against[0].startswith("and ") and against[1] == fmt.faster(framing.decode_speedup)
    assert f"{against[0]}, so one user's decode gets {against[1]}," in beat["wasted-money"]
    waits = phrases.waits(framing, gpu)
    assert (waits == "still waits") == (framing.subject.id == gpu.id)
    assert ("while on " in beat["wasted-money"]) == (framing.subject.id != gpu.id or spec.gpus > 1)

    m = plan.measured
    assert phrases.short_waits(m).endswith(",") and phrases.mostly(m) in beat["measured"]
    assert phrases.because_or_while(m) == ("because" if abs(m.slowdown - m.long_kv_ratio) <= m.long_kv_ratio / 4
                                           else "while")
    assert phrases.slower_or_faster(m.slowdown) in beat["cache-rides-along"]
