"""Stage 1, specs and maths: what the GPUs, models and data types in data/ are, and the roofline.

    yamlio.py          YAML that remembers line numbers; the field checks every data file shares
    fields.py          what a data file may hold, beside each dataclass field (ranges, units, choices); pure
    schema.py          a data file's entry checked against those fields and read as its dataclass
    types.py           Gpu, Model, DataType: the spec sheets as frozen dataclasses, each field's range beside it
    architecture.py    a transformer's parameters counted from its architecture, and those a token uses
    hf_config.py       a Hugging Face config.json on disk -> a model entry
    catalog.py         loads and validates data/ (and data/measured/: MeasuredDataset)
    pronunciations.py  written forms -> spoken forms, from data/pronunciations.yaml
    roofline.py        pure maths: every number the film shows, from the specs alone
    calibration.py     what a deployment achieves, fitted from its measured timings
    fitting.py         weighted least squares over a few figures, each by its written precision
    listing.py         film list: the catalog's entries as a table
"""
