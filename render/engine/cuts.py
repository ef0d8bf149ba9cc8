"""How a beat meets its neighbours, in numbers the engine and the film's look share (no Manim: the pages read the
palette too): the background every frame is drawn on and every cut fades through, the fade's length, and how far a
change leads the word that names it."""

BACKGROUND = "#0e1116"
TRANSITION = 0.4       # seconds of fade in at a beat's start and out at its end
LEAD = 0.15            # an animation starts this much before its cue, so the change lands on the word
