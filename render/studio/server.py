"""`make studio`: the studio's page on 127.0.0.1, kept up to date as the storyboard, data and scenes are saved.

    GET /            the page (render/publish/studio.html)
    GET /state       everything the page shows, as JSON
    GET /events      server-sent events: everything the page shows, then each change: `beat` (one beat's view),
                     `problem` (null once mended), `update` (one begins, or ends: what it drew, why, how long)
    GET /media/…     the stills and clips (only files of the studio's own media folder), whole or the part a Range asks

Only requests addressed to the studio itself are answered: Host must be its own loopback address and port (and
Origin, where a browser sends one, its own page), so a page elsewhere cannot read it through a DNS name rebound to
127.0.0.1. A media name is checked before it touches the file system, and a client that leaves early is not news.

The files are watched by `watchfiles` on a thread of its own, which collects the saves made while an update
runs (newer saves stop that update at its next step). Ctrl-C stops the drawing processes, the server and
the watcher, and releases the studio's folder.
"""

from __future__ import annotations

import errno
import json
import logging
import mimetypes
import queue
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

from render.errors import FilmError
from render.files import PROJECT_ROOT, cache_dir, output_dir, resolved
from render.plan.types import Plan
from render.studio import choosing
from render.studio.session import Studio
from render.text import clean_text

log = logging.getLogger("film")
logging.getLogger("watchfiles").setLevel(logging.WARNING)  # its "1 change detected" is not news here

HEARTBEAT_SECONDS = 10
IGNORED_SUFFIXES = (".pyc", ".swp", ".swx", "~", ".tmp")


class Broadcast:
    """Events for every open page: each page has its own queue."""

    def __init__(self):
        self.listeners: list[queue.Queue] = []
        self.lock = threading.Lock()

    def publish(self, kind: str, data) -> None:
        with self.lock:
            for listener in self.listeners:
                listener.put((kind, data))

    def listen(self) -> queue.Queue:
        listener: queue.Queue = queue.Queue()
        with self.lock:
            self.listeners.append(listener)
        return listener

    def leave(self, listener: queue.Queue) -> None:
        with self.lock:
            if listener in self.listeners:
                self.listeners.remove(listener)


# What the studio names its stills and clips (my-beat--my-cue-3.png, my-beat-2.mp4): anything else is a 404
# before the file system sees it (a NUL, a 5,000-character name, a path).
BODY_LENGTH = re.compile(r"[0-9]{1,6}")  # Content-Length: a few ASCII digits (str.isdigit also takes '²')
MEDIA_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


class StudioServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # a browser opens a burst of connections (the page, its events, a still a cue)

    def __init__(self, port: int, studio: Studio, broadcast: Broadcast, page: str):
        try:
            super().__init__(("127.0.0.1", port), Handler)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise FilmError(f"PORT={port}: 127.0.0.1:{port} is already in use (another studio, or another "
                                f"server); give another PORT=, or leave PORT unset for a free one") from None
            if error.errno == errno.EACCES:
                raise FilmError(f"PORT={port}: this user may not listen on port {port} (ports below 1024 need "
                                f"root); give a PORT= from 1024 to 65535, or leave it unset") from None
            raise
        self.studio, self.broadcast, self.page = studio, broadcast, page
        self.closing = threading.Event()
        self.saves: queue.Queue = queue.Queue()  # (what changed, when): each starts an update
        port = self.server_address[1]
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.origins = {f"http://{host}" for host in self.hosts}

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def handle_error(self, request, client_address) -> None:
        """A client that leaves early (a closed tab, a half-sent request) is not an error; anything else is one
        line, not a traceback on the studio's terminal."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            return
        log.warning("studio: a request from %s:%s failed: %s: %s", *client_address[:2], type(error).__name__,
                    clean_text(str(error), 200))


class Handler(BaseHTTPRequestHandler):
    server: StudioServer

    def log_message(self, format, *args) -> None:  # noqa: A002 - the page's requests are not news
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not self.addressed_to_us():
            return
        path = self.target()
        if path is None:
            return
        if path == "/":
            self.send(self.server.page.encode(), "text/html; charset=utf-8")
        elif path == "/state":
            self.send(json.dumps(self.server.studio.state()).encode(), "application/json")
        elif path == "/events":
            self.events()
        elif path.startswith("/media/"):
            self.media(unquote(path.removeprefix("/media/")))
        else:
            self.send_error(HTTPStatus.NOT_FOUND)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        """/choose: the page's deployment (JSON); any other page's, or anything but a small JSON object, refused."""
        if not self.addressed_to_us():
            return
        path = self.target()
        if path is None:
            return
        if path != "/choose":
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        length = self.headers.get("Content-Length", "")
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json" \
                or not BODY_LENGTH.fullmatch(length) or int(length) > choosing.MAX_BODY_BYTES:
            self.send_error(HTTPStatus.BAD_REQUEST, "send the choice as a small JSON object")
            return
        try:
            asked = self.server.studio.choose(json.loads(self.rfile.read(int(length)) or b"null"))
        except (ValueError, RecursionError, FilmError) as error:  # RecursionError: JSON nested past Python's stack
            said = "a JSON value nested too deep" if isinstance(error, RecursionError) else str(error)
            body = json.dumps({"error": clean_text(said, 300)}).encode()
            self.send_response(HTTPStatus.BAD_REQUEST)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        chosen = "/".join(str(asked[name]) for name in ("gpu", "model", "dtype") if asked[name]) or "the defaults"
        self.server.saves.put(([f"(the deployment: {chosen})"], time.monotonic()))
        self.send(json.dumps({"asked": asked}).encode(), "application/json")

    def target(self) -> str | None:
        """The request's path; None (a 400 sent) for a target urllib cannot read (an absolute-form http://[x/)."""
        try:
            return urlparse(self.path).path
        except ValueError:
            self.send_error(HTTPStatus.BAD_REQUEST, "a request target this studio cannot read")
            return None

    def addressed_to_us(self) -> bool:
        """Host is the studio's own address (and Origin, where sent, its own page), or the request is refused."""
        host, origin = self.headers.get("Host"), self.headers.get("Origin")
        if host in self.server.hosts and (origin is None or origin in self.server.origins):
            return True
        self.send_error(HTTPStatus.FORBIDDEN, f"this studio answers only {self.server.address}")
        return False

    def send(self, body: bytes, kind: str, answer: HTTPStatus = HTTPStatus.OK, headers: dict | None = None) -> None:
        self.send_response(answer)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def media(self, name: str) -> None:
        if not MEDIA_NAME.fullmatch(name):  # checked before the name touches the file system
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        path = self.server.studio.folder / "media" / name
        try:
            if path.is_symlink() or not path.is_file():
                raise FileNotFoundError(name)
            body = path.read_bytes()
        except OSError:  # (gone since: a newer drawing replaced it)
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        asked = byte_range(self.headers.get("Range"), len(body))
        if asked is None:
            self.send(body, kind)
        elif asked == ():
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{len(body)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:  # a part: the player seeks within a clip (Chromium asks for the part it needs)
            first, last = asked
            self.send(body[first:last + 1], kind, HTTPStatus.PARTIAL_CONTENT,
                      {"Content-Range": f"bytes {first}-{last}/{len(body)}"})

    def events(self) -> None:
        listener = self.server.broadcast.listen()
        try:  # (the listener leaves whatever ends the stream, a page gone during the headers included)
            state = self.server.studio.state()  # what the page shows so far, then every change from here on
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            for view in state["beats"]:
                listener.put(("beat", view))
            listener.put(("problem", state["problem"]))
            if state["choice"]:
                listener.put(("choice", state["choice"]))
            if state["timeline"]:
                listener.put(("timeline", state["timeline"]))
            if state["update"]:
                listener.put(("update", {"busy": False, **state["update"]}))
            while not self.server.closing.is_set():
                try:
                    kind, data = listener.get(timeout=HEARTBEAT_SECONDS)
                    self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())
                except queue.Empty:
                    self.wfile.write(b": still here\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.server.broadcast.leave(listener)


def byte_range(header: str | None, size: int) -> tuple[int, ...] | None:
    """The bytes a Range header asks of a `size`-byte file, first and last: None for the whole file (no header, or
    one this server does not serve in parts or cannot read: several ranges, another unit, a last byte before the
    first, which RFC 9110 says to ignore); () where none of it can be given (it starts past the end)."""
    found = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", header or "")
    if not found or not any(found.groups()):
        return None
    first, last = found.groups()
    try:
        if not first:  # the last N bytes
            first, last = max(0, size - int(last)), size - 1
        elif last and int(last) < int(first):
            return None
        else:
            first, last = int(first), min(int(last), size - 1) if last else size - 1
    except ValueError:  # a number past int()'s 4,300-digit limit: a Range it cannot read, ignored (RFC 9110 14.2)
        return None
    return (first, last) if first <= last else ()


def watched(storyboard: Path) -> list[Path]:
    """The storyboard's folder (an editor may save by writing a new file in its place), data/ and scenes/."""
    return [resolved(storyboard).parent, PROJECT_ROOT / "data", PROJECT_ROOT / "scenes"]


def wanted_change(path: str, storyboard: Path) -> bool:
    """A save that can change a beat: the storyboard itself, or a file under data/ or scenes/ (not an editor's
    swap file, a hidden file or Python's bytecode)."""
    path = resolved(path)
    if path.parent == resolved(storyboard).parent and path != resolved(storyboard):
        return False
    return not (path.name.startswith(".") or path.name.endswith(IGNORED_SUFFIXES) or "__pycache__" in path.parts)


def project_name(path: str) -> str:
    """A saved file as the page names it: relative to the project where it is inside it."""
    where = resolved(path)
    return str(where.relative_to(PROJECT_ROOT)) if where.is_relative_to(PROJECT_ROOT) else path


def next_change(saves: queue.Queue):
    """The next save or choice, waited for in short steps: a Ctrl-C the kernel handed to another of the studio's
    threads is acted on at the next step (a wait without a timeout would not wake for it; seen under load)."""
    while True:
        try:
            return saves.get(timeout=0.25)
        except queue.Empty:
            continue


def open_studio(plan: Plan, plan_of: Callable[[dict], Plan], build: Path, quality: str, beat: str | None, port: int,
                storyboard: Path) -> int:
    """`make studio` for `plan`'s choice (`plan_of` resolves it again after each save, for the deployment the page
    chose: FilmRequest fields, none for the command line's): its folder under the
    build folder locked for the studio alone, its page served until Ctrl-C."""
    from render.publish import web
    from render.video.finish import output_lock
    from render.voice.narration import make_narration

    folder = output_dir(plan.choice.name, plan.choice.is_default, build) / "studio"
    cache = cache_dir(build)
    broadcast = Broadcast()

    def narrate(resolved):  # the timed plan at once (the stills need only that); the track levelled once the first
        return make_narration(resolved, folder, cache, level_later=True)  # stills are drawn (Studio.draw)

    studio = Studio(plan_of, narrate, folder, cache, quality, beat, broadcast.publish)
    page = web.render("studio.html", title=plan.title, label=plan.choice.long_label, duration=plan.duration,
                      fps=studio.quality.fps)
    with output_lock(folder):
        return run_studio(studio, storyboard, port, page, broadcast)


def run_studio(studio: Studio, storyboard: Path, port: int, page: str, broadcast: Broadcast,
               say=lambda line: print(line, flush=True)) -> int:
    """Serve the page, draw what the files hold, and keep drawing what their saves change, until Ctrl-C."""
    import watchfiles

    server = StudioServer(port, studio, broadcast, page)
    serving = threading.Thread(target=server.serve_forever, name="studio-server", daemon=True)
    serving.start()
    say(f"studio: {server.address}  (Ctrl-C stops it)")
    stop = threading.Event()
    saves = server.saves  # the watcher's saves and the page's choices alike

    def watch() -> None:
        """Put each batch of saves on `saves`; whatever goes wrong, watch on (a watcher that died left the page up
        and deaf to every later save)."""
        while not stop.is_set():
            try:
                for changes in watchfiles.watch(*watched(storyboard), stop_event=stop, debounce=200, step=30,
                                                rust_timeout=500, yield_on_timeout=False):
                    edited = sorted({project_name(path) for _, path in changes if wanted_change(path, storyboard)})
                    if edited:
                        saves.put((edited, time.monotonic()))
                        studio.interrupted.set()  # newer edits: the update under way stops at its next step
            except Exception as error:  # noqa: BLE001 - reported, and the watching starts again
                log.warning("studio: watching the files failed (%s: %s); watching again", type(error).__name__,
                            clean_text(str(error), 200))
                stop.wait(0.5)

    watcher = threading.Thread(target=watch, name="studio-watcher", daemon=True)
    watcher.start()
    try:
        edited, saved_at = ["(start)"], time.monotonic()
        while True:
            studio.interrupted.clear()
            started = time.monotonic()
            studio.update(edited, saved_at)  # (whatever a save holds is a problem on the page, not the end)
            update = studio.last_update
            if update.get("problem"):
                say(f"studio: {update['problem']['message']}")
            else:
                say(f"studio: updated in {time.monotonic() - started:.1f} s; drew "
                    f"{', '.join(update.get('drawn') or ()) or 'nothing'}")
            edited, saved_at = next_change(saves)
            while not saves.empty():  # saves made meanwhile: one update for them all, timed from the first
                more, _ = saves.get_nowait()
                edited = sorted(set(edited) | set(more))
    except KeyboardInterrupt:
        say("studio: stopped")
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the cleaning up short
        stop.set()
        studio.interrupted.set()
        studio.close()
        server.closing.set()
        server.shutdown()
        server.server_close()
        watcher.join(timeout=2)
