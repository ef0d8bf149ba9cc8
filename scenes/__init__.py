"""The film's pictures: one module per beat, named by its id, drawing only what the timed plan says.

    two_waits.py          two waits: the chat, the timeline of prefill and decode
    prefill.py            the sluice: the whole prompt floods through the chip at once
    decode.py             the tap: one token a step, each rereading the weights
    roofline.py           the roofline: where each job sits on one GPU's limits
    batching.py           many users share one read of the weights
    wasted_money.py       two GPUs side by side, then a long prompt's attention
    measured.py           a real endpoint's first-token waits beside the ideal prefill
    cache_rides_along.py  its decode rates, slower by what the long prompt's cache adds to each step
    queue.py              (CUT=extended) requests arriving: static and continuous batching, the KV cache's blocks
    long_prompt.py        (CUT=extended) one long prompt stalls every decode; chunked prefill spreads it
    capacity.py           (CUT=extended) the slowest first tokens against the rate: each scheduler's capacity
    two_budgets.py        what each wait answers to, then the end card

and the pictures they share: pictures/ (what each beat hands the next, built from the plan, so that no beat imports
another; the stage prefill and decode stand on), figures/ (the recurring objects, a module by what they draw:
text, the chip with its wall and KV stacks, counters and bars, charts) and style.py (palette, font, sizes and the
safe area); all written on the engine in render/engine/ (BeatScene, render/engine/scene.py), which imports nothing of
scenes/.

Each beat is a BeatScene subclass named by the CamelCase of its id, in the module its id names. Scenes
compose the shared objects of figures/ in the palette of style.py and write every number with
render/formatting.py; they read the plan's attributes and never read YAML or compute physics.
"""

from importlib import import_module

from render.errors import FilmError
from render.plan.beat_scene import scene_of, scene_problem


def scene_class(beat_id: str):
    """The BeatScene subclass that draws `beat_id`: the class its id names, in the module its id names."""
    problem = scene_problem(beat_id)
    if problem:
        raise FilmError(f"no scene draws beat {beat_id!r}: {problem}")
    scene = scene_of(beat_id)
    return getattr(import_module(scene.module), scene.name)
