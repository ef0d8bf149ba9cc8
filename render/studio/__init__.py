"""`make studio`: edit the storyboard, the data or a scene, and see the beats it changes drawn again.

    session.py  what the page shows, and the update an edit starts (resolve, narrate, compare the beats'
                keys, draw the changed beats' stills, then their clips, in fresh processes)
    server.py   the page on 127.0.0.1, its server-sent events, the file watcher and Ctrl-C
    ignore_ctrl_c.py  imported first by the studio's workers: Ctrl-C is the studio's to handle
"""
