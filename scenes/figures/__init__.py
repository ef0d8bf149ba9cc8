"""The film's recurring objects, each drawn by exactly one builder so it looks the same in every beat, in a module
by what it draws (a beat imports only the modules it uses, so its cache key holds only those):

    text.py      words and formulas: get_text, get_title (and retitle), captions, pills, get_formula and its terms,
                 the measured numbers' provenance; slide_clear_of and inside_safe_area
    chip.py      the GPU (Chip), the weights wall (WeightsWall, wall_label) and the KV cache (KVStack)
    counters.py  numbers that move and what carries them: Counter (CountTo), Labelled, Bar, BudgetCard (Lever), blend
    charts.py    log-log charts: LogChart and the roofline (RooflineChart)
"""
