"""Tools beside the pipeline.

    bootstrap.py      one-command setup on a fresh machine (standard library only)
    bench.py          make bench: render speed and memory, as ratios measured in one run
    studio_bench.py   make bench's studio edits: five of each kind, from the save to the still and the clip on the page
    check_choices.py  make check-choices: every GPU x model x data type x GPU count narrated
    goldens.py        make goldens: the stored stills the tests compare every beat with
    calibrate.py      film calibrate: a measured dataset's fit, as the pages show it
    load.py           film load: a simulated load's figures, a sweep's capacities, side by side
    measuring.py      film measure's whole run (a MeasureRequest): timed, written as a dataset, fitted, reported
    llama_server.py   llama.cpp's real server, for film measure's tests and make bench's check of a fit
    mutants.py        make mutants: planted bugs (tests/mutants.yaml), each in a copy, against the tests that catch it
"""
