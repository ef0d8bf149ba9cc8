# Prefill vs decode: the film, from data.
#   make film    set up whatever is missing, then render the film into build/film.mp4
#   make preview the same film at 480p15, into build/preview/
#   CUT=extended on film, preview, page, films (and plan, scene, still, review, studio): the film goes on, after
#                "The cache rides along", to a server under load: build/<gpu>-<model>-<dtype>-extended/
#   make films   many films at once on a Dask cluster: VARIANTS="h100-sxm/llama-3.1-8b/bf16 …" or
#                MATRIX=all|gpus|models [SCHEDULER=tcp://host:8786] [QUALITY=low] (docs/many-films.md)
#   make studio  a page on 127.0.0.1 that draws each beat again as the storyboard, data/ or scenes/ are saved
#                [BEAT=prefill] [QUALITY=low] [PORT=…] (docs/publishing.md)
#   make review  a page to check the film in a browser: build/…/review/index.html
#   make page    the film's publishable page, its maths a reader can move: build/…/page/index.html (make film writes it too)
#   make test    set up whatever is missing, then run the test suite
#   make mutants planted bugs (tests/mutants.yaml) the suite must catch, each in a copy: which were caught
#   make check-choices  every GPU × model × data type × GPU count narrated: build/check-choices.tsv
#                STRESS=1: only the choices that stress the layout, each beat of each linted (make test lints four)
#   make calibrate MEASURED=id [GPU=… GPUS=…]  what share of its ceilings a measured endpoint reaches (a fit)
#   make load    the deployment under a stream of requests, simulated: [RATE=10] [SCHEDULER=chunked] [SLO=ttft=0.5,tpot=0.05]
#                [PROMPT_TOKENS=2000~500 ANSWER_TOKENS=200 REQUESTS=1000 SEED=0 TRACE=file] [SWEEP=auto|1:40:20]
# Choices: make plan GPU=a100-sxm-80gb MODEL=llama-3.1-70b DTYPE=int8 [COMPARE_GPU=…] [MEASURED=…]
#          GPUS=4 (tensor parallelism), KV_DTYPE=fp8 (the KV cache's format), MODEL=path/to/config.json
#          EFFICIENCY=dataset-id or EFFICIENCY=compute=0.6,memory=0.8: expected numbers beside the ceilings
#          make narration [GPU=… MODEL=… DTYPE=…] [VOICE=hibari|piper|recorded] [RECORDINGS=dir]
#          make scene BEAT=prefill [QUALITY=low|medium|high]   make still BEAT=prefill AT=5.5   make sheet
#
# The choices never become shell code: make exports variables given on its command line to the
# recipes' environment, and the recipes pass them on as quoted arguments ("$$GPU"), so a value
# holding ; $( ) ` or quotes reaches the film command as text, which refuses what it does not know.

# A $ in a value is make syntax: make would expand it before any program saw the value, so a
# choice holding one is refused here rather than silently changed.
CHOICE_VARIABLES := GPU GPUS MODEL DTYPE KV_DTYPE CUT COMPARE_GPU MEASURED EFFICIENCY VOICE RECORDINGS BEAT AT QUALITY JOBS PYTHON \
  VARIANTS MATRIX SCHEDULER PORT RATE PROMPT_TOKENS ANSWER_TOKENS REQUESTS SEED TRACE SLO SWEEP STRESS
$(foreach variable,$(CHOICE_VARIABLES),$(if $(findstring $$,$(value $(variable))),\
  $(error $(variable)= contains '$$', which make would expand; give ids, numbers and paths without it)))

export PYTHON ?= python3
VENV := .venv
FILM := $(VENV)/bin/film

# One optional argument: --flag "$VALUE" when the variable is set and not empty.
arg = $${$(1):+--$(2) "$$$(1)"}

CHOICES := $(call arg,GPU,gpu) $(call arg,GPUS,gpus) $(call arg,MODEL,model) $(call arg,DTYPE,dtype) \
  $(call arg,KV_DTYPE,kv-dtype)
PLAN_CHOICES := $(CHOICES) $(call arg,COMPARE_GPU,compare-gpu) $(call arg,MEASURED,measured) \
  $(call arg,EFFICIENCY,efficiency) $(call arg,CUT,cut)
VOICE_CHOICES := $(PLAN_CHOICES) $(call arg,VOICE,voice) $(call arg,RECORDINGS,recordings)
FILM_CHOICES := $(VOICE_CHOICES) $(call arg,JOBS,jobs)
FILMS_CHOICES := $(FILM_CHOICES) $(call arg,VARIANTS,variants) $(call arg,MATRIX,matrix) $(call arg,SCHEDULER,scheduler)

.PHONY: mutants setup setup-film test plan roofline calibrate load narration scene still sheet film films preview studio review page bench goldens \
  check-choices clean

setup:
	@"$$PYTHON" render/tools/bootstrap.py test

setup-film:
	@"$$PYTHON" render/tools/bootstrap.py film

# The linter (ruff, configured in pyproject.toml), then two test processes (pytest-xdist), a test file each at a
# time, so a file's shared renders are made once. TEST_ORDER_SEED=N runs the files in an order drawn from N.
TEST_WORKERS ?= 2
test:
	@"$$PYTHON" render/tools/bootstrap.py test
	@$(VENV)/bin/ruff check render scenes tests
	@$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile

# Planted bugs (tests/mutants.yaml), each in a copy of the project, each against the tests that should catch it.
mutants: setup
	@$(VENV)/bin/python -m render.tools.mutants

plan: setup
	@$(FILM) plan --json $(PLAN_CHOICES)

roofline: setup
	@$(FILM) roofline $(CHOICES)

calibrate: setup
	@test -n "$$MEASURED" || { echo "make calibrate: say which dataset, e.g. make calibrate MEASURED=openrouter-coreweave-llama-3.1-8b-bf16 (film list measured)" >&2; exit 2; }
	@$(FILM) calibrate --measured "$$MEASURED" $(call arg,GPU,gpu) $(call arg,GPUS,gpus)

LOAD_CHOICES := $(CHOICES) $(call arg,EFFICIENCY,efficiency) $(call arg,RATE,rate) \
  $(call arg,PROMPT_TOKENS,prompt-tokens) $(call arg,ANSWER_TOKENS,answer-tokens) $(call arg,REQUESTS,requests) \
  $(call arg,SEED,seed) $(call arg,TRACE,trace) $(call arg,SCHEDULER,scheduler) $(call arg,SLO,slo) \
  $(call arg,SWEEP,sweep)

load: setup
	@$(FILM) load $(LOAD_CHOICES)

narration: setup
	@$(FILM) narration $(VOICE_CHOICES)

scene: setup-film
	@test -n "$$BEAT" || { echo "make scene: say which beat, e.g. make scene BEAT=prefill (film plan lists them)" >&2; exit 2; }
	@$(FILM) scene --beat "$$BEAT" --quality "$${QUALITY:-low}" $(VOICE_CHOICES)

still: setup-film
	@test -n "$$BEAT" -a -n "$$AT" || { echo "make still: say which beat and when, e.g. make still BEAT=prefill AT=5.5" >&2; exit 2; }
	@$(FILM) still --beat "$$BEAT" --at "$$AT" --quality "$${QUALITY:-low}" $(VOICE_CHOICES)

sheet: setup-film
	@$(FILM) sheet --quality "$${QUALITY:-low}" $(VOICE_CHOICES)

film: setup-film
	@$(FILM) film --quality "$${QUALITY:-high}" $(FILM_CHOICES)

films: setup-film
	@$(FILM) films --quality "$${QUALITY:-high}" $(FILMS_CHOICES)

preview: setup-film
	@$(FILM) film --quality low $(FILM_CHOICES)

studio: setup-film
	@$(FILM) studio $(VOICE_CHOICES) $(call arg,BEAT,beat) $(call arg,QUALITY,quality) $(call arg,PORT,port)

review: setup-film
	@$(FILM) review $(VOICE_CHOICES)

page: setup-film
	@$(FILM) page $(VOICE_CHOICES)

bench: setup-film
	@$(FILM) --quiet bench

goldens: setup-film
	@$(FILM) goldens

# Every GPU x model x data type x GPU count (GPUS=1,2,4,8) narrated: which fit, and each one's tightest slot
# (CUT=extended: its film of that cut).
check-choices: setup
	@$(FILM) check-choices $(call arg,GPUS,gpus) $(call arg,EFFICIENCY,efficiency) $(call arg,CUT,cut) \
	  $${STRESS:+--stress --layout}

clean:
	rm -rf build
