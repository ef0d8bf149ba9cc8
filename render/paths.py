"""Where outputs go: build/ for the storyboard's own choice, build/<gpu>-<model>-<dtype>/ for others."""

from __future__ import annotations

from pathlib import Path

from render.catalog import PROJECT_ROOT
from render.plan import Plan

BUILD_DIR = PROJECT_ROOT / "build"


def output_dir(plan: Plan, build_dir: Path = BUILD_DIR) -> Path:
    return build_dir if plan.is_default_choice else build_dir / plan.choice_name


def cache_dir(build_dir: Path = BUILD_DIR) -> Path:
    """Shared by every choice: a clip or a beat is keyed by its content, not by the film."""
    return build_dir / "cache"
