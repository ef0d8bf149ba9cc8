"""Bad input: one clear message naming the file, the place and the fix; never a traceback."""

from __future__ import annotations

import pytest

from render.errors import FilmError
from render.plan.resolve import resolve_plan

from conftest import run_film


def refusal(storyboard) -> str:
    with pytest.raises(FilmError) as error:
        resolve_plan(storyboard_path=storyboard)
    return str(error.value)


def line_of(path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_malformed_yaml_names_file_and_line(storyboard_copy):
    path = storyboard_copy("    title: Decode\n", "    title: [Decode\n")
    message = refusal(path)
    assert message.startswith(f"{path}:")
    assert "malformed YAML" in message
    assert f":{line_of(path, 'title: [Decode') + 1}:" in message or f":{line_of(path, 'title: [Decode')}:" in message


def test_an_unknown_key_is_named_with_a_suggestion(storyboard_copy):
    path = storyboard_copy("    narration: >-\n      Decode is", "    narations: >-\n      Decode is")
    message = refusal(path)
    assert (f"{path}:{line_of(path, 'narations')}: beat 'decode': unknown key 'narations' "
            f"(did you mean 'narration'?)") in message


def test_a_missing_field_is_named(storyboard_copy):
    path = storyboard_copy('    start: "0:52"\n    narration: >-\n      That is', "    narration: >-\n      That is")
    assert "beat 'roofline': missing 'start'; add it to the entry" in refusal(path)


def test_timestamps_must_increase(storyboard_copy):
    path = storyboard_copy('start: "1:07"', 'start: "0:50"')
    message = refusal(path)
    line = line_of(path, '"0:50"')
    assert f"{path}:{line}: beat 'batching' starts at 0:50, not after beat 'roofline' (0:52)" in message


def test_a_beat_past_the_end_is_refused(storyboard_copy):
    path = storyboard_copy('start: "2:18"', 'start: "2:40"')
    assert "beat 'two-budgets' starts at 2:40, at or past the film's end (2:34" in refusal(path)


def test_a_malformed_timestamp_says_how_to_write_one(storyboard_copy):
    path = storyboard_copy('start: "0:33"', 'start: "33s"')
    assert "beat 'decode' start: '33s' is not a timestamp; write minutes:seconds" in refusal(path)


def test_a_beat_id_that_cannot_name_a_module_is_refused(storyboard_copy):
    """Issue 56, step 2: a beat's id names the module and class that draw it, so it is lower-case words."""
    path = storyboard_copy("  - id: batching\n", "  - id: Batching_Beat\n")
    assert (f"{path}:{line_of(path, 'id: Batching_Beat')}: beat 'Batching_Beat': an id is lower-case words joined "
            f"by hyphens ('my-new-beat'), at most 60 characters: it names the module that draws the beat") \
        in refusal(path)


def test_a_beat_no_scene_class_draws_is_refused_before_rendering(storyboard_copy, tmp_path):
    path = storyboard_copy("  - id: batching\n", "  - id: batching-again\n")
    message = refusal(path)
    assert (f"{path}:{line_of(path, 'id: batching-again')}: beat 'batching-again' has no scene: there is no "
            f"scenes/batching_again.py: write class BatchingAgain(BeatScene) there") in message
    result = run_film("plan", "--storyboard", str(path))
    assert result.returncode == 1 and "has no scene" in result.stderr and "Traceback" not in result.stderr


def test_a_storyboard_that_still_names_scenes_is_told_once_that_it_need_not(storyboard_copy):
    """Issue 56, step 2: `scene:` (the family, before a beat's id named its module) is accepted and ignored, with
    one message for all the beats that still have it, naming the first line."""
    path = storyboard_copy('    start: "0:52"\n', '    start: "0:52"\n    scene: roofline\n')
    text = path.read_text().replace('    start: "1:07"\n', '    start: "1:07"\n    scene: batching\n', 1)
    path.write_text(text)
    result = run_film("plan", "--storyboard", str(path))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    told = [line for line in result.stderr.splitlines() if "no longer needed" in line]
    assert told == [f"film: {path}:{line_of(path, 'scene: roofline')} (and 1 more beat): 'scene:' is no longer "
                    f"needed: a beat is drawn by the class its id names ('roofline': Roofline in scenes/roofline.py); "
                    f"delete the line"], result.stderr


def test_an_unknown_voice_in_the_storyboard_names_its_line(storyboard_copy):
    path = storyboard_copy("voice: hibari ", "voice: espeak ")
    assert f"{path}:{line_of(path, 'voice: espeak')}: narration: unknown voice 'espeak'" in refusal(path)


def test_a_template_naming_an_unknown_value(storyboard_copy):
    path = storyboard_copy("{{ prefill.ops|large }}", "{{ prefil.ops|large }}")
    message = refusal(path)
    assert "beat 'prefill' narration names 'prefil', which the plan does not have; did you mean prefill" in message
    assert "Values a template can use:" in message and "long_prompt" in message


def test_a_template_naming_an_unknown_attribute(storyboard_copy):
    path = storyboard_copy("{{ model.name }} is", "{{ model.nam }} is")
    assert "beat 'prefill' narration: Model has no value 'nam'; did you mean name" in refusal(path)
    path = storyboard_copy("{{ prefill.ops|large }}", "{{ prefill.operations|large }}")
    message = refusal(path)
    assert "PrefillNumbers has no value 'operations'" in message
    assert "(it has: tokens, ops, linear_ops" in message


def test_the_films_summary_is_a_template_checked_as_the_narration_is(storyboard_copy):
    path = storyboard_copy("here.decode.tokens_per_second|integer }} tokens a second",
                           "here.decode.token_per_second|integer }} tokens a second")
    message = refusal(path)
    assert message.startswith(f"{path}:{line_of(path, 'summary: >-')}: film summary: DecodeNumbers has no value "
                              f"'token_per_second'; did you mean tokens_per_second")
    plan = resolve_plan(storyboard_path=storyboard_copy("Why a chat reply waits twice",
                                                        "{{ prefill.tokens|count }} prompt tokens"))
    assert plan.summary.startswith("2,000 prompt tokens: on an H100")


def test_a_template_syntax_error(storyboard_copy):
    path = storyboard_copy("{{ prefill.ops|large }}", "{{ prefill.ops|large }")
    assert "beat 'prefill' narration: template error" in refusal(path)


def test_the_comparison_gpu_cannot_be_the_films_own():
    with pytest.raises(FilmError, match="the comparison GPU is the film's own GPU \\(h100-sxm\\)"):
        resolve_plan(compare_gpu="h100-sxm")


def test_weights_that_do_not_fit_give_sizes_and_fixes():
    with pytest.raises(FilmError) as error:
        resolve_plan(gpu="rtx-4090", model="llama-3.1-70b")
    message = str(error.value)
    assert "Llama 3.1 70B in BF16 does not fit on one GeForce RTX 4090: it needs 151.6 GB" in message
    assert "the GPU has 25.8 GB (24 GiB)" in message
    assert "Try more GPUs: it fits on 8 (GPUS=8); or a GPU with more memory (GPU=b200 or mi300x)" in message


@pytest.mark.parametrize("args, expected", [
    (["plan", "--gpu", "h100"], "error: unknown GPU 'h100'; did you mean h100-sxm"),
    (["plan", "--model", "llama3-8b"], "error: unknown model 'llama3-8b'"),
    (["plan", "--dtype", "fp4"], "error: unknown data type 'fp4'"),
    (["plan", "--gpu", "rtx-4090", "--model", "llama-3.1-70b"], "does not fit on one GeForce RTX 4090"),
    (["plan", "--compare-gpu", "h100-sxm"], "the comparison GPU is the film's own GPU"),
    (["roofline", "--gpu", "rtx-4090", "--model", "llama-3.1-70b"], "does not fit on one GeForce RTX 4090"),
    (["list", "gpu"], "invalid choice: 'gpu'"),
])
def test_the_command_line_gives_one_message_and_a_nonzero_exit(args, expected):
    result = run_film(*args)
    assert result.returncode != 0
    assert expected in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_broken_storyboard_through_the_command_line(storyboard_copy):
    path = storyboard_copy("  - id: batching\n", "  - id: batching-again\n")
    result = run_film("plan", "--storyboard", str(path), "--json")
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {path}:")
    assert "Traceback" not in result.stderr


def test_a_failed_plan_leaves_the_earlier_output_intact(tmp_path):
    out = tmp_path / "plan.json"
    assert run_film("plan", "--out", str(out)).returncode == 0
    good = out.read_text()
    result = run_film("plan", "--gpu", "rtx-4090", "--model", "llama-3.1-70b", "--out", str(out))
    assert result.returncode == 1
    assert out.read_text() == good
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind


@pytest.mark.parametrize("template, message", [
    ("{{ lipsum }}", "names 'lipsum', which the plan does not have"),
    ("{{ range(1000000)|length }}", "names 'range', which the plan does not have"),
    ("{{ 2 ** 3000000000 }}", "the template sandbox refuses a power above 100"),
    ("{{ 'x' * 100000000 }}", "the template sandbox refuses repeating text 100,000,000 times into 100,000,000 "
                              "characters (at most 10,000 in any value)"),
    ("{{ 'x'.ljust(1000000000) }}", "the template sandbox refuses calling ljust()"),
    ("{{ model.__class__.__mro__ }}", "the template sandbox refuses access to attribute '__class__'"),
    ("{{ 'x'|center(1000000000) }}", "template error on its line 1: No filter named 'center'"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "the template never finishes"),
])
def test_hostile_templates_get_one_message(storyboard_copy, template, message):
    path = storyboard_copy("{{ model.name }} is", f"{template} is")
    text = refusal(path)
    assert "beat 'prefill' narration" in text and message in text


@pytest.mark.parametrize("old, new, message", [
    ('start: "0:33"', "start: .nan", "beat 'decode' start: nan is not a time in an explainer film"),
    ('end: "2:34"', 'end: "100000:00"',
     "film end: '100000:00' is not a time in an explainer film; write one from 0:00 to 60:00"),
    ("batch_size: 64", "batch_size: 100000000", "parameters: batch_size must be from 1 to 100,000, not 100,000,000"),
    ("prompt_tokens: 2000", "prompt_tokens: 0", "parameters: prompt_tokens must be from 1 to 10,000,000, not 0"),
    ("[[paste]]Paste", "[[end]]Paste", "cue [[end]] is built in"),
    ("embedding_reads: table", "embedding_reads: some", "parameters: embedding_reads must be table (a step reads "
                                                        "every weight, the source's convention) or rows"),
])
def test_out_of_range_storyboard_values_are_refused(storyboard_copy, old, new, message):
    path = storyboard_copy(old, new)
    text = refusal(path)
    assert str(path) in text and message in text
    result = run_film("plan", "--storyboard", str(path))
    assert result.returncode == 1 and "Traceback" not in result.stderr


def test_a_measured_dataset_is_a_name_not_a_path():
    for name in ("../../script/storyboard", "/etc/passwd", "data/measured/x"):
        with pytest.raises(FilmError, match="a dataset is a name, the file name in data/measured/ without .yaml"):
            resolve_plan(measured=name)
    result = run_film("plan", "--measured", "../../script/storyboard")
    assert result.returncode == 1 and "not a path" in result.stderr and "Traceback" not in result.stderr
