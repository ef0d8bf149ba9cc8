"""What a number means is written once (render/plan/meaning.py), and the table is held to the plan: every number
a plan dataclass computes has its row, every row names a number the plan holds, and every figure of the data
declares its unit beside its field. The plan's table (docs/plan.md) names every field of the groups it lists."""

from __future__ import annotations

import dataclasses
import re
import types
import typing

from render.plan.meaning import EXPLANATIONS, plan_field, unit_of
from render.plan.resolve import resolve_plan
from render.plan.tracking import value_at
from render.plan.types import Plan
from render.specs.catalog import MeasuredDataset
from render.specs.types import DataType, Gpu, Model

from conftest import ROOT

DATA_RECORDS = (Gpu, Model, DataType)  # the data's own figures: their units are declared beside their fields


def unwrapped(hint):
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return next(option for option in typing.get_args(hint) if option is not type(None))
    return hint


def computed_paths(kind=Plan, prefix="") -> list[str]:
    """Every number a plan dataclass holds, reached by attribute (the groups of tuples, the beats, the
    storyboard's settings and the data records aside)."""
    found = []
    hints = typing.get_type_hints(kind)
    for field in dataclasses.fields(kind):
        path, hint = f"{prefix}{field.name}", unwrapped(hints[field.name])
        if path in ("choice", "beats", "parameters", "narration") or hint in (*DATA_RECORDS, MeasuredDataset):
            continue
        if dataclasses.is_dataclass(hint):
            found += computed_paths(hint, f"{path}.")
        elif hint in (int, float):
            found.append(path)
    return found


def test_every_number_the_plan_computes_says_what_it_means():
    paths = computed_paths()
    assert len(paths) > 100 and "numbers.prefill.ops" in paths and "expected.decode.tokens_per_second" in paths
    missing = [path for path in paths if path not in EXPLANATIONS]
    assert not missing, "add these to render/plan/meaning.py:\n" + "\n".join(missing)
    assert all(EXPLANATIONS[path].meaning and EXPLANATIONS[path].formula and EXPLANATIONS[path].unit
               for path in paths)


def test_every_row_names_a_number_the_plan_holds_and_its_inputs_too():
    """Each row's path and inputs are numbers of a plan (one of expected numbers, so that every group is there),
    and each input has a unit to be written in."""
    plan = resolve_plan(recordings=None, efficiency="compute=0.6,memory=0.8")

    def held(path: str) -> bool:
        """A numeric field (its group may be absent from this plan: no sweep in the seed), or a property that
        gives a number."""
        field, value = plan_field(path), value_at(plan, path)
        if field is not None:
            return unwrapped(typing.get_type_hints(owner_of(path))[field.name]) in (int, float)
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    for path, explanation in EXPLANATIONS.items():
        if path.startswith("page."):
            continue  # only the film's page's controls reach these
        assert held(path), f"{path} is not a number of the plan"
        for name in explanation.inputs:
            assert held(name), f"{path}: its input {name} is not a number of the plan"
            assert unit_of(name), f"{path}: its input {name} has no unit"


def test_every_figure_of_the_data_declares_its_unit_beside_its_field():
    for kind in DATA_RECORDS:
        hints = typing.get_type_hints(kind)
        for field in dataclasses.fields(kind):
            if unwrapped(hints[field.name]) in (int, float):
                assert field.metadata.get("unit"), f"{kind.__name__}.{field.name} declares no unit"
    assert unit_of("numbers.compare.gpu.bandwidth") == "bytes/s" and unit_of("choice.model.layers") == "layers"


def test_the_readmes_plan_table_names_every_field_of_each_group():
    readme = (ROOT / "docs" / "plan.md").read_text()
    table = readme.split("## The plan", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([a-z_.]+)` \| (.+) \|$", table, re.MULTILINE))
    for group in ("spec", "numbers.prefill", "numbers.decode", "numbers.batch", "numbers.long_prompt",
                  "numbers.quantised"):
        kind = unwrapped(plan_field(group).type) if not isinstance(plan_field(group).type, str) else None
        kind = kind or unwrapped(typing.get_type_hints(owner_of(group))[group.rsplit(".", 1)[-1]])
        named = set(re.findall(r"`([a-z_]+)`", rows[group]))
        fields = {field.name for field in dataclasses.fields(kind)}
        assert fields <= named, f"docs/plan.md's table, {group}: add {sorted(fields - named)}"
        assert named <= fields | set(group.split(".")), f"docs/plan.md's table, {group}: no {sorted(named - fields)}"


def owner_of(path: str):
    kind = Plan
    for name in path.split(".")[:-1]:
        kind = unwrapped(typing.get_type_hints(kind)[name])
    return kind
