"""The layout shows the architecture: stages import only earlier stages, one atomic writer, ffmpeg
through one module, and the README's account of the folders in data-flow order."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT

# Each module's stage, in data-flow order; shared modules (0) serve every stage.
STAGES = {"render.errors": 0, "render.files": 0, "render.formatting": 0, "render.media": 0, "render": 0,
          "render.specs": 1, "render.serving": 1, "render.measure": 1, "render.plan": 2, "render.voice": 3,
          "render.engine": 4, "scenes": 5, "render.video": 6,
          "render.publish": 7, "render.cluster": 8, "render.studio": 8, "render.tools": 9, "render.arguments": 9,
          "render.cli": 9}


def stage_of(module: str) -> int:
    best = max((name for name in STAGES if module == name or module.startswith(name + ".")), key=len)
    return STAGES[best]


def modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted([*(ROOT / "render").rglob("*.py"), *(ROOT / "scenes").rglob("*.py")]):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.append((".".join(parts), path))
    return found


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return {name for name in names if name == "render" or name.startswith(("render.", "scenes"))}


def test_no_module_imports_a_later_stage():
    offences = []
    for module, path in modules():
        for imported in imports_of(path):
            if stage_of(imported) > stage_of(module):
                offences.append(f"{module} (stage {stage_of(module)}) imports {imported} (stage {stage_of(imported)})")
    assert not offences, "\n".join(offences)


def test_the_resolve_step_loads_no_voice_no_renderer():
    """Resolving a plan imports neither the speech engines nor Manim, so `make plan` stays light."""
    probe = ("import sys, render.plan.resolve; print(sorted({m.split('.')[0] if not m.startswith('render') else "
             "'.'.join(m.split('.')[:2]) for m in sys.modules}))")
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for heavy in ("manim", "hibari", "piper", "pydub", "render.voice", "render.video", "scenes"):
        assert f"'{heavy}'" not in loaded, f"resolving a plan imports {heavy}"


def calls(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            yield node


def test_one_helper_writes_files_atomically():
    """Temporary files and renames live in render/files.py only."""
    offences = []
    for module, path in modules():
        if module == "render.files":
            continue
        for node in calls(path):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            base = getattr(function.value, "id", "") if isinstance(function, ast.Attribute) else ""
            if (base, name) in {("os", "replace"), ("os", "rename"), ("tempfile", "mkstemp"),
                                ("tempfile", "NamedTemporaryFile")} \
                    or (name in ("replace", "rename") and len(node.args) == 1 and not node.keywords):
                offences.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    assert not offences, "write through render.files instead:\n" + "\n".join(offences)


def test_ffmpeg_commands_are_built_with_ffmpeg_python_in_one_module():
    """No argv lists for ffmpeg by hand: the strings only appear where render/media.py finds the programs."""
    offences = []
    for module, path in modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in ("ffmpeg", "ffprobe", "-i", "-map") \
                    and module not in ("render.media", "render.tools.bootstrap"):  # bootstrap installs the package
                offences.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not offences, "\n".join(offences)


def test_the_readme_names_the_folders_in_data_flow_order():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## How it works", 1)[1].split("\n## ", 1)[0]
    folders = ["data/", "script/storyboard.yaml", "render/specs/", "render/plan/", "render/voice/", "scenes/",
               "render/video/", "render/publish/", "render/cluster/"]
    positions = [section.find(folder) for folder in folders]
    assert all(position >= 0 for position in positions), dict(zip(folders, positions))
    assert positions == sorted(positions), "the folders are not named in data-flow order"
    for folder in ("render/specs", "render/plan", "render/voice", "render/video", "render/publish", "render/cluster",
                   "render/tools"):
        assert (ROOT / folder).is_dir()


def test_the_python_versions_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    minimum = re.fullmatch(r">=(\d+\.\d+)", project["requires-python"]).group(1)
    readme = (ROOT / "README.md").read_text()
    assert f"Python {minimum}" in readme, f"the README should state the Python versions ({minimum}+)"
    assert tuple(map(int, minimum.split("."))) <= sys.version_info[:2]


def test_nothing_generated_is_committed():
    tracked = subprocess.run(["git", "ls-files", "media", "build", ".venv"], cwd=ROOT, capture_output=True,
                             text=True).stdout
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    assert tracked == ""
    assert "/media/" in (ROOT / ".gitignore").read_text()


def import_graph() -> dict[str, set[str]]:
    """Which of the project's modules each imports, anywhere in it (a function's own imports included)."""
    modules = {}
    for path in [*(ROOT / "render").rglob("*.py"), *(ROOT / "scenes").rglob("*.py")]:
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path

    def known(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [known(alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                targets = [known(f"{base}.{alias.name}") or known(base) for alias in node.names]
            else:
                continue
            graph[name] |= {target for target in targets if target and target != name}
    return graph


def test_no_module_imports_itself_back_through_others():
    """Issue 44: no import cycle anywhere, a function-level import included (it only hides one)."""
    graph = import_graph()
    assert graph["render.video.beats"] and graph["scenes.wasted_money"]  # (the graph is read)
    cycles, done = [], set()

    def visit(name: str, path: list[str]) -> None:
        for target in sorted(graph[name]):
            if target in path:
                cycles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in done:
                visit(target, path + [target])
        done.add(name)

    for name in sorted(graph):
        if name not in done:
            visit(name, [name])
    assert not cycles, "\n".join(sorted(set(cycles)))


PACKAGES = ["render", *sorted(f"render/{path.parent.name}" for path in (ROOT / "render").glob("*/__init__.py")),
            "scenes", "scenes/figures", "scenes/pictures"]


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_says_what_it_holds(package):
    """Issue 44: a package's docstring names each of its modules (and subpackages), and names none that is gone."""
    folder = ROOT / package
    text = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
    held = {path.name for path in folder.glob("*.py") if path.name != "__init__.py"}
    held |= {f"{path.parent.name}/" for path in folder.glob("*/__init__.py")}
    # its own modules' names (a path into another package, render/formatting.py, is not one of them)
    named = set(re.findall(r"(?<![/\w])([a-z0-9_]+\.py)\b", text)) | set(re.findall(r"(?<![/\w])([a-z0-9_]+/)", text))
    missing, gone = held - named, {name for name in named if name.endswith(".py") and name not in held}
    assert not missing, f"{package}/__init__.py does not say what {sorted(missing)} hold"
    assert not gone, f"{package}/__init__.py names {sorted(gone)}, which it does not hold"


def test_the_renderer_names_no_beat_of_any_film():
    """render/ serves any film: none of its files (code, templates, scripts) names a film's beat (an id of more than
    one word, as the storyboard writes it), the class that draws one, or its scene's module; the film's own files
    (its storyboard, page words, bench script and scenes) hold them."""
    from render.files import STORYBOARD_PATH
    from render.plan.beat_scene import scene_of
    from render.plan.storyboard import load_storyboard

    storyboard = load_storyboard(STORYBOARD_PATH)
    ids = {beat.id for beat in storyboard.beats} | {beat.id for cut in storyboard.cuts.values() for beat in cut.beats}
    patterns = []
    for beat_id in sorted(ids):
        scene = scene_of(beat_id)
        patterns += [re.escape(scene.path), re.escape(scene.module) + r"\b"]
        if "-" in beat_id:  # (a one-word id is a word of the subject too: "prefill", "decode")
            patterns += [rf"(?<!\w)(?<!\w-){re.escape(beat_id)}(?!\w)(?!-\w)", rf"\b{scene.name}\b"]
    found = re.compile("|".join(patterns))
    named = [f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
             for path in sorted((ROOT / "render").rglob("*")) if path.suffix in (".py", ".html", ".js", ".css")
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for match in found.finditer(line)]
    assert len(ids) >= 12 and not named, "\n".join(named)
