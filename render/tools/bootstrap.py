"""One-command setup on a fresh machine: system packages, then the project's venv.

Runs with the system's python3 before anything is installed, so it uses the standard
library only. `make test`, `make plan` and `make film` all call it first; when nothing has
changed it checks and returns in a fraction of a second.

    python3 render/tools/bootstrap.py [test|film|llama-server] [llama-server]

`llama-server` builds the real inference server the measure tests run against. After a profile
(`make test`: `test llama-server`) it is started in the background, niced, as soon as its compiler
and the venv's python are there, so it builds while apt-get and pip install the rest; the test
suite waits for it only where a test needs the server (and starts it itself when run bare).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv"
if str(ROOT) not in sys.path:  # run as a script by the system's python3, before the venv exists
    sys.path.insert(0, str(ROOT))
from render.files import file_digest, move, write_atomic  # noqa: E402  (the standard library only)

# Debian packages each profile needs, with what shows each one is present. The film
# profile grows as the renderer arrives (Manim's Cairo, Pango, LaTeX and ffmpeg).
RENDERING = {
    "ffmpeg": "decoding, levelling and muxing audio and video",
    "libcairo2-dev": "Manim's drawing (pycairo builds against it)",
    "libpango1.0-dev": "Manim's text",
    "pkg-config": "finding Cairo and Pango when pycairo builds",
    "fonts-inter": "the film's typeface",
    "fontconfig": "finding the typeface",
    # Typeset formulas (Manim's MathTex): LaTeX with the standalone and preview classes, and dvisvgm.
    "texlive-latex-base": "LaTeX, for the typeset formulas",
    "texlive-latex-recommended": "LaTeX's standard packages",
    "texlive-latex-extra": "the standalone and preview packages Manim's formulas use",
    "texlive-fonts-recommended": "the formulas' fonts",
    "dvisvgm": "turning typeset formulas into SVG",
    "cm-super-minimal": "Type 1 Computer Modern fonts for dvisvgm",
}
# A real browser for the review page's tests (driven by Selenium with these paths: nothing downloaded).
BROWSER = {
    "chromium": "the headless browser the review page is tested in",
    "chromium-driver": "WebDriver for that browser (chromedriver)",
}
# A real inference server for `film measure`'s tests, built from source (see ensure_llama_server).
SERVER_BUILD = {
    "cmake": "building llama.cpp's llama-server",
    "g++": "compiling llama.cpp",
}
SYSTEM_PACKAGES: dict[str, dict[str, str]] = {"test": RENDERING | BROWSER | SERVER_BUILD, "film": RENDERING}
# Python extras installed into the venv for each profile (see pyproject.toml).
EXTRAS = {"test": "test", "film": "test"}


class SetupError(Exception):
    pass


def log(message: str) -> None:
    print(f"setup: {message}", file=sys.stderr, flush=True)


def installed(package: str) -> bool:
    """True when dpkg knows the package as installed."""
    try:
        result = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                                capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return False
    return result.returncode == 0 and "install ok installed" in result.stdout


def missing_system_packages(profile: str, is_installed=installed) -> list[str]:
    wanted = dict(SYSTEM_PACKAGES[profile])
    if not venv_supported():
        wanted["python3-venv"] = "the venv and ensurepip modules"
    return [package for package in wanted if not is_installed(package)]


def venv_supported() -> bool:
    """Debian's python3 needs python3-venv before `python3 -m venv` can install pip."""
    try:
        import ensurepip  # noqa: F401
        import venv  # noqa: F401
    except ImportError:
        return False
    return True


def install_system_packages(packages: list[str], is_root: bool | None = None,
                            has_apt: bool | None = None, run=subprocess.run, update: bool = True) -> None:
    """apt-get install what is missing when we may; otherwise say exactly what to run. `update`: refresh apt's
    lists first (once a run)."""
    if not packages:
        return
    is_root = os.geteuid() == 0 if is_root is None else is_root
    has_apt = shutil.which("apt-get") is not None if has_apt is None else has_apt
    listed = " ".join(packages)
    if not has_apt:
        raise SetupError(
            f"these system packages are missing: {listed}\n"
            f"This is not a Debian-style system (no apt-get): install their equivalents with your "
            f"package manager, then run the command again."
        )
    if not is_root:
        raise SetupError(
            f"these system packages are missing: {listed}\n"
            f"Install them as root, then run the command again:\n"
            f"    sudo apt-get update && sudo apt-get install -y --no-install-recommends {listed}"
        )
    log(f"installing system packages: {listed}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([["apt-get", "update"]] if update else []) + [
            ["apt-get", "install", "-y", "--no-install-recommends", *packages]]:
        result = run(command, env=env, stdout=sys.stderr, check=False)
        if result.returncode != 0:
            raise SetupError(f"`{' '.join(command)}` failed (exit {result.returncode}); see its output above")


# What pip needs from the system to install the project (pycairo compiles against Cairo, found by pkg-config; a
# Debian python3 needs its venv module): installed first, so pip runs while apt-get installs the rest (LaTeX, the
# browser, ffmpeg: most of a fresh machine's setup).
PIP_BUILD_NEEDS = ("libcairo2-dev", "pkg-config", "python3-venv")


@contextmanager
def installing_venv(profile: str, with_python=None):
    """The venv made (ensure_venv) on a thread while the block runs; its failure raised once both are done.
    `with_python`: called on that thread once the venv's python exists, before pip installs the project."""
    failed: list[BaseException] = []

    def install() -> None:
        try:
            make_venv_python()
            if with_python is not None:
                with_python()
            ensure_venv(profile)
        except BaseException as error:  # noqa: BLE001 - raised below, in the main thread
            failed.append(error)

    thread = threading.Thread(target=install, name="venv")
    thread.start()
    try:
        yield
    finally:
        thread.join()
    if failed:
        raise failed[0]


def stamp_for(profile: str) -> str:
    """Everything that, when changed, means the venv must be reinstalled."""
    digest = hashlib.sha256()
    digest.update((ROOT / "pyproject.toml").read_bytes())
    digest.update(profile.encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def make_venv_python() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        log(f"creating {VENV.relative_to(ROOT)}/")
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, stdout=sys.stderr)
    return python


def ensure_venv(profile: str) -> None:
    stamp_file = VENV / f".setup-{profile}"
    wanted = stamp_for(profile)
    if stamp_file.is_file() and stamp_file.read_text() == wanted and (VENV / "bin" / "film").exists():
        return
    python = make_venv_python()
    log(f"installing the project into {VENV.relative_to(ROOT)}/ (editable, extras: {EXTRAS[profile]})")
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "install", "--quiet"]
    result = subprocess.run([*pip, "-e", f"{ROOT}[{EXTRAS[profile]}]"], stdout=sys.stderr, check=False)
    if result.returncode != 0:
        raise SetupError(f"pip could not install the project (exit {result.returncode}); see its output above")
    stamp_file.write_text(wanted)


# llama.cpp's own OpenAI-compatible server, for `film measure`'s tests against a real server. Its
# sources come from PyPI inside llama-cpp-python's sdist (vendor/llama.cpp), pinned by hash; only
# the server target is built, optimised lightly (-O1: half the build time of -O3, and a tiny test
# model needs no more). The build is cached in build/llama-server/ and reused only when its stamp
# (sources, flags, the binary's own hash) still matches and the binary runs.
LLAMA_SDIST = "llama-cpp-python==0.3.36"
LLAMA_SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
LLAMA_CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG", "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG",
    "-DBUILD_SHARED_LIBS=OFF", "-DGGML_NATIVE=ON", "-DGGML_CCACHE=OFF", "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF",
]
LLAMA_DIR = ROOT / "build" / "llama-server"
LLAMA_SERVER = LLAMA_DIR / "bin" / "llama-server"
LLAMA_LOG = LLAMA_DIR / "build.log"
LLAMA_LOCK = LLAMA_DIR / "building"  # held (flock) by the one build running; it holds that build's process id


def llama_server_stamp() -> str:
    return "\n".join([LLAMA_SDIST, LLAMA_SDIST_SHA256, *LLAMA_CMAKE_FLAGS])


def llama_server_ready() -> bool:
    """The cached build is used only if its stamp matches, the binary is the one built, and it runs."""
    stamp = LLAMA_DIR / "stamp"
    if not (stamp.is_file() and LLAMA_SERVER.is_file()):
        return False
    recorded = stamp.read_text().rsplit("\n", 1)
    if len(recorded) != 2 or recorded[0] != llama_server_stamp() or recorded[1] != file_digest(LLAMA_SERVER):
        log("the cached llama-server does not match its stamp; rebuilding it")
        return False
    try:
        return subprocess.run([str(LLAMA_SERVER), "--version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def llama_server_building() -> bool:
    """True while a build (this process's or another's) holds the lock."""
    try:
        with open(LLAMA_LOCK, "rb") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
    except FileNotFoundError:
        pass
    return False


def llama_server_builder() -> int | None:
    """The process id of the build running now, if one is."""
    if not llama_server_building():
        return None
    try:
        return int(LLAMA_LOCK.read_text().strip())
    except (OSError, ValueError):
        return None


def start_llama_server_build() -> subprocess.Popen | None:
    """Build llama-server in the background (its own session, niced, its output in build.log), unless it is
    built or being built: setup goes on, and the suite waits for it only where a test needs the server."""
    if llama_server_ready() or llama_server_building():
        return None
    LLAMA_DIR.mkdir(parents=True, exist_ok=True)
    log(f"building llama-server in the background for the measure tests (its output: "
        f"{LLAMA_LOG.relative_to(ROOT)})")
    with open(LLAMA_LOG, "wb") as output:
        return subprocess.Popen([str(VENV / "bin" / "python"), str(Path(__file__).resolve()), "llama-server"],
                         stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                         preexec_fn=lambda: os.nice(10))


def ensure_llama_server() -> None:
    """Build llama-server unless the cached one is good. One build at a time: a second waits for the first's
    lock, then finds the server built."""
    LLAMA_DIR.mkdir(parents=True, exist_ok=True)
    with open(LLAMA_LOCK, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.truncate(0)
        lock.write(str(os.getpid()))
        lock.flush()
        if llama_server_ready():
            return
        for stale in LLAMA_DIR.glob("tmp*"):  # a stopped build's scratch (we hold the lock: nobody's now)
            shutil.rmtree(stale, ignore_errors=True)
        build_llama_server()


def build_llama_server() -> None:
    import tarfile
    import tempfile

    with tempfile.TemporaryDirectory(dir=LLAMA_DIR) as scratch_name:
        scratch = Path(scratch_name)
        log(f"downloading the llama.cpp sources ({LLAMA_SDIST}'s sdist) for the measure tests' server")
        result = subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "download",
                                 "--quiet", "--no-deps", "--no-binary", ":all:", "--dest", str(scratch), LLAMA_SDIST],
                                stdout=sys.stderr, check=False)
        archives = list(scratch.glob("*.tar.gz"))
        if result.returncode != 0 or len(archives) != 1:
            raise SetupError(f"pip could not download {LLAMA_SDIST}'s sources (exit {result.returncode})")
        if file_digest(archives[0]) != LLAMA_SDIST_SHA256:
            raise SetupError(f"{archives[0].name} does not have the pinned SHA-256 {LLAMA_SDIST_SHA256}")
        with tarfile.open(archives[0]) as archive:
            members = [member for member in archive.getmembers() if "/vendor/llama.cpp/" in member.name]
            archive.extractall(scratch, members=members, filter="data")
        source = next(scratch.glob("*/vendor/llama.cpp"))
        log("building llama-server (a few minutes, once; cached in build/llama-server/)")
        for command in (["cmake", "-S", str(source), "-B", str(scratch / "build"), *LLAMA_CMAKE_FLAGS],
                        ["cmake", "--build", str(scratch / "build"), "--target", "llama-server",
                         "--parallel", str(os.cpu_count() or 2)]):
            result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
            if result.returncode != 0:
                raise SetupError(f"`{' '.join(command[:2])} …` failed building llama-server (exit "
                                 f"{result.returncode}): {result.stderr[-2000:]}")
        move(scratch / "build" / "bin" / "llama-server", LLAMA_SERVER)  # whole, beside it: one rename
    write_atomic(LLAMA_DIR / "stamp", llama_server_stamp() + "\n" + file_digest(LLAMA_SERVER))


MINIMUM_PYTHON = (3, 11)  # Manim's own minimum


def check_python(version: tuple[int, ...] = tuple(sys.version_info[:2])) -> None:
    if version < MINIMUM_PYTHON:
        raise SetupError(f"this project needs Python {'.'.join(map(str, MINIMUM_PYTHON))} or newer (Manim does); "
                         f"{sys.executable} is {'.'.join(map(str, version))}. Run make with "
                         f"PYTHON=/path/to/python3.11 (or newer)")


def main(argv: list[str]) -> int:
    profile, *rest = argv or ["test"]
    if profile == "llama-server" and not rest:
        try:
            ensure_llama_server()
        except SetupError as error:
            print(f"setup: error: {error}", file=sys.stderr)
            return 1
        return 0
    if profile not in SYSTEM_PACKAGES:
        print(f"setup: unknown profile {profile!r}; use one of {', '.join(SYSTEM_PACKAGES)}", file=sys.stderr)
        return 2
    if rest not in ([], ["llama-server"]):
        print(f"setup: unknown argument {rest[0]!r} after {profile}; the one known is llama-server (built in the "
              f"background as the rest is installed)", file=sys.stderr)
        return 2
    server = rest == ["llama-server"]
    try:
        check_python()
        missing = missing_system_packages(profile)
        wanted_first = PIP_BUILD_NEEDS + (tuple(SERVER_BUILD) if server else ())
        first = [package for package in missing if package in wanted_first]
        if missing and (os.geteuid() != 0 or shutil.which("apt-get") is None):
            install_system_packages(missing)  # (says what to run, and stops)
        install_system_packages(first)
        # pip (and the server's build, on its own) while apt-get installs the rest
        with installing_venv(profile, with_python=start_llama_server_build if server else None):
            install_system_packages([package for package in missing if package not in first], update=not first)
    except SetupError as error:
        print(f"setup: error: {error}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as error:
        print(f"setup: error: `{' '.join(map(str, error.cmd))}` failed (exit {error.returncode})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
