"""Stage 3, the voice: the plan's narration spoken, fitted to the beats' slots and levelled.

    speech.py      speech engines (hibari, piper) behind one interface, and the clip cache
    audio.py       pydub, ffmpeg, pyloudnorm and scipy: cutting, joining, stretching, levelling
    subtitles.py   clauses, subtitle cues of two 42-character lines, SRT and WebVTT
    narration.py   voices every beat; returns the timed plan, writes the subtitles
    track.py       the beats' speech as one track, matched, levelled (once per speeches) and encoded for the film
"""
