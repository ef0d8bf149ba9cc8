"""After the film: what goes out beside it.

    kit.py       the publishing kit: description, chapters, transcript, thumbnail
    page.py      make page: the film's publishable page, its maths a reader can move
    review.py    make review: the page to check a finished film, every still and every number's source
    web.py       what the pages share: templates, palette and font, the beats as they list them
    explain.py   a number's row (meaning, formula, inputs, sources) and a measured fit, in words
    mathfont.py  the sans maths face the page's formulas are set in, cut to the glyphs they use
    under_load.py  the page's Under load section: every stop of its controls, simulated at page build
    load_chart.py  film load --sweep's chart of p90 TTFT and TPOT against the rate, PNG and SVG
"""
