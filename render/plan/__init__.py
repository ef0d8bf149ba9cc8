"""Stage 2, the plan: data/, script/storyboard.yaml and script/page.yaml resolved into one typed plan.

    types.py       the typed plan (frozen dataclasses): what every later stage reads
    codec.py       the plan to JSON and back (film plan --json, build/timed-plan.json)
    beat_scene.py  which scene class draws a beat: the one its id names
    storyboard.py  reads and validates script/storyboard.yaml
    prose.py       reads script/page.yaml, the film's page in words, and fills it from the plan
    templating.py  the narration templates: sandboxed Jinja2 over the plan and the formatter
    phrases.py     the storyboard's choices of words, named: filters where the words depend on the numbers
    tracking.py    which plan values a template or a scene reads (a beat's cache key, the review page)
    numbers.py     every number of the film, from the roofline
    load.py        the extended cut's `load` group: the deployment under a stream of requests (render/serving/)
    meaning.py     what each number means, its formula and unit, written once
    explorer.py    the numbers a reader of the film's page can move, at every stop of every control
    report.py      film roofline: a deployment's spec sheet and each phase's timing
    resolve.py     the resolve step: storyboard + data + a choice -> Plan
"""
