"""Stage 6, the pictures and the film: scenes/ (written on render/engine/) rendered from the timed plan, then joined.

    quality.py   the qualities a beat renders at and how its video is encoded
    beats.py     one beat's pictures (a BeatRender), stills, the contact sheet, the layout lint
    runner.py    where the parts of beats are drawn (processes here, or a Dask cluster); make scene
    cache.py     the beat cache: when a beat's video can be reused
    sources.py   the scenes' source files, read and parsed once per version
    cues.py      the cues each scene waits for, checked against those its beat marks
    settling.py  when each beat's picture settles after each cue (the stills are taken there)
    frames.py    Manim's frames handed to the encoder without new buffers; held pictures repeated
    h264.py      a held picture's repeats as H.264 frames that skip every macroblock
    shapes.py    the outlines of text and formulas, kept between renders
    scheduler.py films made from their beats on a runner: make film schedules one, make films many
    finish.py    a film's last step: its beats joined, muxed with the narration, chapters, checked, poster
"""
