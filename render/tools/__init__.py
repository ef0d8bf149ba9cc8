"""Tools beside the pipeline.

    bootstrap.py   one-command setup on a fresh machine (standard library only)
    bench.py       make bench: render speed and memory, as ratios measured in one run
"""
