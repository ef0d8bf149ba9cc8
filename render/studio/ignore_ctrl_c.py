"""Imported first by the studio's fork server, as it preloads: Ctrl-C is the studio's to handle (it stops its
drawings itself), so the server and every drawing process forked from it ignore SIGINT from their first
instruction. Set only as a drawing began its task, it left a window (the child unpickling its task and importing
the scenes) in which a Ctrl-C to the terminal's process group printed a KeyboardInterrupt traceback."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
