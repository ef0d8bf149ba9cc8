"""One-command setup on a fresh machine: system packages, then the project's venv.

Runs with the system's python3 before anything is installed, so it uses the standard
library only. `make test`, `make plan` and `make film` all call it first; when nothing has
changed it checks and returns in a fraction of a second.

    python3 render/tools/bootstrap.py [test|film]

pip installs the project while apt-get installs the system packages that pip does not need.
"""

from __future__ import annotations

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
    "texlive-latex-extra": "the standalone and preview packages Manim's formulas use, and sfmath (their sans face)",
    "texlive-fonts-recommended": "the formulas' fonts (Helvetica, the sans face beside Inter)",
    "dvisvgm": "turning typeset formulas into SVG",
    "cm-super-minimal": "Type 1 Computer Modern fonts for dvisvgm",
}
# A real browser for the review page's tests (driven by Selenium with these paths: nothing downloaded).
BROWSER = {
    "chromium": "the headless browser the review page is tested in",
    "chromium-driver": "WebDriver for that browser (chromedriver)",
}
SYSTEM_PACKAGES: dict[str, dict[str, str]] = {"test": RENDERING | BROWSER, "film": RENDERING}
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


# What pip needs from the system to install the project (pycairo compiles against Cairo and ManimPango against Pango,
# which has no Linux wheel, both found by pkg-config; a Debian python3 needs its venv module): installed first, so
# pip runs while apt-get installs the rest (LaTeX, the browser, ffmpeg: most of a fresh machine's setup). Pango
# installed beside pip was a race that pip lost when apt-get was slow ("pangocairo >= 1.30.0 is required").
PIP_BUILD_NEEDS = ("libcairo2-dev", "libpango1.0-dev", "pkg-config", "python3-venv")


@contextmanager
def installing_venv(profile: str):
    """The venv made (ensure_venv) on a thread while the block runs; its failure raised once both are done."""
    failed: list[BaseException] = []

    def install() -> None:
        try:
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


def compile_sources() -> None:
    """The project's modules compiled to bytecode now, where Python would otherwise compile them again in every
    process that imports them (when PYTHONDONTWRITEBYTECODE is set, or __pycache__ cannot be written): a command
    imports some 150 of them, and the tests start a few hundred commands. Up-to-date files are skipped."""
    subprocess.run([str(VENV / "bin" / "python"), "-m", "compileall", "-q", "-j", "0", "render", "scenes", "tests"],
                   cwd=ROOT, stdout=subprocess.DEVNULL, check=False)


MINIMUM_PYTHON = (3, 11)  # Manim's own minimum


def check_python(version: tuple[int, ...] = tuple(sys.version_info[:2])) -> None:
    if version < MINIMUM_PYTHON:
        raise SetupError(f"this project needs Python {'.'.join(map(str, MINIMUM_PYTHON))} or newer (Manim does); "
                         f"{sys.executable} is {'.'.join(map(str, version))}. Run make with "
                         f"PYTHON=/path/to/python3.11 (or newer)")


def main(argv: list[str]) -> int:
    profile, *rest = argv or ["test"]
    if profile not in SYSTEM_PACKAGES or rest:
        print(f"setup: unknown profile {' '.join(argv)!r}; use one of {', '.join(SYSTEM_PACKAGES)}", file=sys.stderr)
        return 2
    try:
        check_python()
        missing = missing_system_packages(profile)
        first = [package for package in missing if package in PIP_BUILD_NEEDS]
        if missing and (os.geteuid() != 0 or shutil.which("apt-get") is None):
            install_system_packages(missing)  # (says what to run, and stops)
        install_system_packages(first)
        with installing_venv(profile):  # pip, while apt-get installs the rest
            install_system_packages([package for package in missing if package not in first], update=not first)
        compile_sources()
    except SetupError as error:
        print(f"setup: error: {error}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as error:
        print(f"setup: error: `{' '.join(map(str, error.cmd))}` failed (exit {error.returncode})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
