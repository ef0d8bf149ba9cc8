"""Prompts of a size the endpoint itself counts, each cold: it opens with words no other request of the run
shares, so no prefix cache can serve it."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from render.errors import FilmError
from render.measure.client import Endpoint

FILLER = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches "
          "near misty harbour lights").split()
# Five-letter words for the sentence that opens each prompt: a word of every sentence costs the
# same tokens in most tokenizers, so a prompt's size does not depend on which words it drew.
OPENING_WORDS = ("amber cedar cloud coral delta eagle ember fable flint frost glade grain heron ivory jewel "
                 "lemon lilac maple marsh noble ocean olive onion pearl plume prism quail raven ridge river "
                 "robin sable shore slate spire stone storm sugar thorn tiger topaz tulip umber vapor viola "
                 "waltz wheat wharf").split()
OPENING_LENGTH = 3  # two words no other request of the run begins with, and one more
CALIBRATION_ROUNDS = 12
FIRST_PROBE_TOKENS = 256      # calibration starts small: a tokenizer may spend many tokens a word
CHARS_PER_TOKEN = 4           # English text in common tokenizers: only the first guess
MAX_PROMPT_CHARS = 40_000_000  # calibration never builds a longer prompt than this
MAX_OPENINGS = len(OPENING_WORDS) * (len(OPENING_WORDS) - 1)  # prompts a run can open with words of their own


class Prompts:
    """Prompts of a given number of filler words, each opening with a sentence of its own.

    No two openings of a run share their first two words, so two requests share no cacheable
    prefix beyond the chat template's few tokens and one word (cold prompts)."""

    def __init__(self, seed: int | None = None, advice: str = "lower --runs or --concurrency"):
        self.random = random.Random(seed)
        self.advice = advice
        pairs = [(a, b) for a in OPENING_WORDS for b in OPENING_WORDS if a != b]
        self.random.shuffle(pairs)
        self.pairs = iter(pairs)

    def opening(self) -> str:
        try:
            first = next(self.pairs)
        except StopIteration:
            raise FilmError(f"more than {MAX_OPENINGS:,} prompts in one run; {self.advice}") from None
        rest = self.random.sample(OPENING_WORDS, OPENING_LENGTH - 2)
        return " ".join((*first, *rest)).capitalize() + "."

    def make(self, chars: int, opening: str | None = None) -> str:
        return f"{opening or self.opening()} {filler(chars)}"


def filler(chars: int) -> str:
    """`chars` characters of the filler sentence, repeated: a prompt's size moves a character at a time,
    finer than a token even for a tokenizer that spends several tokens a word."""
    sentence = " ".join(FILLER) + " "
    text = sentence * (chars // len(sentence) + 1)
    return text[:max(1, chars)].rstrip() or text[0]


def filler_chars(words: int) -> int:
    """The characters of `words` whole filler words."""
    return len(" ".join(FILLER[index % len(FILLER)] for index in range(max(1, words))))


@dataclass
class Calibrated:
    chars: int                  # filler characters that make the requested size
    tokens: int | None          # the server's count of the last calibration prompt (None: it reports none)


def calibrate(endpoint: Endpoint, prompts: Prompts, tokens: int) -> Calibrated:
    """The filler that makes a prompt the endpoint counts as `tokens` tokens, within 1% (or one token).

    Each round's prompt opens differently (so calibration warms no cache for the timed runs). The first
    is short, since a tokenizer may spend many tokens a word; then the filler grows or shrinks in
    proportion (at most fourfold a round) until one count is below and one above, and the search
    narrows between them, a character at a time at the finest."""
    tolerance = max(1, 0.01 * tokens)
    chars = min(tokens, FIRST_PROBE_TOKENS) * CHARS_PER_TOKEN
    below = above = None  # the longest filler counted short, the shortest counted long: (chars, tokens)
    counted = None
    for _ in range(CALIBRATION_ROUNDS):
        counted = endpoint.prompt_tokens(prompts.make(chars))
        if counted is None:  # no usage anywhere: one token a word, and the dataset says it is an estimate
            return Calibrated(filler_chars(max(1, tokens - OPENING_LENGTH)), None)
        if counted == 0:
            raise FilmError(f"the endpoint counted a {chars:,}-character prompt as 0 tokens, so no prompt can be "
                            f"calibrated against it; nothing was written")
        if abs(counted - tokens) <= tolerance:
            return Calibrated(chars, counted)
        if counted > tokens and chars == 1:
            raise FilmError(f"{tokens:,}-token prompt: the shortest prompt this endpoint counts is {counted:,} tokens "
                            f"(its chat template and the opening words that keep each prompt cold); ask for at "
                            f"least {math.ceil(counted * 1.01):,}. Nothing was written")
        if counted < tokens and (below is None or chars > below[0]):
            below = (chars, counted)
        if counted > tokens and (above is None or chars < above[0]):
            above = (chars, counted)
        if below and above:
            if above[0] - below[0] <= 1:
                break  # one character apart and still no count within tolerance
            guess = below[0] + (tokens - below[1]) * (above[0] - below[0]) / (above[1] - below[1])
            chars = min(max(round(guess), below[0] + 1), above[0] - 1)
        else:
            # At most four times longer or shorter a round: a wild count cannot make the prompt explode;
            # at least a character: a short filler's proportion can round back to itself.
            scaled = max(1, min(round(chars * tokens / counted), 4 * chars, MAX_PROMPT_CHARS), chars // 4)
            chars = scaled if scaled != chars else max(1, chars + (1 if counted < tokens else -1))
    raise FilmError(f"could not build a prompt of {tokens:,} tokens within 1% in {CALIBRATION_ROUNDS} tries "
                    f"(last: {counted:,}); nothing was written")
