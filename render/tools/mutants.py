"""`make mutants`: planted bugs the suite must catch. Each entry of tests/mutants.yaml is a one-line change to a named
file (a factor in the roofline, a formatter's rounding, a redaction rule, ...) and the tests that should catch it;
each is applied in a copy of the project's tracked files, never here, and those tests run there. A mutant is
caught when they fail. The script prints each one's verdict and exits non-zero if any was missed.

    python -m render.tools.mutants [--list tests/mutants.yaml] [--only NAME] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

from render.files import PROJECT_ROOT

LIST = PROJECT_ROOT / "tests" / "mutants.yaml"
TIMEOUT = 600  # seconds a mutant's tests may take


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str           # relative to the project
    old: str            # the line's text as it stands (it must occur exactly once in the file)
    new: str
    tests: tuple[str, ...]  # pytest's arguments: files, nodes, -k expressions
    why: str = ""


def read_list(path: Path) -> list[Mutant]:
    document = yaml.safe_load(path.read_text())
    mutants = []
    for entry in document["mutants"]:
        tests = entry["tests"]
        mutants.append(Mutant(entry["name"], entry["file"], entry["old"], entry["new"],
                              tuple(tests if isinstance(tests, list) else shlex.split(tests)), entry.get("why", "")))
    names = [mutant.name for mutant in mutants]
    duplicated = {name for name in names if names.count(name) > 1}
    if duplicated:
        raise SystemExit(f"{path}: mutants named twice: {', '.join(sorted(duplicated))}")
    return mutants


def tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, check=True)
    return [name for name in listed.stdout.decode().split("\0") if name]


def project_copy(folder: Path, files: list[str]) -> Path:
    for name in files:
        source, target = PROJECT_ROOT / name, folder / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return folder


def planted(mutant: Mutant, folder: Path) -> None:
    """The mutant's change made in the copy: its old line must be there exactly once, and change."""
    path = folder / mutant.file
    text = path.read_text()
    found = text.count(mutant.old)
    if found != 1:
        raise ValueError(f"{mutant.name}: {mutant.file} holds its old text {found} times, not once: "
                         f"{mutant.old!r} (edit tests/mutants.yaml to follow the code)")
    if mutant.old == mutant.new:
        raise ValueError(f"{mutant.name}: its new text is its old text")
    path.write_text(text.replace(mutant.old, mutant.new))


@dataclass(frozen=True)
class Verdict:
    mutant: Mutant
    caught: bool
    seconds: float
    said: str  # the last lines pytest printed


def run_one(mutant: Mutant, files: list[str]) -> Verdict:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.name}-") as folder:
        copy = project_copy(Path(folder), files)
        try:
            planted(mutant, copy)
        except ValueError as problem:
            return Verdict(mutant, False, 0.0, str(problem))
        venv_python = PROJECT_ROOT / ".venv" / "bin" / "python"
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("PYTHONPATH", None)
        try:
            ran = subprocess.run([str(venv_python if venv_python.exists() else sys.executable), "-m", "pytest", "-x",
                                  "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--no-header", *mutant.tests],
                                 cwd=copy, capture_output=True, text=True, timeout=TIMEOUT, env=env)
        except subprocess.TimeoutExpired:
            return Verdict(mutant, True, time.monotonic() - started, f"its tests ran past {TIMEOUT} s (caught: "
                                                                    f"a hang is a failure)")
        lines = [line for line in (ran.stdout + ran.stderr).splitlines() if line.strip()]
        # Caught: the tests ran and failed (1). Not caught: they passed (0); no test collected (5) or a usage error
        # (4) is a fault of the list, reported as missed.
        return Verdict(mutant, ran.returncode == 1, time.monotonic() - started, "\n".join(lines[-3:]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make mutants", description=__doc__.splitlines()[0])
    parser.add_argument("--list", type=Path, default=LIST)
    parser.add_argument("--only", action="append", help="a mutant's name (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    mutants = read_list(args.list)
    if args.only:
        unknown = set(args.only) - {mutant.name for mutant in mutants}
        if unknown:
            raise SystemExit(f"no such mutant: {', '.join(sorted(unknown))}")
        mutants = [mutant for mutant in mutants if mutant.name in args.only]
    files = tracked_files()
    print(f"mutants: {len(mutants)} planted bugs from {args.list.relative_to(PROJECT_ROOT)}, each in a copy, "
          f"{args.jobs} at a time", flush=True)
    verdicts = []
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for verdict in pool.map(lambda mutant: run_one(mutant, files), mutants):
            verdicts.append(verdict)
            mark = "caught" if verdict.caught else "MISSED"
            print(f"  {mark:7} {verdict.mutant.name:32} {verdict.seconds:6.1f} s  {verdict.mutant.file}", flush=True)
            if not verdict.caught:
                print("          " + verdict.said.replace("\n", "\n          "), flush=True)
    missed = [verdict for verdict in verdicts if not verdict.caught]
    print(f"{len(verdicts) - len(missed)} caught, {len(missed)} missed")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
