"""Imported first by the studio's fork server, as it preloads: Ctrl-C is the studio's to handle (it stops its
drawings itself), so the server and every drawing process forked from it ignore SIGINT from their first
instruction. Set only as a drawing began its task, it left a window (the child unpickling its task and importing
the scenes) in which a Ctrl-C to the terminal's process group printed a KeyboardInterrupt traceback.

A drawing process forked in the instant the studio stopped finds its task's pipe closed before the task came, or
while it came (multiprocessing's spawn raises EOFError reading it, or UnpicklingError "pickle data was truncated"):
the studio is gone and there is nothing to draw, so it ends quietly instead of printing that traceback to the
studio's terminal."""

import pickle
import signal
import sys
import traceback

signal.signal(signal.SIGINT, signal.SIG_IGN)


def studio_gone_before_the_task(kind, error, trace) -> bool:
    return issubclass(kind, (EOFError, pickle.UnpicklingError)) and any(
        frame.filename.endswith("multiprocessing/spawn.py") and frame.name == "_main"
        for frame in traceback.extract_tb(trace))


def quiet_when_the_studio_is_gone(kind, error, trace, default=sys.excepthook) -> None:
    if not studio_gone_before_the_task(kind, error, trace):
        default(kind, error, trace)


sys.excepthook = quiet_when_the_studio_is_gone  # the fork server's child reports a failed start through it
