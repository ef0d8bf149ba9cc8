"""Narration templates: sandboxed Jinja2 whose only vocabulary is the plan and the formatter.

Undefined names are errors, never blanks, and the filters are the shared formatter's
functions, so a number reads the same in the narration, the subtitles and on screen.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import operator
import dataclasses
import functools
import json
import marshal
import re
from collections.abc import Mapping
from pathlib import Path

import jinja2
from jinja2 import meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from render import formatting
from render.errors import FilmError, close_matches
from render.memo import key_of, remembered
from render.plan.phrases import PHRASES
from render.plan.types import BUILT_IN_CUES
from render.plan.tracking import untracked

MAX_SPOKEN = 1e18  # beyond any number a film speaks (a 405B model's prefill of 131,072 tokens is about 1e17 operations)


def strict(formatter):
    """A filter that reports a misspelt name as such, not as the formatter's TypeError on a blank, and that speaks
    only numbers in range: finite, below MAX_SPOKEN, and not a quantity that would be said as nothing ("about 0 a
    second" for a rate the inputs made vanishingly small)."""

    @functools.wraps(formatter)
    def filtered(value, *args, **kwargs):
        if isinstance(value, jinja2.Undefined):
            value._fail_with_undefined_error()
        text = formatter(value, *args, **kwargs)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value) or abs(value) > MAX_SPOKEN:
                raise ValueError(f"|{formatter.__name__} was given {value:.4g}, out of the range a film speaks; the "
                                 f"inputs that make it are out of range")
            if value and re.search(r"\b0\b", text) and not re.search(r"[1-9]", text):
                raise ValueError(f"|{formatter.__name__} would say {value:.4g} as {text!r}; the inputs that make it "
                                 f"are out of range, or the template should say it another way")
        return text

    return filtered


def named_phrase(phrase):
    """A phrase filter (render/plan/phrases.py) that reports a misspelt name among its groups as such."""

    @functools.wraps(phrase)
    def filtered(*args):
        for arg in args:
            if isinstance(arg, jinja2.Undefined):
                arg._fail_with_undefined_error()
        return phrase(*args)

    return filtered


FILTERS = {
    name: strict(getattr(formatting, name))
    for name in (
        "count", "approx", "round_down", "integer", "number_word", "quantity", "large", "gigabytes",
        "bytes_per_token", "teraflops", "bandwidth", "milliseconds", "duration", "duration_beside", "seconds",
        "tokens_per_second", "ops_per_byte", "percent", "fraction", "times", "faster", "with_article",
        "possessive", "verb", "part_of",
    )
} | {name: named_phrase(phrase) for name, phrase in PHRASES.items()}


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
MAX_EXPONENT = 100
# A filling's whole budget, which chains and nested loops share rather than each operator having its own:
MAX_STEPS = 100_000      # loop turns, operations, attribute reads, filters and comparisons, each costing what it
                         # reads (the whole storyboard takes ~400)
MAX_VALUE = 10_000       # characters of text or items of a list, in any value a template builds
MAX_WRITTEN = 20_000     # characters written anywhere, blocks captured by {% set %} included
MAX_INT_BITS = 1_024     # a whole number's size (10**300 is 997 bits)


@dataclasses.dataclass
class Budget:
    steps: int = 0
    written: int = 0


BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("template_budget", default=None)


@contextlib.contextmanager
def one_budget():
    """Every template filled inside shares one budget: a storyboard's nine narrations, their captions and its
    summary draw on the same MAX_STEPS, so splitting a bomb across them buys nothing."""
    token = BUDGET.set(Budget()) if BUDGET.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            BUDGET.reset(token)


def spend(steps: int = 1) -> None:
    budget = BUDGET.get()
    if budget is None:
        raise SecurityError("filling a template outside fill()")
    budget.steps += steps
    if budget.steps > MAX_STEPS:
        raise SecurityError(f"more than {MAX_STEPS:,} steps of work (loop turns, operations, filters and "
                            f"comparisons, each costing the characters or items it reads) in the storyboard's "
                            f"templates; all of the film's take about 400")


def checked(value):
    """A value a template built, refused when it is larger than any sentence needs (or not a finite number)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SecurityError(f"a number that is not finite ({value}); a narration speaks the plan's numbers")
    if isinstance(value, (str, list, tuple, dict)) and len(value) > MAX_VALUE:
        what = "text" if isinstance(value, str) else "a collection"
        unit = "characters" if isinstance(value, str) else "items"
        raise SecurityError(f"building {what} of {len(value):,} {unit} (at most {MAX_VALUE:,})")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise SecurityError(f"a whole number of {value.bit_length():,} bits (at most {MAX_INT_BITS:,})")
    return value


def size_of(value) -> int:
    return len(value) if isinstance(value, (str, list, tuple)) else 0


def work(value) -> int:
    """What going through `value` once costs: its length for text and collections (a max, a comparison or a
    membership test reads every character or item), one step for anything else."""
    return max(len(value), 1) if isinstance(value, (str, list, tuple, dict)) else 1


def bits(value) -> int:
    return value.bit_length() if isinstance(value, int) else 0


def refuse_before(operator: str, left, right) -> None:
    """What an operation would build, judged before it is built: `"x" * 10**6` is never made."""
    sequences = (str, list, tuple)
    if operator == "*":
        count, sequence = (right, left) if isinstance(left, sequences) else (left, right)
        if isinstance(sequence, sequences) and isinstance(count, int):
            checked(sequence)
            if len(sequence) * max(count, 0) > MAX_VALUE:
                what = "text" if isinstance(sequence, str) else "a list"
                raise SecurityError(f"repeating {what} {count:,} times into {len(sequence) * count:,} "
                                    f"{'characters' if isinstance(sequence, str) else 'items'} "
                                    f"(at most {MAX_VALUE:,} in any value)")
        elif bits(left) + bits(right) > MAX_INT_BITS + 1:
            raise SecurityError(f"a product of whole numbers over {MAX_INT_BITS:,} bits")
    elif operator == "**":
        if isinstance(right, (int, float)) and not isinstance(right, bool) and abs(right) > MAX_EXPONENT:
            raise SecurityError(f"a power above {MAX_EXPONENT}")
        if isinstance(left, int) and isinstance(right, int) and right > 0 and bits(left) * right > MAX_INT_BITS + right:
            raise SecurityError(f"a power whose result is over {MAX_INT_BITS:,} bits")
    elif operator == "+" and size_of(left) + size_of(right) > MAX_VALUE:
        raise SecurityError(f"joining values into {size_of(left) + size_of(right):,} characters or items "
                            f"(at most {MAX_VALUE:,})")
    elif operator == "%" and isinstance(left, str):
        raise SecurityError("%-formatting text (use the formatter's filters)")


@jinja2.pass_context
def budgeted_loop(context, iterable):
    """A for loop's items, each turn paid for from the filling's budget."""
    for item in iterable:
        spend()
        yield item


@jinja2.pass_context
def budgeted_concat(context, parts):
    """`a ~ b ~ c`, refused before the joined text is built when it would be too large."""
    texts = [str(part) for part in parts]
    spend(len(texts))
    length = sum(map(len, texts))
    if length > MAX_VALUE:
        raise SecurityError(f"joining text of {length:,} characters (at most {MAX_VALUE:,} in any value)")
    return "".join(texts)


@jinja2.pass_context
def budgeted_output(context, value):
    """What a template writes (to its result or to a captured block), counted against the budget."""
    text = str(value)
    budget = BUDGET.get()
    spend()
    budget.written += len(text)
    if budget.written > MAX_WRITTEN:
        raise TooLong(f"writing more than {MAX_WRITTEN:,} characters")
    return text


COMPARISONS = {"eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "gteq": operator.ge, "lt": operator.lt,
               "lteq": operator.le, "in": lambda left, right: left in right,
               "notin": lambda left, right: left not in right}


@jinja2.pass_context
def budgeted_compare(context, operands, operators):
    """`a == b`, `a in b`, `a < b < c`: each comparison paid for by what it reads (both sides' lengths), before it
    reads them, as Python chains them (each true, or False at the first that is not)."""
    left = operands[0]
    for name, right in zip(operators, operands[1:]):
        spend(work(left) + work(right))
        if not COMPARISONS[name](left, right):
            return False
        left = right
    return True


class TooLong(SecurityError):
    """A filling that writes far more than any sentence (stopped as it writes, before it is all built)."""


INTERNAL_FILTERS = {"_loop": budgeted_loop, "_concat": budgeted_concat, "_output": budgeted_output,
                    "_compare": budgeted_compare}


class Budgeted(NodeTransformer):
    """Rewrites a parsed template so that every loop turn, `~` join and write goes through the budget
    (Jinja's sandbox intercepts operators, but not loops, joins or output)."""

    @staticmethod
    def filtered(node, name: str):
        return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)

    def visit_For(self, node):  # noqa: N802 - Jinja's NodeTransformer names
        node = self.generic_visit(node)
        node.iter = self.filtered(node.iter, "_loop")
        return node

    def visit_Concat(self, node):  # noqa: N802
        node = self.generic_visit(node)
        return self.filtered(nodes.List(node.nodes, lineno=node.lineno), "_concat")

    def visit_Compare(self, node):  # noqa: N802
        node = self.generic_visit(node)
        operands = nodes.List([node.expr, *[operand.expr for operand in node.ops]], lineno=node.lineno)
        operators = nodes.Const(tuple(operand.op for operand in node.ops), lineno=node.lineno)
        return nodes.Filter(operands, "_compare", [operators], [], None, None, lineno=node.lineno)

    def visit_Const(self, node):  # noqa: N802
        # Jinja writes a float constant into its generated Python as str(value): 1e309 became `inf`, a NameError.
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise jinja2.TemplateSyntaxError("a number too large to write (it is infinite as a float); a narration "
                                             "speaks the plan's numbers", node.lineno)
        return node

    def visit_Output(self, node):  # noqa: N802
        node = self.generic_visit(node)
        node.nodes = [self.filtered(nodes.Const(child.data, lineno=child.lineno) if isinstance(child,
                                                                                               nodes.TemplateData)
                                    else child, "_output") for child in node.nodes]
        return node


def paid(function):
    """A filter that costs what it reads (a max over a list costs its length) and whose result is size-checked."""

    @functools.wraps(function)
    def filtered(*args, **kwargs):
        # (Jinja hands some of its filters the environment or the context first: the value is the next argument)
        values = [arg for arg in args[:2] if not isinstance(arg, (jinja2.Environment, jinja2.runtime.Context,
                                                                     nodes.EvalContext))]
        spend(work(values[0]) if values else 1)
        return checked(function(*args, **kwargs))

    return filtered


class Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, with nothing that can spend unbounded time or memory: no globals
    (range, lipsum, cycler, ...), no method calls, and one budget of steps and sizes per filling
    (render/plan/templating.py's MAX_*) that every loop, operator, join and write draws on."""

    intercepted_binops = frozenset(["+", "-", "*", "/", "//", "%", "**"])
    intercepted_unops = frozenset(["+", "-"])

    def _parse(self, source, name, filename):
        return Budgeted().visit(super()._parse(source, name, filename))

    def call_binop(self, context, operator, left, right):
        spend()
        refuse_before(operator, left, right)
        return checked(super().call_binop(context, operator, left, right))

    def call_unop(self, context, operator, arg):
        spend()
        return super().call_unop(context, operator, arg)

    def getattr(self, obj, attribute):
        spend()
        return super().getattr(obj, attribute)

    def getitem(self, obj, argument):
        spend()
        return checked(super().getitem(obj, argument))

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 - Jinja's own signature
        if not isinstance(__obj, jinja2.runtime.Macro):
            raise SecurityError(f"calling {getattr(__obj, '__name__', type(__obj).__name__)}(); "
                                f"a template uses the plan's values and filters only")
        spend()
        return super().call(__context, __obj, *args, **kwargs)


def environment() -> ImmutableSandboxedEnvironment:
    env = Sandbox(undefined=PlanUndefined, autoescape=False, keep_trailing_newline=False)
    env.globals.clear()
    env.filters = {name: paid(function) for name, function in
                   ({name: env.filters[name] for name in JINJA_FILTERS} | FILTERS).items()} | INTERNAL_FILTERS
    return env


ENVIRONMENT = environment()


def compile_template(source: str, where: str, what: str) -> jinja2.Template:
    """Parse a template now, so a syntax error is reported before anything is computed."""
    try:
        return compiled(source)
    except jinja2.TemplateSyntaxError as error:
        raise FilmError(f"{where}: {what}: template error on its line {error.lineno}: {error.message}") from None


@functools.cache
def template_key(source: str) -> str:
    """What a template's compiled code depends on: its text, Jinja's release and this module (the sandbox, its
    filters and settings)."""
    return key_of("template", jinja2.__version__, Path(__file__).read_bytes(), source)


@functools.lru_cache(maxsize=256)
def compiled(source: str) -> jinja2.Template:
    """Compiling is the slow part of a resolve; the same text always compiles the same, so its code is kept between
    processes too (render/memo.py), and a syntax error is found where it is compiled."""
    def make() -> bytes:
        # Compiled outside any budget, so that Jinja folds no filter call on a literal into the code (the project's
        # filters refuse to run without one): the code holds no output of render/formatting.py, whatever the caller.
        token = BUDGET.set(None)
        try:
            return marshal.dumps(ENVIRONMENT.compile(source))
        finally:
            BUDGET.reset(token)

    code = marshal.loads(remembered("templates", template_key(source), make))
    return ENVIRONMENT.template_class.from_code(ENVIRONMENT, code, ENVIRONMENT.make_globals(None), None)


@functools.lru_cache(maxsize=256)
def names_used(source: str) -> frozenset[str]:
    found = remembered("template-names", template_key(source), lambda: json.dumps(
        sorted(meta.find_undeclared_variables(ENVIRONMENT.parse(source)))).encode())
    return frozenset(json.loads(found))


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
        with one_budget():  # (the storyboard's, when it is being filled; else this template's own)
            text = template.render(**context)
    except jinja2.UndefinedError as error:
        raise FilmError(f"{where}: {what}: {error.message}; the plan's names are in `make plan`") from None
    except TooLong:
        raise FilmError(f"{where}: {what}: fills to more than {MAX_WRITTEN:,} characters; a beat's narration or "
                        f"caption is a sentence or two (at most {MAX_OUTPUT:,})") from None
    except SecurityError as error:
        raise FilmError(f"{where}: {what}: the template sandbox refuses {error}") from None
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, ArithmeticError) as error:
        raise FilmError(f"{where}: {what}: cannot be filled: {error}") from None
    except (RecursionError, MemoryError):
        raise FilmError(f"{where}: {what}: the template never finishes (it calls itself, or builds text without "
                        f"end); keep narration templates to values, filters and if/else") from None
    except Exception as error:  # noqa: BLE001 - whatever else a template makes Jinja's generated code raise
        raise FilmError(f"{where}: {what}: cannot be filled ({type(error).__name__}: {error}); keep narration "
                        f"templates to the plan's values, filters and if/else") from None
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
