"""Stage 4, the engine any beat renders on: what a beat is written against and the plumbing behind it (Manim's own
split of scene and renderer). The film's beats (scenes/, stage 5) stand on it; render/video/ (stage 6) renders them.

    scene.py        BeatScene, the authoring API: the beat's view of the timed plan, cues to wait for (at,
                    hold_until, repeat_until, wait_for, cue), numbers_here, enter, hand_over, an exact length
    drawing.py      DrawnScene, the plumbing: renderer hooks, every play exactly its frames, parts, stills, layers,
                    the checks after every play
    cuts.py         the background every cut fades through, the fade's length, how far a change leads its cue
    layers.py       draw only what a play changes, over the picture it leaves still
    layout_lint.py  what a picture gets wrong (text over text or a line, off the frame, too small), from boxes
    camera.py       a camera that traces an outline once while its points stay the same
    copying.py      copies that share what never changes
    families.py     a mobject's family listed in one pass
    internals.py    every place the renderer reaches into Manim, PyAV or svgelements, and the tested versions
    encoder.py      Manim's segment encoder as the renderer uses it (its private members read here alone)
    svg.py          Manim's cache of parsed SVGs and its key, as the kept shapes use them

A beat module imports scene.py (and cuts through the film's style), never drawing.py.
"""
