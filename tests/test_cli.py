"""The command line as a user meets it: `film plan`, `film roofline`, `film list`, and `make plan`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_film

from render.text import echo


def test_plan_json_is_clean_on_stdout_with_logs_on_stderr():
    result = run_film("plan", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert [beat["id"] for beat in plan["beats"]][:3] == ["two-waits", "prefill", "decode"]
    assert "resolved Prefill vs decode for h100-sxm, llama-3.1-8b, bf16" in result.stderr


def test_plan_for_another_choice():
    result = run_film("plan", "--gpu", "a100-sxm-80gb", "--model", "llama-3.1-70b", "--dtype", "int8", "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    choice = plan["choice"]
    assert (choice["gpu"]["id"], choice["model"]["id"], choice["dtype"]["id"]) == ("a100-sxm-80gb", "llama-3.1-70b",
                                                                                   "int8")
    assert plan["spec"]["ridge_ops_per_byte"] == pytest.approx(153, abs=0.5)


def test_plan_without_json_is_readable():
    result = run_film("plan")
    assert result.returncode == 0
    assert "0:14-0:33  Prefill  [scenes/prefill.py]" in result.stdout
    assert "about 34 milliseconds" in result.stdout


def test_roofline_table_and_json():
    table = run_film("roofline", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--batch", "64", "--context", "256")
    assert table.returncode == 0, table.stderr
    assert "ridge 295 ops/byte" in table.stdout
    assert "TTFT 34 ms" in table.stdout
    assert "decode batch" in table.stdout and "5.4 ms" in table.stdout and "11,775 tokens/s" in table.stdout
    assert "decode reaches the ridge at batch 771" in table.stdout
    assert "209 tokens/s" in run_film("roofline").stdout  # batch 1, nothing cached
    result = run_film("roofline", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--prompt", "32000", "--json")
    report = json.loads(result.stdout)
    assert report["phases"]["prefill"]["seconds"] == pytest.approx(0.791, abs=0.001)
    assert report["phases"]["prefill"]["bound"] == "compute"
    # the prompt's tokens through prefill a second (not one over the TTFT)
    assert report["phases"]["prefill"]["tokens_per_second"] == pytest.approx(32000 / 0.791, rel=0.002)
    assert report["phases"]["decode"]["tokens_per_second"] == pytest.approx(208.6, abs=0.1)
    assert report["prefill_attention_fraction"] == pytest.approx(0.343, abs=0.001)


def test_roofline_rejects_a_bad_number():
    result = run_film("roofline", "--batch", "0")
    assert result.returncode == 2 and "must be at least 1" in result.stderr


@pytest.mark.parametrize("what, expected", [
    ("gpus", ["h100-sxm", "989 TFLOP/s", "3.35 TB/s", "nvidia.com"]),
    ("models", ["llama-3.1-8b", "8.03B", "huggingface.co"]),
    ("dtypes", ["int4", "0.5", "weight-only"]),
    ("measured", ["openrouter-coreweave-llama-3.1-8b-bf16", "h100-sxm (assumed)", "34, 2,081, 16,361"]),
])
def test_list_shows_what_is_known_with_sources(what, expected):
    result = run_film("list", what)
    assert result.returncode == 0
    for text in expected:
        assert text in result.stdout


def test_the_console_script_is_installed_in_the_venv():
    film = Path(sys.prefix) / "bin" / "film"
    if not film.exists():
        pytest.skip("not running inside the project's venv")
    result = subprocess.run([str(film), "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("film ")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_plan_passes_the_choice_through():
    env = {key: value for key, value in os.environ.items() if not key.startswith("MAKE")}
    result = subprocess.run(["make", "-s", "plan", "GPU=a100-sxm-80gb", "MODEL=llama-3.1-70b", "DTYPE=int8"],
                            cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["choice"]["gpu"]["id"] == "a100-sxm-80gb" and plan["choice"]["dtype"]["id"] == "int8"


def run_make(*args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MAKE")}
    return subprocess.run(["make", "-s", *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)


HOSTILE = ["x; touch {proof}; true", "x`touch {proof}`", 'x"; touch {proof}; echo "', "x'; touch {proof}; echo '",
           "$(shell touch {proof})", "x$$(touch {proof})"]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target, variable, payload", [
    *[("plan", "GPU", payload) for payload in HOSTILE],
    ("roofline", "MODEL", HOSTILE[0]), ("roofline", "DTYPE", HOSTILE[2]), ("plan", "COMPARE_GPU", HOSTILE[1]),
    ("plan", "MEASURED", HOSTILE[0]), ("narration", "VOICE", HOSTILE[0]), ("narration", "RECORDINGS", HOSTILE[3]),
    ("still", "BEAT", HOSTILE[0]), ("still", "AT", HOSTILE[1]), ("still", "QUALITY", HOSTILE[2]),
    ("film", "JOBS", HOSTILE[0]), ("plan", "PYTHON", HOSTILE[0]), ("calibrate", "MEASURED", HOSTILE[2]),
    ("calibrate", "GPU", HOSTILE[0]), ("plan", "EFFICIENCY", HOSTILE[1]), ("check-choices", "EFFICIENCY", HOSTILE[0]),
])
def test_make_variables_never_run_as_shell_code_and_are_refused(tmp_path, target, variable, payload):
    proof = tmp_path / "proof"
    value = payload.format(proof=proof)
    extra = ["BEAT=prefill", "AT=1"] if target == "still" and variable not in ("BEAT", "AT") else \
        ["BEAT=prefill"] if variable == "AT" else ["AT=1"] if variable == "BEAT" else []
    if target == "calibrate" and variable != "MEASURED":
        extra = ["MEASURED=openrouter-coreweave-llama-3.1-8b-bf16"]
    result = run_make(target, f"{variable}={value}", *extra)
    assert not proof.exists(), f"{variable}={value!r} ran a command"
    assert result.returncode != 0, f"{variable}={value!r} was accepted:\n{result.stdout[:300]}"
    assert "Traceback" not in result.stderr
    assert (value in result.stderr or echo(value) in result.stderr  # (a long value is echoed cut, its length said)
            or "contains '$'" in result.stderr or "No such file" in result.stderr
            or "not found" in result.stderr), result.stderr
