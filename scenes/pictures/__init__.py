"""The film's shared pictures: what a beat hands the next, built from the plan, so that no beat imports another.

    stage.py              the chip, the weights wall and the bus prefill and decode stand on
    two_waits.py          the opening's chat and timeline (prefill starts from it)
    prefill.py            prefill's last picture (decode starts from it)
    decode.py             decode's last picture (the roofline starts from it)
    roofline.py           the roofline chart on the film's GPU (batching starts from it)
    batching.py           the wall and the chart as batching leaves them (wasted money starts from them)
    wasted_money.py       a long prompt's prefill, split (the measured beat starts from it)
    measured.py           the measured waits beside the ideal prefill (the cache beat starts from it)
    cache_rides_along.py  the decode rates under the ceiling (two budgets opens on its bars)
    under_load.py         the extended cut's: the queue and its slots, one long prompt's steps, the capacity chart

A beat module imports its own picture (to animate towards it) and its predecessor's (to start from it), never the
predecessor's module: an edit to a beat's animation re-renders that beat alone, an edit to what it hands over that
beat and the next.
"""
