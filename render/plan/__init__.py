"""Stage 2, the plan: data/ and script/storyboard.yaml resolved into one typed plan.

    types.py       the typed plan (frozen dataclasses): what every later stage reads
    codec.py       the plan to JSON and back (film plan --json, build/timed-plan.json)
    registry.py    the beats a film can have and the scene class that draws each
    storyboard.py  reads and validates script/storyboard.yaml
    templating.py  the narration templates: sandboxed Jinja2 over the plan and the formatter
    numbers.py     every number of the film, from the roofline
    resolve.py     the resolve step: storyboard + data + a choice -> Plan
"""
