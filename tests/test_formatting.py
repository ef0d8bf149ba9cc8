"""The one number formatter: the transcript's own roundings, and the forms used on screen."""

from __future__ import annotations

import pytest

from render import formatting as fmt


@pytest.mark.parametrize("function, value, expected", [
    (fmt.count, 2000, "2,000"),
    (fmt.large, 3.3169e13, "33 trillion"),
    (fmt.large, 16.06e9, "16 billion"),
    (fmt.large, 1.411e11, "141 billion"),
    (fmt.large, 2.87e14, "287 trillion"),
    (fmt.teraflops, 989e12, "989 teraflops"),
    (fmt.teraflops, 165.2e12, "165 teraflops"),
    (fmt.teraflops, 82.58e12, "82.6 teraflops"),
    (fmt.teraflops, 10_460e12, "10,500 teraflops"),  # four MI300Xs: three figures said
    (fmt.bandwidth, 3.35e12, "3.35 terabytes a second"),
    (fmt.bandwidth, 2.039e12, "2.04 terabytes a second"),
    (fmt.bandwidth, 0.864e12, "864 gigabytes a second"),
    (fmt.bandwidth, 21.2e12, "21 terabytes a second"),
    (fmt.gigabytes, 16.06e9, "16 gigabytes"),
    (fmt.gigabytes, 2.144e9, "2.1 gigabytes"),
    (fmt.gigabytes, 141.1e9, "141 gigabytes"),
    (fmt.milliseconds, 0.033538, "34 milliseconds"),
    (fmt.milliseconds, 0.004794, "4.8 milliseconds"),
    (fmt.milliseconds, 0.005435, "5.4 milliseconds"),
    (fmt.duration, 0.033538, "34 milliseconds"),
    (fmt.duration, 0.791, "0.8 seconds"),
    (fmt.duration, 0.148, "0.15 seconds"),
    (fmt.duration, 2.51, "2.5 seconds"),
    (fmt.duration, 18.7, "19 seconds"),
    (fmt.duration, 1.02, "1 second"),
    (fmt.seconds, 0.74, "0.74 seconds"),
    (fmt.seconds, 0.3, "0.3 seconds"),
    (fmt.integer, 208.586, "209"),
    (fmt.integer, 295.22, "295"),
    (fmt.integer, 999.4, "999"),        # exact below a thousand: the transcript's 209, 295, 156
    (fmt.integer, 2710.6, "2,700"),     # a narrator's two figures above
    (fmt.integer, 12_461, "12,000"),
    (fmt.integer, 1_196, "1,200"),
    (fmt.tokens_per_second, 12_461, "12,000 tokens a second"),
    (fmt.approx, 2032.1, "2,000"),
    (fmt.round_down, 11_775, "11,000"),
    (fmt.round_down, 2081, "2,000"),
    (fmt.round_down, 16_361, "16,000"),
    (fmt.percent, 0.1282, "13 percent"),
    (fmt.percent, 0.1335, "13 percent"),
    (fmt.fraction, 0.3431, "a third"),
    (fmt.fraction, 0.748, "three quarters"),
    (fmt.fraction, 0.46, "46 percent"),
    (fmt.times, 3.17, "three times"),
    (fmt.times, 1.643, "1.6 times"),
    (fmt.times, 2.354, "2.4 times"),
    (fmt.times, 1.02, "the same"),
    (fmt.times, 2.02, "twice"),
    (fmt.times, 0.5, "half"),
    (fmt.times, 0.33, "a third of"),
    (fmt.times, 0.4237, "0.42 times"),
    (fmt.times, 0.41, "two fifths of"),
    (fmt.times, 3.5, "3.5 times"),
    (fmt.faster, 1.643, "1.6 times faster"),
    (fmt.faster, 2.0, "twice as fast"),
])
def test_spoken_forms(function, value, expected):
    assert function(value) == expected


@pytest.mark.parametrize("function, value, expected", [
    (fmt.teraflops, 989e12, "989 TFLOP/s"),
    (fmt.bandwidth, 3.35e12, "3.35 TB/s"),
    (fmt.bandwidth, 21.2e12, "21.2 TB/s"),
    (fmt.teraflops, 10_460e12, "10,460 TFLOP/s"),
    (fmt.milliseconds, 0.004794, "4.8 ms"),
    (fmt.duration, 0.791, "0.8 s"),
    (fmt.tokens_per_second, 208.6, "209 tokens/s"),
    (fmt.tokens_per_second, 11_775.04, "11,775 tokens/s"),
    (fmt.integer, 2710.6, "2,711"),     # the screen keeps every digit the narration rounds
    (fmt.ops_per_byte, 1169.4, "1,169 ops/byte"),
    (fmt.gigabytes, 16.06e9, "16 GB"),
    (fmt.large, 3.3169e13, "33T"),
    (fmt.bytes_per_token, 131_072, "128 KiB"),
    (fmt.ops_per_byte, 295.2, "295 ops/byte"),
    (fmt.ops_per_byte, 1.0, "1 op/byte"),
    (fmt.percent, 0.128, "13%"),
    (fmt.times, 3.17, "3.2×"),
])
def test_screen_forms(function, value, expected):
    assert function(value, short=True) == expected


def test_quantity_words_and_plurals():
    assert fmt.quantity(1.0, "operation") == "one operation"
    assert fmt.quantity(2.0, "operation") == "two operations"
    assert fmt.quantity(2032, "operation") == "2,000 operations"


def test_articles_come_from_the_data(catalog):
    assert fmt.with_article(catalog.gpu("h100-sxm")) == "an H100"
    assert fmt.with_article(catalog.gpu("b200")) == "a B200"
    assert fmt.possessive(catalog.gpu("rtx-4090")) == "an RTX 4090's"


@pytest.mark.parametrize("seconds, other, said", [
    (0.0336, 0.046, "34"), (0.36, 0.44, "0.36"), (1.0, 1.2, "1"),    # the unit said once, for both
    (0.086, 0.12, "86 milliseconds"), (0.12, 0.086, "0.12 seconds"),  # a unit of its own
])
def test_a_time_said_beside_another_drops_the_unit_they_share(seconds, other, said):
    assert fmt.duration_beside(seconds, other) == said
