# Prefill vs decode: the film, from data.
#   make film    set up whatever is missing, then render the film into build/film.mp4
#   make preview the same film at 480p15, into build/preview/
#   make test    set up whatever is missing, then run the test suite
# Choices: make plan GPU=a100-sxm-80gb MODEL=llama-3.1-70b DTYPE=int8 [COMPARE_GPU=…] [MEASURED=…]
#          make narration [GPU=… MODEL=… DTYPE=…] [VOICE=hibari|piper|recorded] [RECORDINGS=dir]
#          make scene BEAT=prefill [QUALITY=low|medium|high]   make still BEAT=prefill AT=5.5   make sheet

PYTHON ?= python3
VENV   := .venv
FILM   := $(VENV)/bin/film
BUILD  := build

CHOICES := $(if $(GPU),--gpu $(GPU)) $(if $(MODEL),--model $(MODEL)) $(if $(DTYPE),--dtype $(DTYPE))
PLAN_CHOICES := $(CHOICES) $(if $(COMPARE_GPU),--compare-gpu $(COMPARE_GPU)) $(if $(MEASURED),--measured $(MEASURED))
VOICE_CHOICES := $(PLAN_CHOICES) $(if $(VOICE),--voice $(VOICE)) $(if $(RECORDINGS),--recordings $(RECORDINGS))

QUALITY ?= low
RENDER_CHOICES := $(VOICE_CHOICES) --quality $(QUALITY)

.PHONY: setup setup-film test plan roofline narration scene still sheet film preview bench clean

setup:
	@$(PYTHON) render/tools/bootstrap.py test

setup-film:
	@$(PYTHON) render/tools/bootstrap.py film

test: setup
	@$(VENV)/bin/python -m pytest

plan: setup
	@$(FILM) plan --json $(PLAN_CHOICES)

roofline: setup
	@$(FILM) roofline $(CHOICES)

narration: setup
	@$(FILM) narration $(VOICE_CHOICES)

scene: setup-film
	@test -n "$(BEAT)" || { echo "make scene: say which beat, e.g. make scene BEAT=prefill (film plan lists them)" >&2; exit 2; }
	@$(FILM) scene --beat $(BEAT) $(RENDER_CHOICES)

still: setup-film
	@test -n "$(BEAT)" -a -n "$(AT)" || { echo "make still: say which beat and when, e.g. make still BEAT=prefill AT=5.5" >&2; exit 2; }
	@$(FILM) still --beat $(BEAT) --at $(AT) $(RENDER_CHOICES)

sheet: setup-film
	@$(FILM) sheet $(RENDER_CHOICES)

FILM_CHOICES := $(VOICE_CHOICES) $(if $(JOBS),--jobs $(JOBS))

film: setup-film
	@$(FILM) film $(FILM_CHOICES) --quality $(if $(filter command line,$(origin QUALITY)),$(QUALITY),high)

preview: setup-film
	@$(FILM) film $(FILM_CHOICES) --quality low

bench: setup-film
	@$(VENV)/bin/python -m render.tools.bench

clean:
	rm -rf $(BUILD)
