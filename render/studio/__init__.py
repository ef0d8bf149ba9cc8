"""`make studio`: edit the storyboard, the data or a scene, and see the beats it changes drawn again.

    session.py  what the page shows, and the update an edit starts (resolve, narrate, compare the beats'
                keys, draw one still of each changed beat, then their other stills and their clips)
    choosing.py the deployment chosen on the page (GPU, model, data type, GPUs, KV format, EFFICIENCY=), checked
    timeline.py the whole film on one timeline: chapters, cues, subtitles and the narration's waveform
    drawings.py the drawings (a beat's stills, its clip), and a problem named by its file and line
    warm.py     the warm process each drawing is forked from: Manim, the engine and the scenes loaded, each beat
                drawn once; a scene saved since is imported again
    server.py   the page on 127.0.0.1 (a choice POSTed to /choose), its server-sent events, the file watcher and
                Ctrl-C
    ignore_ctrl_c.py  imported first by the studio's workers: Ctrl-C is the studio's to handle
"""
