"""Serving under load: a deployment answering a stream of requests, simulated step by step on the roofline.

    workload.py    the requests: Poisson arrivals, fixed or log-normal lengths, or a trace file
    costs.py       what a step costs (render/specs/roofline.py's forward_step, at the ceilings or the achieved
                   shares), a run of decode steps in closed form, and the KV cache's capacity in blocks
    engine.py      one instance: its queue, its decoding sequences, its cache's blocks, pre-emption
    schedulers.py  static batching, continuous batching, chunked prefill, disaggregation (a class each)
    simulate.py    a workload through a scheduler: each request's arrival, first and last token
    metrics.py     percentiles, throughput, goodput at objectives, and a scheduler's capacity
    load.py        a load (deployment, schedulers, stream): run once under each scheduler, or swept over rates
    watch.py       a long simulation seen to: progress past a few seconds, a bound, the setting that makes it long
"""
