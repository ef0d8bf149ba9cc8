"""The one number formatter: how every number in the narration, subtitles and on screen is written.

Each function returns the written form the narration uses ("33 trillion", "4.8 milliseconds",
"3.35 terabytes a second"); with `short=True` the on-screen form ("33T", "4.8 ms", "3.35 TB/s").
Rounding rules live here once, so the narration and the picture always agree.
"""

from __future__ import annotations

import math

SMALL_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

# Fractions a narrator says in words, and how close a value must be to be called one.
FRACTION_WORDS = (
    (1 / 10, "a tenth"), (1 / 5, "a fifth"), (1 / 4, "a quarter"), (1 / 3, "a third"),
    (2 / 5, "two fifths"), (1 / 2, "half"), (3 / 5, "three fifths"), (2 / 3, "two thirds"),
    (3 / 4, "three quarters"), (4 / 5, "four fifths"), (9 / 10, "nine tenths"),
)
FRACTION_TOLERANCE = 0.02

LARGE_SCALES = ((1e15, "quadrillion", "P"), (1e12, "trillion", "T"), (1e9, "billion", "G"),
                (1e6, "million", "M"), (1e3, "thousand", "k"))


def significant(value: float, digits: int = 2) -> float:
    """Round to `digits` significant figures."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def significant_floor(value: float, digits: int = 2) -> float:
    """Round down to `digits` significant figures (11,776 -> 11,000), for "over N"."""
    if value <= 0 or not math.isfinite(value):
        return value
    scale = 10 ** (math.floor(math.log10(value)) - digits + 1)
    return math.floor(value / scale + 1e-9) * scale


def plain(value: float) -> str:
    """A rounded value without trailing zeros, with thousands separators: 2000 -> '2,000', 4.80 -> '4.8'."""
    if abs(value - round(value)) < 1e-9:
        return f"{int(round(value)):,}"
    text = f"{value:,.6f}".rstrip("0").rstrip(".")
    return text


def scientific(value: float, figures: int = 3) -> str:
    """A number as a formula sets it, mantissa and power of ten: 8,030,261,248 -> '8.03|9' (8.03 × 10⁹)."""
    exponent = math.floor(math.log10(abs(value))) if value else 0
    mantissa = significant(value / 10**exponent, figures)
    if abs(mantissa) >= 10:  # 9.996 rounds up to the next power
        mantissa, exponent = significant(mantissa / 10, figures), exponent + 1
    return f"{plain(mantissa)}|{exponent}"


def count(value: float) -> str:
    """A whole number as written: 2000 -> '2,000'."""
    return f"{int(round(value)):,}"


def approx(value: float) -> str:
    """Two significant figures: 2032 -> '2,000', 0.79 -> '0.79'."""
    return plain(significant(value, 2))


def round_down(value: float) -> str:
    """Two significant figures, rounded down: 11,776 -> '11,000', 2,081 -> '2,000'."""
    return plain(significant_floor(value, 2))


def integer(value: float, short: bool = False) -> str:
    """A whole number as a narrator says it: exact below a thousand (208.6 -> '209'), two significant
    figures from there (2,711 -> '2,700', 12,461 -> '12,000'); on screen always exact ('2,711')."""
    if short or abs(value) < 1000:
        return count(value)
    return plain(significant(value, 2))


def number_word(value: float) -> str:
    """Small whole numbers in words ('one', 'two'); anything else as digits."""
    rounded = round(value)
    if abs(value - rounded) < 0.05 and 0 <= rounded < len(SMALL_NUMBER_WORDS):
        return SMALL_NUMBER_WORDS[rounded]
    return approx(value)


def quantity(value: float, noun: str) -> str:
    """'one operation', 'two operations', '2,000 operations'."""
    word = number_word(value)
    return f"{word} {noun}" if word == "one" else f"{word} {noun}s"


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """A count in a program's message, in digits: '1 beat', '2 beats', '1 process', '3 processes'."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"


def large(value: float, short: bool = False) -> str:
    """Big counts in words: 3.32e13 -> '33 trillion' ('33T'), 1.41e11 -> '141 billion'."""
    for scale, word, symbol in LARGE_SCALES:
        if abs(value) >= scale:
            mantissa = value / scale
            # Whole units from 100 up (141 billion), as gigabytes() does; else two figures.
            mantissa = round(mantissa) if mantissa >= 100 else significant(mantissa, 2)
            if mantissa >= 1000:
                continue
            return f"{plain(mantissa)}{symbol}" if short else f"{plain(mantissa)} {word}"
    return approx(value)


def part_of(part: float, whole: float, short: bool = False) -> str:
    """A part and its whole on the whole's scale: (1.29e10, 4.67e10) -> '13 of its 47 billion' ('13/47B')."""
    for scale, word, symbol in LARGE_SCALES:
        if abs(whole) >= scale:
            numbers = [round(v / scale) if v / scale >= 100 else significant(v / scale, 2) for v in (part, whole)]
            if numbers[1] >= 1000:
                continue
            return (f"{plain(numbers[0])}/{plain(numbers[1])}{symbol}" if short
                    else f"{plain(numbers[0])} of its {plain(numbers[1])} {word}")
    return f"{approx(part)}/{approx(whole)}" if short else f"{approx(part)} of its {approx(whole)}"


def gigabytes(value: float, short: bool = False) -> str:
    """Bytes as GB (10^9): two significant figures below 100 GB, whole GB above."""
    gb = value / 1e9
    number = count(gb) if gb >= 100 else plain(significant(gb, 2))
    return f"{number} GB" if short else f"{number} gigabytes"


def bytes_per_token(value: float, short: bool = False) -> str:
    """KV bytes per token, exact ('131,072 bytes'); shown in KiB on screen, as the source does, to three figures where
    it is not whole (DeepSeek-V3's latent cache: '34.3 KiB', not '34.3125 KiB')."""
    if short:
        return f"{plain(significant(value / 1024, 3) if value % 1024 else value / 1024)} KiB"
    return f"{count(value)} bytes"


def teraflops(value: float, short: bool = False) -> str:
    """Peak FLOP/s in TFLOP/s: '989 teraflops', '165 teraflops', '82.6 teraflops'; said to three
    figures from a thousand ('10,500 teraflops'), shown whole ('10,460 TFLOP/s')."""
    tera = value / 1e12
    number = count(tera) if tera >= 100 and (short or tera < 1000) else plain(significant(tera, 3))
    return f"{number} TFLOP/s" if short else f"{number} teraflops"


def bandwidth(value: float, short: bool = False) -> str:
    """Bytes/s, three significant figures: '3.35 terabytes a second', '864 gigabytes a second'; from
    10 TB/s said to two ('21 terabytes a second'), shown to three ('21.2 TB/s')."""
    if value >= 1e12:
        figures = 3 if short or value < 10e12 else 2
        number, unit, symbol = plain(significant(value / 1e12, figures)), "terabytes", "TB/s"
    else:
        number, unit, symbol = plain(significant(value / 1e9, 3)), "gigabytes", "GB/s"
    return f"{number} {symbol}" if short else f"{number} {unit} a second"


def milliseconds(seconds: float, short: bool = False, unit: bool = True) -> str:
    """Two significant figures in ms: 0.0335 -> '34 milliseconds', 0.00479 -> '4.8 milliseconds'."""
    ms = seconds * 1e3
    number = count(ms) if ms >= 100 else plain(significant(ms, 2))
    if not unit:
        return number
    return f"{number} ms" if short else f"{number} milliseconds"


def duration(seconds: float, short: bool = False) -> str:
    """A computed time as a narrator rounds it.

    Under 0.1 s in milliseconds ('34 milliseconds'); up to half a second to two decimals
    ('0.15 seconds'); up to ten seconds to one decimal ('0.8 seconds'); whole seconds beyond.
    """
    if seconds < 0.1:
        return milliseconds(seconds, short)
    if seconds < 0.5:
        number = plain(round(seconds, 2))
    elif seconds < 10:
        number = plain(round(seconds, 1))
    else:
        number = count(seconds)
    return f"{number} s" if short else f"{number} {'second' if number == '1' else 'seconds'}"


def duration_beside(seconds: float, other: float) -> str:
    """A computed time said right after `other`: without its unit when `other` is said in the same one ('about 46
    milliseconds here, 34 at best'; but '0.12 seconds here, 86 milliseconds at best')."""
    number, _, unit = duration(seconds).partition(" ")
    return number if duration(other).partition(" ")[2].rstrip("s") == unit.rstrip("s") else duration(seconds)


def seconds(value: float, short: bool = False) -> str:
    """A measured time at two significant figures, always in seconds: '0.74 seconds', '0.3 seconds'."""
    number = plain(significant(value, 2))
    return f"{number} s" if short else f"{number} {'second' if number == '1' else 'seconds'}"


def precise_seconds(value: float, uncertainty: float | None = None) -> str:
    """A measured or fitted time to three significant figures, in ms under a tenth of a second: '6.41 ms', '0.277 s'
    (residuals are small differences); with its uncertainty, in the time's own unit and both to one decimal place:
    the value's three figures or the uncertainty's two, whichever ends first, but never before the uncertainty's
    first figure ('0.277 ± 0.068 s', '30.0 ± 0.3 s', '0.30 ± 0.05 s', '0.740 ± 0.007 s'; never '0.277 s ± 68.5 ms',
    nor '30 ± 5 s' for a time written to a tenth, nor '0.3 ± 0.05 s' with the value cut before its uncertainty)."""
    scale, unit = (1e3, "ms") if abs(value) < 0.1 else (1.0, "s")
    if uncertainty is None or not uncertainty > 0 or not math.isfinite(uncertainty):
        return f"{plain(significant(value * scale, 3))} {unit}"
    shown, spread = value * scale, uncertainty * scale

    def decimals(number: float, figures: int) -> int:
        return max(0, figures - 1 - math.floor(math.log10(abs(number))))

    spread_places = len(plain(significant(spread, 2)).partition(".")[2])  # ('0.05', not '0.050')
    places = min(decimals(shown, 3) if shown else spread_places, spread_places)
    places = max(places, decimals(spread, 1))
    return f"{shown:.{places}f} ± {spread:.{places}f} {unit}"


def nanoseconds(value: float, uncertainty: float | None = None) -> str:
    """A per-token time far under a microsecond: '57.7 ns', '57.7 ± 6.0 ns' (the KV slope)."""
    spread = f" ± {uncertainty * 1e9:.1f}" if uncertainty is not None else ""
    return f"{value * 1e9:.1f}{spread} ns"


def share_of(value: float, uncertainty: float) -> str:
    """A fitted fraction and its uncertainty: '74% ± 1%'."""
    return f"{percent(value, short=True)} ± {percent(uncertainty, short=True)}"


def signed_percent(fraction: float) -> str:
    """'+8.1%', '−7.7%' (a true minus sign)."""
    return f"{fraction:+.1%}".replace("-", "−")


def tokens_per_second(value: float, short: bool = False) -> str:
    """'209 tokens a second' ('209 tokens/s'); to the nearest token on screen, as said above a thousand."""
    number = integer(value, short)
    return f"{number} tokens/s" if short else f"{number} tokens a second"


def ops_per_byte(value: float, short: bool = False, unit: bool = True) -> str:
    """Arithmetic intensity: whole numbers from 10 up, else two significant figures."""
    number = integer(value, short) if value >= 10 else plain(significant(value, 2))
    if not unit:
        return number
    if short:
        return f"{number} op/byte" if number == "1" else f"{number} ops/byte"
    return f"{number} operation per byte" if number == "1" else f"{number} operations per byte"


def percent(fraction: float, short: bool = False) -> str:
    """0.128 -> '13 percent' ('13%')."""
    number = count(fraction * 100) if abs(fraction) >= 0.01 else plain(significant(fraction * 100, 1))
    return f"{number}%" if short else f"{number} percent"


def fraction(value: float, short: bool = False) -> str:
    """A share in words where one fits ('a third', 'three quarters'), else a percentage."""
    if not short:
        for target, words in FRACTION_WORDS:
            if abs(value - target) <= FRACTION_TOLERANCE:
                return words
    return percent(value, short)


def times(ratio: float, short: bool = False) -> str:
    """A ratio as a multiple: 3.17 -> 'three times', 1.64 -> '1.6 times', 0.5 -> 'half', ~1 -> 'the same'.

    Reads before a noun phrase: "three times an A100's teraflops", "a third of its bandwidth".

    Whole multiples from three up are said in words when the ratio is within 0.2 of one;
    below one, a common fraction where one fits.
    """
    if short:
        return f"{plain(significant(ratio, 2))}×"
    if abs(ratio - 1) < 0.05:
        return "the same"
    if ratio < 1:
        words = fraction(ratio)
        if words.endswith("percent"):
            return f"{plain(significant(ratio, 2))} times"
        return words if words == "half" else f"{words} of"  # "half its bandwidth", "a third of its bandwidth"
    if abs(ratio - 2) < 0.05:
        return "twice"
    whole = round(ratio)
    if ratio >= 2.95 and abs(ratio - whole) <= 0.2:
        return f"{number_word(whole)} times"
    return f"{plain(round(ratio, 1))} times"


def faster(ratio: float) -> str:
    """A speed-up: '1.6 times faster', 'three times faster', but 'twice as fast'."""
    words = times(ratio)
    return "twice as fast" if words == "twice" else f"{words} faster"


def timestamp(seconds: float) -> str:
    """Film time as the transcript writes it: 74.0 -> '1:14', 74.5 -> '1:14.50'."""
    minutes, secs = divmod(seconds, 60)
    return f"{int(minutes)}:{secs:05.2f}".replace(".00", "")


def with_article(thing) -> str:
    """'an H100', 'a B200' (the article comes from how the name is spoken, in the data); several
    GPUs: 'four H100s'."""
    count = getattr(thing, "count", 1)
    if count > 1:
        return f"{number_word(count)} {thing.short_name}s"
    return f"{thing.article} {thing.short_name}"


def possessive(thing) -> str:
    """'an H100's', 'four H100s''."""
    named = with_article(thing)
    return f"{named}'" if getattr(thing, "count", 1) > 1 else f"{named}'s"


IRREGULAR_PLURALS = {"has": "have", "is": "are", "does": "do", "was": "were"}


def verb(thing, singular: str) -> str:
    """The verb agreeing with one GPU or several: verb(four H100s, 'needs') -> 'need'."""
    if getattr(thing, "count", 1) == 1:
        return singular
    return IRREGULAR_PLURALS.get(singular, singular[:-1] if singular.endswith("s") else singular)
