"""The film pipeline, by stage (each imports only the ones before it):

    specs/   data/ loaded and checked; the roofline maths
    plan/    the storyboard resolved for one choice into the typed plan
    voice/   the narration: speech fitted to the beats, the timed plan, the track, subtitles
    video/   the beats rendered from the timed plan (scenes/), cached, joined into the film
    publish/ what goes out with a film: the publishing kit and the review page
    cluster/ many films at once on a Dask cluster, each shared beat rendered once
    tools/   setup, make bench, film measure

beside errors.py, files.py, formatting.py and media.py, which every stage shares, and cli.py.
"""

__version__ = "0.1.0"
