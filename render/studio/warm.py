"""The studio's warm drawing process: one process that keeps Manim, the engine and the scenes loaded, and has drawn
each beat once (its fonts, typesetting, parsed shapes and words in memory: render/engine/scene.py's made_once), from
which each drawing is forked. A drawing forked from it starts where a second drawing in one process would, not where
a fresh process does: on this 2-core machine the last beat's first still takes about 0.3 s from it, 1 s from a fresh
process.

A scene saved since the warm process loaded it is imported again, as saved, by the drawing (with every scene module
that imports it, at any depth, so none keeps a name imported from the old one; the others stay loaded), and then by
the warm process itself, once no drawing runs, for the drawings after. The warm process draws nothing the page
shows: its own drawings (one still of each beat, the last cue's, so the whole beat is built) only warm it, between
the drawings it forks, and a drawing asked for meanwhile waits for at most the one under way.

Between the studio and it, one pipe: the studio sends ("draw", tag, task, args, result file), ("warm", plan, stills,
quality, cache) and ("stop", tags), and ends it with SIGTERM; the warm process answers ("ended", tag, exit code) as
each drawing ends (a drawing leaves its result in its file, whole or not at all). Each drawing is a child of the warm
process, which ends with the studio (its parent, the fork server, does) and takes its drawings with it.
"""

from __future__ import annotations

import hashlib
import importlib
import multiprocessing.connection
import multiprocessing.util
import os
import pickle
import signal
import sys
import threading
import time
from pathlib import Path

from render import media
from render.files import PROJECT_ROOT, atomic_path

SCENES = "scenes"


def scene_modules() -> dict[str, str]:
    """Each scene module this process has imported, by name, with its file."""
    return {name: os.path.realpath(module.__file__) for name, module in list(sys.modules.items())
            if (name == SCENES or name.startswith(SCENES + ".")) and getattr(module, "__file__", None)}


def scene_files() -> dict[str, str]:
    """Every file under scenes/ with its digest as it is now: taken before an import, what the import read (a file
    saved meanwhile differs from it after, and is imported again)."""
    return {os.path.realpath(path): digest(str(path)) for path in (PROJECT_ROOT / SCENES).rglob("*.py")}


def loaded_scenes(before: dict[str, str], loaded: dict[str, str] | None = None) -> dict[str, str]:
    """`loaded` with each scene module imported since, its digest as `before` (taken before that import) has it."""
    found = dict(loaded or {})
    for path in scene_modules().values():
        found.setdefault(path, before.get(path, "unknown"))
    return found


def digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "gone"


def forget_scenes_if_saved(loaded: dict[str, str]) -> bool:
    """Forget each scene module saved since `loaded` was taken, and every scene module that imports one of them
    (at any depth: it holds names of the old one), so the next import reads them as saved; the rest stay loaded.
    Whether any was forgotten."""
    modules = scene_modules()
    saved = {path for path in modules.values() if loaded.get(path) != digest(path)}  # (one not in it: saved)
    if not saved:
        return False
    forget = {name for name, path in modules.items() if path in saved}
    while True:
        more = {name for name, path in modules.items() if name not in forget and imports(path) & forget}
        if not more:
            break
        forget |= more
    if SCENES in forget:  # (the package itself: everything under it)
        forget = set(modules)
    for name in forget:
        sys.modules.pop(name, None)
    importlib.invalidate_caches()
    return True


def imports(path: str) -> set[str]:
    """The project modules a file imports as it is now (one that cannot be read or parsed: every scene module)."""
    from render.code import scene_imports

    try:
        return set(scene_imports(Path(path)))
    except Exception:  # noqa: BLE001 - a half-typed file: forget everything, and let the drawing say what is wrong
        return {name for name in sys.modules if name == SCENES or name.startswith(SCENES + ".")}


def load_scenes(beat_ids: list[str]) -> dict[str, str]:
    """Import each beat's scene (a scene that fails to import is the drawing's problem to report, not this
    process's); the files loaded, with their digests."""
    from render.plan.beat_scene import scene_of

    before = scene_files()
    for beat_id in beat_ids:
        try:
            importlib.import_module(scene_of(beat_id).module)
        except Exception:  # noqa: BLE001, S112 - a drawing of it imports it again and says what is wrong
            continue
    loaded = loaded_scenes(before)
    for path in loaded:
        imports(path)  # (parsed now, so a drawing after a save parses only the files saved)
    return loaded


def ended_by_the_studio(signum, frame) -> None:
    raise SystemExit(0)


def serve(connection, scratch: str) -> None:
    """The warm process's life: fork a drawing for each task, warm itself between tasks, tell each ending; ended by
    SIGTERM (the studio stopping) at once, even mid-warming, its drawings with it and its folders removed as a process
    of multiprocessing's removes them."""
    media.die_with_parent()
    signal.signal(signal.SIGTERM, ended_by_the_studio)
    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())  # (Manim's progress bars' lock, which they take even when off: not a semaphore
                                      # of multiprocessing's, which each drawing made and none released)
    running: dict[int, tuple[object, int]] = {}  # the read end of each drawing's pipe -> (its key, its pid)
    clearing: set[int] = set()  # drawings done, clearing up (their typesetting folders): reaped once they end
    try:
        serve_drawings(connection, scratch, running, clearing)
    finally:
        # Its drawings stopped and their folders removed whole: neither the studio's SIGTERM nor a Ctrl-C cuts that
        # short (a drawing killed with it, as it dies, would leave its typesetting folders).
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        from render.video import beats

        for _, pid in running.values():
            kill_drawing(pid)
        for pid in clearing:
            os.waitpid(pid, 0)
            beats.remove_process_folders(pid)


def serve_drawings(connection, scratch: str, running: dict, clearing: set) -> None:
    warming: list[tuple] = []  # (plan, beat, time, quality, cache) still to draw, for warmth only
    loaded: dict[str, str] = {}
    beat_ids: list[str] = []
    stale = False  # a scene saved since this process loaded it: loaded again once no drawing runs
    while True:
        more = warming or (stale and not running)
        wait = 0 if more else (0.1 if clearing else None)
        ready = multiprocessing.connection.wait([connection, *running], timeout=wait)
        for end in [end for end in ready if end is not connection]:
            key, pid = running.pop(end)
            os.close(end)
            done, status = os.waitpid(pid, os.WNOHANG)
            # (still clearing up: it closed its pipe once its outcome was in its file)
            connection.send(("ended", key, os.waitstatus_to_exitcode(status) if done else 0))
            if not done:
                clearing.add(pid)
        for pid in list(clearing):
            if os.waitpid(pid, os.WNOHANG)[0]:
                clearing.discard(pid)
        if connection in ready:
            try:
                message = connection.recv()
            except (EOFError, OSError):
                return  # the studio is gone
            kind = message[0]
            if kind == "draw":
                _, key, task, args, result = message
                end, pid = fork_drawing(connection, running, task, args, result, loaded)
                running[end] = (key, pid)
                stale = stale or bool(loaded and forget_scenes_if_saved(loaded))
            elif kind == "warm":
                _, plan_json, stills, quality, cache = message
                beat_ids = [beat_id for beat_id, _ in stills]
                loaded = load_scenes(beat_ids)
                warming = [(plan_json, beat_id, at, quality, cache) for beat_id, at in stills]
            elif kind == "stop":
                stop_drawings(running, set(message[1]), connection)
        elif stale and not running:  # (not while a drawing imports them too: it has a core to itself)
            loaded, stale = load_scenes(beat_ids), False
        elif warming:
            before = scene_files()
            warm_once(*warming.pop(0), scratch)
            loaded = loaded_scenes(before, loaded)  # (what it imported: as the files were before it)


def fork_drawing(connection, running: dict, task, args: tuple, result: str, loaded: dict[str, str]) -> tuple[int, int]:
    """A drawing, forked: it runs `task(*args)` and leaves its outcome in `result`. The read end of a pipe only the
    drawing holds open (closed once its outcome is in its file, before it clears up; or as it ends, however it ends),
    and its pid."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_end)
        return read_end, pid
    code = 1
    try:  # the drawing
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # (Ctrl-C reaches the studio's whole group: the warm process
        #                                               stops its drawings, not the signal midway through clearing up)
        connection.close()
        for end in running:
            os.close(end)
        media.die_with_parent()
        forget_scenes_if_saved(loaded)
        outcome = task(*args)
        with atomic_path(Path(result)) as temporary:
            temporary.write_bytes(pickle.dumps(outcome))
        code = 0
        os.close(write_end)  # drawn: the studio is told now, not after the clearing up below
    finally:
        # What a process of multiprocessing's runs as it ends: the finalizers this drawing registered (its typesetting
        # folders, any lock it made), not those it inherited (each is its maker's pid's alone).
        multiprocessing.util._exit_function()  # noqa: SLF001
        os._exit(code)


def stop_drawings(running: dict, keys: set, connection) -> None:
    """Stop the drawings of `keys` and tell each ending."""
    for end, (key, pid) in list(running.items()):
        if key in keys:
            kill_drawing(pid)
            os.close(end)
            del running[end]
            connection.send(("ended", key, -signal.SIGKILL))


def child_processes(pid: int) -> set[int]:
    """The processes `pid` has made and not yet reaped (Linux's /proc/<pid>/task/<tid>/children); none if it is gone."""
    found: set[int] = set()
    for listed in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found |= {int(child) for child in listed.read_text().split()}
        except (OSError, ValueError):
            continue
    return found


def gone(pid: int, seconds: float) -> None:
    """Waits until process `pid` runs no more, for at most `seconds`."""
    from render.video.runner import process_alive

    deadline = time.monotonic() + seconds
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def kill_drawing(pid: int) -> None:
    """A drawing stopped mid-task, and the typesetting folders it had no time to remove, removed."""
    from render.video import beats

    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    beats.remove_process_folders(pid)


def warm_once(plan_json: str, beat_id: str, at: float, quality: str, cache: str, scratch: str) -> None:
    """One still drawn in this process, for what it leaves loaded (and nothing else: its file is removed)."""
    from render.plan.types import Plan
    from render.video import beats

    try:
        plan = Plan.from_json(plan_json)
        name = f".warm-{os.getpid()}-{time.monotonic_ns()}.png"
        for path in beats.render_frames(plan, beat_id, [at], quality, Path(scratch), [name], cache=Path(cache)):
            path.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001, S110 - warmth only: the drawings say what is wrong with a beat
        pass



class WarmProcess:
    """The studio's handle on its warm process (see the module's note): started from the fork server, which has
    Manim imported already and leaves Ctrl-C to the studio."""

    def __init__(self, context, scratch: Path):
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=serve, args=(theirs, str(scratch)), daemon=True, name="studio-warm")
        self.process.start()
        theirs.close()
        self.outstanding: set = set()  # the drawings sent and not yet ended
        self.made = 0

    def alive(self) -> bool:
        return self.process.is_alive()

    def draw(self, task, args: tuple, result: Path) -> tuple:
        """Send a drawing; its tag, which its ending names."""
        self.made += 1
        tag = (os.getpid(), self.made)
        self.connection.send(("draw", tag, task, args, str(result)))
        self.outstanding.add(tag)
        return tag

    def warm(self, plan_json: str, stills: list[tuple[str, float]], quality: str, cache: Path) -> None:
        self.connection.send(("warm", plan_json, stills, quality, str(cache)))

    def ended(self, timeout: float) -> list[tuple[tuple, int | None]]:
        """(tag, exit code) of each drawing that ended within `timeout` seconds; if the warm process itself ended,
        each drawing it had, with None."""
        found = []
        ready = multiprocessing.connection.wait([self.connection, self.process.sentinel], timeout)
        while self.connection in ready:
            try:
                _, tag, code = self.connection.recv()
            except (EOFError, OSError):
                break
            self.outstanding.discard(tag)
            found.append((tag, code))
            ready = multiprocessing.connection.wait([self.connection], 0)
        if not self.alive():
            found += [(tag, None) for tag in self.outstanding]
            self.outstanding.clear()
        return found

    def stop(self, tags: list) -> None:
        """Stop these drawings; back once each has ended."""
        if not tags or not self.alive():
            self.outstanding.difference_update(tags)
            return
        self.connection.send(("stop", list(tags)))
        deadline = time.monotonic() + 5
        while set(tags) & self.outstanding and time.monotonic() < deadline and self.alive():
            self.ended(0.2)
        if set(tags) & self.outstanding:  # it does not answer (a scene that never ends, run while it warmed):
            self.close()                  # ended, and started again for the next drawing (Studio.warm_process)
        self.outstanding.difference_update(tags)

    def close(self) -> None:
        """It ended, and its drawings with it (the studio is stopping: at once, even mid-warming)."""
        if self.alive():
            self.process.terminate()
            self.process.join(1.5)
        if self.process.is_alive():  # (a busy machine: killed before it could remove its typesetting folders)
            from render.video import beats

            drawings = child_processes(self.process.pid)  # (they die with it, as killed: their folders too)
            self.process.kill()
            self.process.join()
            for pid in (self.process.pid, *drawings):
                gone(pid, 2.0)
                beats.remove_process_folders(pid)
        self.connection.close()
