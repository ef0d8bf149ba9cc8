"""The film pipeline, by stage (each imports only the ones before it):

    specs/    data/ loaded and checked; the roofline maths
    plan/     the storyboard (and the page's words) resolved for one choice into the typed plan
    voice/    the narration: speech fitted to the beats, the timed plan, the track, subtitles
    engine/   what a beat is written against (BeatScene) and the plumbing that draws it, on Manim
    video/    the beats (scenes/, on engine/) rendered from the timed plan, cached, joined into the film
    publish/  what goes out with a film: the publishing kit, the film's page and the review page
    cluster/  many films at once on a Dask cluster, each shared beat rendered once
    studio/   make studio: each saved edit drawn again on a page on 127.0.0.1
    measure/  film measure: a live endpoint's time to first token and decode speed, as a dataset
    serving/  film load: a deployment serving a stream of requests, simulated step by step on the roofline
    tools/    setup, make bench, check-choices, goldens, calibrate

beside what every stage shares: errors.py (one message, never a traceback), files.py (where files live, written
whole), formatting.py (every number as the film writes it), formulas.py (the film's formulas, for scenes and page),
media.py (ffmpeg and ffprobe), text.py (free text made safe to show), logs.py (only the project's own messages
reach the terminal), memo.py (what every command works out again from the same files, kept between processes),
code.py (the project's Python sources read, parsed and followed through their imports; a result its code computes,
kept by those files' bytes); and cli.py, the `film` command (its options in arguments.py).
"""

__version__ = "0.1.0"
