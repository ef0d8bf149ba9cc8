"""The film's page in words (script/page.yaml): templates filled from the plan, true for any deployment (issue 43).

Read across the layout lint's set of choices, as the narration is: every sentence says what the plan says for that
deployment, in the formatter's words, and no template seam or build term shows; for the default film the article
reads as the source page's."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from render import formatting as fmt
from render.errors import FilmError
from render.files import PAGE_SCRIPT_PATH
from render.plan.resolve import resolve_plan
from test_layout import LINT_CHOICES, plan_of

# The source page's six paragraphs (its "What is the difference…" to "The honest caveats…"), as published
SOURCE_ARTICLE = Path(__file__).parent / "fixtures" / "source_article.txt"
CHOICES = [("h100-sxm", 1, "llama-3.1-8b", "bf16"), *LINT_CHOICES]
BUILD_TERMS = re.compile(r"\b[A-Z_]{3,}=|[\w./-]+\.ya?ml\b|\bscript/|\bdata/|\bparameters\.\w+|"
                         r"\bmake (?:film|films|test|page|plan|studio|review|scene|still|sheet|narration|preview|bench|"
                         r"setup|calibrate|check-choices)\b|"
                         r"\bNone\b|\bnan\b|\{\{|\}\}|\{%|\[\[")
SEAMS = re.compile(r"  | [,.;:)]|\( |,,|\.\.|,\.|\.,| a a | the the |^[a-z]")


@pytest.fixture(scope="module")
def plans():
    return {choice: plan_of(choice) for choice in CHOICES}


def texts(prose) -> list[str]:
    return [*prose.article, prose.why_it_matters, *(idea.text for idea in prose.connected)]


@pytest.mark.parametrize("choice", CHOICES, ids=lambda choice: "/".join(map(str, choice)))
def test_every_text_reads_and_says_what_the_plan_says(plans, choice):
    plan = plans[choice]
    prose, spec, numbers = plan.prose, plan.spec, plan.numbers
    prefill, decode, batch = numbers.prefill, numbers.decode, numbers.batch
    assert len(prose.article) == 6 and prose.why_it_matters and len(prose.connected) >= 6
    for text in texts(prose):
        assert not BUILD_TERMS.search(text), (choice, BUILD_TERMS.search(text).group(0), text)
        assert not SEAMS.search(text), (choice, SEAMS.search(text).group(0), text)
        assert text[-1] in ".?", text
    two_jobs, deployment, roofline, batching, measured, caveats = prose.article

    # The deployment, in the formatter's words for the plan's numbers.
    for said in (plan.choice.model.name, plan.choice.dtype.name, fmt.large(spec.parameters),
                 fmt.gigabytes(spec.weight_bytes, short=True), fmt.count(prefill.tokens), fmt.large(prefill.ops),
                 fmt.duration(prefill.seconds), fmt.large(decode.ops_per_token),
                 fmt.bandwidth(spec.total_bandwidth, short=True), fmt.milliseconds(decode.step_seconds),
                 f"about {fmt.integer(decode.tokens_per_second)} a second at best"):
        assert said in deployment, (choice, said, deployment)
    assert ("one GPU," in deployment) == (spec.gpus == 1)
    assert ("the experts it wakes" in deployment) == bool(spec.experts)
    assert ("as this deployment runs" in deployment) == (plan.expected is not None)

    # Where each job sits on the roofline, as the physics says.
    compute_bound = prefill.ops_per_byte >= spec.ridge_ops_per_byte
    assert f"ridge is at {fmt.integer(spec.ridge_ops_per_byte)} operations per byte" in roofline
    assert f"does {fmt.quantity(decode.ops_per_byte, 'operation')} per byte" in roofline
    assert ("sits on the flat compute roof" in roofline) == compute_bound
    assert ("with every core busy" in deployment) == (compute_bound and prefill.communication_fraction < 0.1)
    between = prefill.communication_fraction >= 0.1
    assert ("between them" in deployment) == between

    # Batching: the plan's step times and rate, and whether even the ridge's value of users stays memory bound.
    shown = plan.expected or numbers
    for said in (fmt.count(batch.size), fmt.milliseconds(shown.batch.step_seconds),
                 f"over {fmt.round_down(shown.batch.tokens_per_second)} tokens a second"):
        assert said in batching, (choice, said, batching)
    assert ("stays memory bound" in batching) == (batch.ridge_value_ops_per_byte < spec.ridge_ops_per_byte)
    if numbers.quantised:
        assert f"Quantising the weights to {numbers.quantised.dtype.name}" in batching
        assert fmt.faster(numbers.quantised.speedup) in batching

    # The measurements are the dataset's; the caveats name what the fit found and what the provider hides.
    m = plan.measured
    for said in (fmt.seconds(m.long.ttft_seconds), fmt.count(m.long.prompt_tokens),
                 f"{fmt.integer(m.short.decode_tokens_per_second)} tokens a second", fmt.percent(m.long_kv_ratio),
                 fmt.gigabytes(m.long_kv_bytes, short=True)):
        assert said in measured, (choice, said)
    if m.fit and m.fit.compute_efficiency:
        assert fmt.percent(m.fit.compute_efficiency.value) in caveats
    assert ("assumes a GPU the provider does not name" in caveats) == m.dataset.compared_gpu_is_assumption

    # Why it matters: the long prompt's wait on this deployment.
    assert f"a {fmt.count(numbers.long_prompt.tokens)}-token prompt waits {fmt.duration(numbers.long_prompt.seconds)}" \
        in prose.why_it_matters


def test_the_default_article_reads_as_the_source_page(plans):
    """The source page's six paragraphs, sentence by sentence: most are the same words; the rest differ where the
    source typed a number the plan does not hold (its 40 to 70 percent of peak is the fit's figure here)."""
    article = " ".join(plans[CHOICES[0]].prose.article)
    paragraphs = SOURCE_ARTICLE.read_text(encoding="utf-8").split("\n\n")
    assert len(paragraphs) == 6
    sentences = [s.strip() for p in paragraphs for s in re.split(r"(?<=[.?])\s+(?=[A-Z])", p) if s.strip()]
    same = [sentence for sentence in sentences if sentence in article]
    assert len(same) >= 0.75 * len(sentences), [s for s in sentences if s not in same]
    for kept in ("The H100's ridge is at 295 operations per byte: below it the chip waits on memory, above it on "
                 "arithmetic.", "Decode ran at 156 tokens a second, about three quarters of an H100's ceiling, and 13 "
                 "percent slower with the long prompt, matching the 13 percent of extra bytes its 2.1 GB of KV cache "
                 "adds to every step.", "even at 295 users this model stays memory bound"):
        assert kept in article


def test_the_papers_and_links_are_web_addresses_with_their_years(plans):
    prose = plans[CHOICES[0]].prose
    years = {re.split(r"[ ,]", paper.authors)[0]: paper.year for paper in prose.papers}
    assert (years["Pope"], years["Yu"], years["Agrawal"], years["Zhong"], years["Williams"]) == \
        (2022, 2022, 2023, 2024, 2009)
    for link in (*prose.papers, *prose.connected, *prose.read_first, *prose.related):
        assert re.fullmatch(r"https://[\w.-]+/\S*", link.url), link


@pytest.fixture
def prose_copy(tmp_path) -> Path:
    copy = tmp_path / "page.yaml"
    shutil.copy(PAGE_SCRIPT_PATH, copy)
    return copy


def edited(path: Path, old: str, new: str) -> Path:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def line_of(path: Path, needle: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_a_misspelt_name_or_a_bad_link_is_one_message_with_its_line(prose_copy):
    edited(prose_copy, "{{ prefill.tokens|count }} prompt tokens", "{{ prefill.tokenz|count }} prompt tokens")
    with pytest.raises(FilmError) as error:
        resolve_plan(prose_path=prose_copy)
    message = str(error.value)
    assert "page.yaml:" in message and "article paragraph 2" in message and "'tokenz'" in message
    assert "did you mean tokens" in message

    edited(prose_copy, "{{ prefill.tokenz|count }}", "{{ prefill.tokens|count }}")
    edited(prose_copy, "url: https://arxiv.org/abs/2211.05102", "url: javascript:alert(1)")
    with pytest.raises(FilmError) as error:
        resolve_plan(prose_path=prose_copy)
    assert f"page.yaml:{line_of(prose_copy, 'javascript:')}:" in str(error.value)
    assert "is not a web address" in str(error.value)

    edited(prose_copy, "url: javascript:alert(1)", "url: https://arxiv.org/abs/2211.05102")
    edited(prose_copy, "why_it_matters: >-\n  The two phases", "why_it_matters: >-\n  {% if %}The two phases")
    with pytest.raises(FilmError) as error:
        resolve_plan(prose_path=prose_copy)
    assert f"page.yaml:{line_of(prose_copy, 'why_it_matters:')}: why_it_matters: template error" in str(error.value)


def test_the_source_pages_framing_is_the_films_own(plans, prose_copy):
    """The byline (series, author, date, set in script/page.yaml), the standfirst in the source's words for the
    default film and in this deployment's for another, and the rule of thumb with its source (issue 55, item 7)."""
    prose = plans[CHOICES[0]].prose
    assert prose.byline == "AI Engineering Visualised · after James Phoenix, Understanding Data · 4 December 2026"
    source = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "004_70339d625aa121db.txt"
    if source.exists():  # (the source page, where the checkout has it)
        assert f"> {prose.standfirst}" in source.read_text(encoding="utf-8")
    assert prose.standfirst.startswith("Press play and watch one GPU serve Llama 3.1 8B: prefill floods")
    assert "rereads all 16 GB of weights" in prose.standfirst
    moe = resolve_plan(gpu="h200-sxm", model="mixtral-8x7b", gpus=2).prose.standfirst
    assert "watch two H200s serve Mixtral 8x7B" in moe and "the experts each token wakes" in moe
    rule = prose.rule_of_thumb
    assert "40 to 70 percent of peak arithmetic and 70 to 90 percent of peak bandwidth" in rule.text
    assert rule.url.startswith("https://understandingdata.com/") and "honest caveats" in rule.title

    edited(prose_copy, "  date: 2026-12-04", "  date: 4th of December")
    with pytest.raises(FilmError) as error:
        resolve_plan(prose_path=prose_copy)
    assert (f"page.yaml:{line_of(prose_copy, '4th of December')}: byline: date '4th of December' is not a date; "
            f"write it as 2026-12-04") in str(error.value) and "\n" not in str(error.value)
    edited(prose_copy, "  date: 4th of December", "  dated: 2026-12-04")
    with pytest.raises(FilmError, match=r"page.yaml:\d+: the byline: unknown key 'dated' \(did you mean 'date'\?\)"):
        resolve_plan(prose_path=prose_copy)


def test_each_beat_has_its_step_on_the_page_and_one_left_out_or_misspelt_is_named(prose_copy):
    """The page's steps (script/page.yaml: a formula, controls, readout and opening settings for each beat) are the
    film's, not the renderer's: a beat without a step (left out or misspelt) is refused where the storyboard names it,
    a setting that is no plan number where the page's words say it, and a name the page lacks when the page is
    built."""
    from render.files import STORYBOARD_PATH
    from render.publish.page import check_steps

    plan = resolve_plan(cut="extended")
    steps = {beat.id: beat.step for beat in plan.beats}
    assert set(steps) == {beat.id for beat in plan.beats} and all(steps.values())
    assert dict(steps["batching"].opens_at) == {"batch": plan.parameters.batch_size,
                                                "context": plan.parameters.batch_context_tokens}
    assert steps["wasted-money"].earlier_picture == "long-prompt" and steps["decode"].opens_at == ()
    assert ("First token, p90", "load.ttft_p90") in steps["queue"].readout

    storyboard_line = line_of(STORYBOARD_PATH, "id: decode")
    for old, new in (("  decode:\n    formula: decode\n", "  decoding:\n    formula: decode\n"),  # (misspelt)
                     ("  decoding:\n    formula: decode\n    controls: [pills]\n    readout: [[Bandwidth, bandwidth], "
                      "[Bytes per step, decode.bytes_per_step], [Step, decode.step],\n              "
                      "[Tokens per second, decode.tokens_per_second]]\n", "")):  # (left out)
        edited(prose_copy, old, new)
        with pytest.raises(FilmError) as error:
            resolve_plan(prose_path=prose_copy)
        assert f"storyboard.yaml:{storyboard_line}: beat 'decode' has no step on the film's page" in str(error.value)

    shutil.copy(PAGE_SCRIPT_PATH, prose_copy)
    edited(prose_copy, "{prompt: parameters.long_prompt_tokens}", "{prompt: parameters.long_prompt}")
    with pytest.raises(FilmError) as error:
        resolve_plan(prose_path=prose_copy)
    assert (f"page.yaml:{line_of(prose_copy, 'parameters.long_prompt}')}: steps: beat 'wasted-money': opens_at: "
            f"prompt: 'parameters.long_prompt' is no whole number of the plan") in str(error.value), str(error.value)

    shutil.copy(PAGE_SCRIPT_PATH, prose_copy)
    edited(prose_copy, "readout: [[Capacity, load.capacity]", "readout: [[Capacity, load.capacities]")
    with pytest.raises(FilmError, match=re.escape("script/page.yaml: steps: beat 'capacity': readout "
                                                  "'load.capacities' is no number the page shows")):
        check_steps(resolve_plan(prose_path=prose_copy, cut="extended"))
