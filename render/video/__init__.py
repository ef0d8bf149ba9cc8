"""Stage 4, the pictures and the film: scenes/ rendered with Manim from the timed plan, then joined.

    beats.py   one beat's pictures (a BeatRender), a beat with its sound, stills, the contact sheet
    cache.py   the beat cache: when a beat's video can be reused
    film.py    make film: narration, cached parallel beat renders, join, mux, check, poster
"""
