"""Narration templates: sandboxed Jinja2 whose only vocabulary is the plan and the formatter.

Undefined names are errors, never blanks, and the filters are the shared formatter's
functions, so a number reads the same in the narration, the subtitles and on screen.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping

import jinja2
from jinja2 import meta
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from render import formatting
from render.errors import FilmError, close_matches
from render.plan.types import BUILT_IN_CUES
from render.plan.tracking import untracked

def strict(formatter):
    """A filter that reports a misspelt name as such, not as the formatter's TypeError on a blank."""

    @functools.wraps(formatter)
    def filtered(value, *args, **kwargs):
        if isinstance(value, jinja2.Undefined):
            value._fail_with_undefined_error()
        return formatter(value, *args, **kwargs)

    return filtered


FILTERS = {
    name: strict(getattr(formatting, name))
    for name in (
        "count", "approx", "round_down", "integer", "number_word", "quantity", "large", "gigabytes",
        "bytes_per_token", "teraflops", "bandwidth", "milliseconds", "duration", "seconds",
        "tokens_per_second", "ops_per_byte", "percent", "fraction", "times", "faster", "with_article",
        "possessive", "verb", "part_of",
    )
}


class PlanUndefined(jinja2.StrictUndefined):
    """A name the plan does not have: the error lists the group's values that look like it."""

    @property
    def _undefined_message(self) -> str:
        owner, name = untracked(self._undefined_obj), self._undefined_name
        if owner is jinja2.utils.missing or not isinstance(name, str) or self._undefined_hint:
            return super()._undefined_message
        known = value_names(owner)
        hint = close_matches(name, known)
        did_you_mean = f"; did you mean {', '.join(hint)}?" if hint else ""
        listing = f" (it has: {', '.join(known)})" if known else ""
        return f"{type(owner).__name__} has no value {name!r}{did_you_mean}{listing}"


def value_names(owner: object) -> list[str]:
    """What a template can read of a plan group: its fields and properties (nothing of plain values)."""
    if dataclasses.is_dataclass(owner):
        properties = [name for name, member in vars(type(owner)).items() if isinstance(member, property)]
        return [field.name for field in dataclasses.fields(owner)] + properties
    return []


# Jinja's own filters a narration may use; the others (center, format, indent, wordwrap, ...)
# can build text of any size from a small template, and a sentence never needs them.
JINJA_FILTERS = ("abs", "round", "int", "float", "default", "lower", "upper", "capitalize", "title", "trim",
                 "length", "min", "max", "first", "last")
MAX_OUTPUT = 2_000       # characters of one filled narration or caption (the longest beat has ~350)
MAX_REPEAT = 1_000       # the most "text" * n may repeat
MAX_EXPONENT = 100


class Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, with nothing that can spend unbounded time or memory: no globals
    (range, lipsum, cycler, ...), no method calls, bounded repetition and powers."""

    intercepted_binops = frozenset(["*", "**", "%"])

    def call_binop(self, context, operator, left, right):
        sequences = (str, list, tuple)
        if operator == "*" and (isinstance(left, sequences) and isinstance(right, int) and right > MAX_REPEAT
                                or isinstance(right, sequences) and isinstance(left, int) and left > MAX_REPEAT):
            raise SecurityError(f"repeating text more than {MAX_REPEAT:,} times")
        if operator == "**" and isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
            raise SecurityError(f"a power above {MAX_EXPONENT}")
        if operator == "%" and isinstance(left, str):
            raise SecurityError("%-formatting text (use the formatter's filters)")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - Jinja's own signature
        if not isinstance(__obj, jinja2.runtime.Macro):
            raise SecurityError(f"calling {getattr(__obj, '__name__', type(__obj).__name__)}(); "
                                f"a template uses the plan's values and filters only")
        return super().call(__context, __obj, *args, **kwargs)


def environment() -> ImmutableSandboxedEnvironment:
    env = Sandbox(undefined=PlanUndefined, autoescape=False, keep_trailing_newline=False)
    env.globals.clear()
    env.filters = {name: env.filters[name] for name in JINJA_FILTERS} | FILTERS
    return env


ENVIRONMENT = environment()


def compile_template(source: str, where: str, what: str) -> jinja2.Template:
    """Parse a template now, so a syntax error is reported before anything is computed."""
    try:
        return compiled(source)
    except jinja2.TemplateSyntaxError as error:
        raise FilmError(f"{where}: {what}: template error on its line {error.lineno}: {error.message}") from None


@functools.lru_cache(maxsize=256)
def compiled(source: str) -> jinja2.Template:
    """Compiling is the slow part of a resolve; the same text always compiles the same."""
    return ENVIRONMENT.from_string(source)


@functools.lru_cache(maxsize=256)
def names_used(source: str) -> frozenset[str]:
    return frozenset(meta.find_undeclared_variables(ENVIRONMENT.parse(source)))


def fill(source: str, context: Mapping[str, object], where: str, what: str) -> str:
    """Render a template against the plan; unknown names get the close matches and the fix."""
    template = compile_template(source, where, what)
    unknown = sorted(names_used(source) - set(context))
    if unknown:
        name = unknown[0]
        hint = close_matches(name, context)
        did_you_mean = f"; did you mean {', '.join(hint)}?" if hint else ""
        raise FilmError(
            f"{where}: {what} names {name!r}, which the plan does not have{did_you_mean}\n"
            f"Values a template can use: {', '.join(sorted(context))}"
        )
    try:
        text = template.render(**context)
    except jinja2.UndefinedError as error:
        raise FilmError(f"{where}: {what}: {error.message}; the plan's names are in `make plan`") from None
    except SecurityError as error:
        raise FilmError(f"{where}: {what}: the template sandbox refuses {error}") from None
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, ArithmeticError) as error:
        raise FilmError(f"{where}: {what}: cannot be filled: {error}") from None
    except (RecursionError, MemoryError):
        raise FilmError(f"{where}: {what}: the template never finishes (it calls itself, or builds text without "
                        f"end); keep narration templates to values, filters and if/else") from None
    if len(text) > MAX_OUTPUT:
        raise FilmError(f"{where}: {what}: fills to {len(text):,} characters; a beat's narration or caption is a "
                        f"sentence or two (at most {MAX_OUTPUT:,})")
    return tidy(text)


def tidy(text: str) -> str:
    """Collapse the whitespace that template tags and folded YAML leave behind."""
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r" +([,.;:!?])", r"\1", text)


CUE_MARKER = re.compile(r"\[\[([^\[\]]*)\]\]\s*")
CUE_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


def extract_cues(text: str, where: str, what: str) -> tuple[str, dict[str, int]]:
    """'is [[ops]]33 trillion' -> ('is 33 trillion', {'ops': 3}): named points in the narration.

    A cue marks where the voice says something the picture shows; the narration stage turns
    its character offset into the moment it is spoken.
    """
    cues: dict[str, int] = {}
    clean, cursor = [], 0
    length = 0
    for match in CUE_MARKER.finditer(text):
        name = match.group(1)
        if not CUE_NAME.match(name):
            raise FilmError(f"{where}: {what}: cue [[{name}]] should be lowercase letters, digits and dashes")
        if name in cues:
            raise FilmError(f"{where}: {what}: cue [[{name}]] is marked twice")
        if name in BUILT_IN_CUES:
            raise FilmError(f"{where}: {what}: cue [[{name}]] is built in (every beat has "
                            f"{', '.join(BUILT_IN_CUES)}); give this one another name")
        piece = text[cursor:match.start()]
        clean.append(piece)
        length += len(piece)
        cues[name] = length
        cursor = match.end()
    clean.append(text[cursor:])
    return "".join(clean), cues