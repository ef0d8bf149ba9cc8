"""The `film` command: every stage from the command line (make's targets call it). Each handler reads its
arguments (render/arguments.py holds the tables), builds the stage's typed request, calls one library function and
prints what it returns; the work is in the library.

    plan, roofline, list     the plan stage and the data (no rendering)
    narration                the voice stage: track, subtitles, timed plan
    scene, still, sheet      one beat, one frame, a contact sheet
    film, films              the whole film; many films at once on a Dask cluster
    page, review, studio     the film's page, its review page, the studio that draws each save
    measure, calibrate       a measured dataset from a live endpoint; the share of its ceilings it reaches (a fit)
    load                     the deployment serving a stream of requests, simulated
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from render import logs
from render.arguments import build_parser, request_of
from render.errors import FilmError
from render.files import DATA_DIR, STORYBOARD_PATH, cache_dir, display_path, output_dir, write_atomic
from render.formatting import timestamp as format_timestamp
from render.plan.types import FilmRequest
from render.plan.storyboard import load_storyboard
from render.specs.catalog import load_catalog
from render.text import clean_text, terminal_text

log = logging.getLogger("film")
__all__ = ["main", "build_parser"]

# What the disk or the build folder's permissions can be blamed for (not a closed connection or a taken port).
WRITING_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.configure(logging.INFO if not args.quiet else logging.WARNING)
    try:
        return HANDLERS[args.command](args)
    except FilmError as error:
        print(f"error: {terminal_text(str(error))}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `film list models | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:  # a read-only folder, a full disk, a vanished file: earlier outputs stay as they were
        where = f"{display_path(error.filename)}: " if error.filename else ""
        advice = (" Check that the build folder can be written and its disk has room (make clean frees the build "
                  "folder)" if error.errno in WRITING_ERRORS else "")
        print(f"error: {where}{clean_text(str(error.strerror or error))}; nothing was replaced.{advice}",
              file=sys.stderr)
        return 1
    except MemoryError:
        print("error: out of memory; nothing was replaced", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def say(line: str) -> None:
    print(line, flush=True)


def say_aside(line: str) -> None:
    """Progress beside a command whose standard output is a path another program reads."""
    print(line, file=sys.stderr, flush=True)


def plan_from(args: argparse.Namespace, request: FilmRequest | None = None):
    """The plan the command line asks for (`request`: a matrix's film, with the command line's other settings),
    through the library's film_plan."""
    from render.video.cues import film_plan

    return film_plan(request or request_of(args), args.storyboard)


def choice_of(args: argparse.Namespace):
    """The GPU, model and data type a command names, with the storyboard's defaults."""
    from render.plan.resolve import resolve_choice

    storyboard = load_storyboard(getattr(args, "storyboard", STORYBOARD_PATH))
    choice = resolve_choice(load_catalog(DATA_DIR), storyboard, FilmRequest().with_deployment_of(request_of(args)))
    return choice, storyboard


def out_dir_of(plan, args: argparse.Namespace) -> Path:
    return output_dir(plan.choice.name, plan.choice.is_default, args.build)


def run_plan(args: argparse.Namespace) -> int:
    from render.plan.report import plan_listing

    plan = plan_from(args)
    choice = plan.choice
    log.info("resolved %s for %s, %s, %s (%d beats, %s)", plan.title, choice.gpu.id, choice.model.id,
             choice.dtype.id, len(plan.beats), format_timestamp(plan.duration))
    for note in plan.notes:
        log.info("note: %s", note)
    if args.out:
        write_atomic(args.out, plan.to_json() + "\n")
        log.info("wrote %s", args.out)
    if args.json:
        print(plan.to_json())
    elif not args.out:
        print(plan_listing(plan))
    return 0


def run_roofline(args: argparse.Namespace) -> int:
    from render.plan.report import asked_roofline, roofline_table

    choice, storyboard = choice_of(args)
    report = asked_roofline(choice.deployment, args.prompt or storyboard.parameters.prompt_tokens, args.batch,
                            args.context)
    print(json.dumps(report.as_data(), indent=2) if args.json else
          roofline_table(choice.label, choice.deployment, report))
    return 0


def run_narration(args: argparse.Namespace) -> int:
    from render.voice.narration import fit_table, make_narration

    plan = plan_from(args)
    log.info("narrating %s for %s with %s", plan.title, plan.choice.name, plan.narration.voice)
    result = make_narration(plan, out_dir_of(plan, args), cache_dir(args.build))
    print(fit_table(result.plan))
    print(result.cache_line)
    print(f"wrote {display_path(result.track)} ({plan.duration:.3f} s), {display_path(result.srt)}, "
          f"{display_path(result.vtt)}, {display_path(result.timed_plan_path)} in {result.seconds:.1f} s")
    return 0


def run_render(args: argparse.Namespace) -> int:
    """scene, still and sheet: resolve, narrate (cached), then render from the timed plan."""
    from render.video import beats, runner

    beats.quality(args.quality)  # an unknown quality fails before anything is done
    plan = plan_from(args)
    path = runner.render_asked(plan, args.command, getattr(args, "beat", None), getattr(args, "at", None),
                               args.quality, out_dir_of(plan, args), cache_dir(args.build))
    print(display_path(path))
    return 0


def published(made):
    """A made film's publishing kit and page, beside it."""
    from render.publish.kit import write_kit
    from render.publish.page import write_page

    return write_kit(made.plan, made.poster, made.film.parent), write_page(made.plan, made.film, say_aside)


def run_film(args: argparse.Namespace) -> int:
    from render.video import beats
    from render.video.scheduler import make_film

    beats.quality(args.quality)
    plan = plan_from(args)
    log.info("making %s for %s at %s quality", plan.title, plan.choice.name, args.quality)
    result = make_film(plan, args.quality, args.build, args.jobs, say=say)
    kit, page = published(result)
    print(f"subtitles: {display_path(result.srt)}, {display_path(result.vtt)}; poster: {display_path(result.poster)}")
    print(f"publishing: {display_path(kit.description)}, {display_path(kit.transcript)}, "
          f"{display_path(kit.thumbnail)}, {display_path(page)}")
    print(f"duration {result.duration:.3f} s; made in {result.seconds:.1f} s "
          f"({len(result.rendered)} beats rendered, {len(result.reused)} reused)")
    print(display_path(result.film))
    return 0


def run_films(args: argparse.Namespace) -> int:
    from render.cluster.films import make_films
    from render.cluster.variants import films_asked
    from render.video import beats

    beats.quality(args.quality)
    around = request_of(args)
    plans = films_asked(args.variants, args.matrix, around, load_storyboard(args.storyboard),
                        lambda variant: plan_from(args, around.with_deployment_of(variant)), say)
    result = make_films(plans, args.quality, args.build, args.scheduler, args.jobs, say=say, on_film=published)
    print(result.table())
    return 1 if result.failed else 0


def run_page(args: argparse.Namespace) -> int:
    """The publishable page of the film already made for this choice (the film, else its preview)."""
    from render.publish.page import page_of_film

    plan = plan_from(args)
    print(display_path(page_of_film(plan, out_dir_of(plan, args), request_of(args), args.build, say_aside)))
    return 0


def run_review(args: argparse.Namespace) -> int:
    """The review page of the film already made for this choice (the film, else its preview)."""
    from render.publish.review import review_film

    plan = plan_from(args)
    print(display_path(review_film(plan, out_dir_of(plan, args), request_of(args), args.build, say_aside)))
    return 0


def run_studio(args: argparse.Namespace) -> int:
    """`make studio`: see render/studio/."""
    from render.studio.server import open_studio
    from render.video import beats

    beats.quality(args.quality)
    plan = plan_from(args)  # a bad choice or storyboard at the start is refused as make film refuses it
    if args.beat is not None:
        plan.beat(args.beat)
    return open_studio(plan, lambda asked: plan_from(args, replace(request_of(args), **asked) if asked else None),
                       args.build, args.quality, args.beat, args.port, Path(args.storyboard))


def run_measure(args: argparse.Namespace) -> int:
    from render.tools import measuring

    if args.load:
        from render.serving.workload import parse_lengths

        prompt = parse_lengths(args.prompt_tokens, "--prompt-tokens")
        measuring.measure_load_endpoint(measuring.LoadMeasureRequest(
            base_url=args.base_url, model=args.model, api_key_env=args.api_key_env, timeout=args.timeout,
            rate=args.rate, requests=args.requests, prompt=prompt,
            answer=parse_lengths(args.answer_tokens, "--answer-tokens"), seed=args.seed, max_seconds=args.max_seconds,
            out=args.out), say=say)
        return 0
    measuring.measure_endpoint(measuring.MeasureRequest.checked(
        args.prompt_tokens, args.concurrency, base_url=args.base_url, model=args.model, api_key_env=args.api_key_env,
        runs=args.runs, max_tokens=args.max_tokens, max_requests=args.max_requests, timeout=args.timeout,
        warm_prefix=args.warm_prefix, label=args.label, provider=args.provider, out=args.out,
        request=FilmRequest(gpu=args.compared_gpu, model=args.as_model, dtype=args.precision)), say=say)
    return 0


def run_load(args: argparse.Namespace) -> int:
    from render.plan.resolve import efficiency_of
    from render.serving.metrics import parse_slo
    from render.serving.workload import check_rate, parse_lengths
    from render.tools import load

    choice, storyboard = choice_of(args)
    efficiency = (efficiency_of(load_catalog(DATA_DIR), args.efficiency, storyboard.parameters.embedding_rows)
                  if args.efficiency else None)
    prompt = parse_lengths(args.prompt_tokens or str(storyboard.parameters.prompt_tokens), "--prompt-tokens")
    answer = parse_lengths(args.answer_tokens, "--answer-tokens")
    if args.rate is not None:
        check_rate(args.rate)
    if args.trace is not None and args.rate is not None:
        raise FilmError(f"--rate {args.rate:g} with --trace: a trace's arrivals are its own (film load reports its "
                        f"mean rate); give one or the other")
    if args.compare is not None and (args.sweep or args.trace is not None):
        raise FilmError(f"--compare with --{'sweep' if args.sweep else 'trace'}: --compare replays the load dataset's "
                        f"own arrivals at its own rate; give --compare alone (with --scheduler, one or several)")
    if args.trace is not None and args.sweep:
        raise FilmError("--sweep with --trace: a sweep draws Poisson arrivals at each rate, a trace has its own; give "
                        "one or the other")
    settings = load.SchedulerSettings(args.max_num_seqs, args.batch, args.max_wait, args.max_num_batched_tokens,
                                      args.prefill_gpus, args.decode_gpus)
    schedulers = load.schedulers_named(args.scheduler, bool(args.sweep), settings, choice.deployment)
    request = load.LoadRequest(choice.deployment, schedulers, args.rate, args.requests, prompt, answer, args.seed,
                               args.trace, parse_slo(args.slo) if args.slo else None, efficiency,
                               kv_tokens=args.kv_tokens, block_tokens=args.block_size or load.BLOCK_TOKENS,
                               watch=load.watch_for(args.requests, answer, schedulers, args.trace, say_aside))
    if args.seeds > 1 and not args.sweep:
        raise FilmError(f"--seeds {args.seeds}: the spread over seeds is of a sweep's capacities; give --sweep too")
    print(load.load_answer(request, args.sweep, args.compare, args.json, args.build / "load", args.seeds))
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from render.specs.calibration import calibrate, deployment_of
    from render.tools.calibrate import report

    catalog = load_catalog(DATA_DIR)
    dataset = catalog.measured(args.measured)
    deployment = deployment_of(dataset, catalog, args.gpu, args.gpus, load_storyboard().parameters.embedding_rows)
    print(report(calibrate(dataset, deployment)))
    return 0


def run_model_import(args: argparse.Namespace) -> int:
    """Append the config's entry to data/models.yaml (atomically, after checking it loads)."""
    from render.specs.hf_config import add_model, model_entry_yaml, model_from_file, parameter_summary

    model = model_from_file(args.config, args.id, args.name)
    if args.print:
        print(model_entry_yaml(model), end="")
        return 0
    add_model(args.models, model)
    print(f"added {model.id} ({model.name}: {parameter_summary(model)}) to {display_path(args.models)}; "
          f"render it with make film MODEL={model.id}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from render.specs.listing import catalog_table

    print(catalog_table(load_catalog(DATA_DIR), args.what))
    return 0


def run_check_choices(args: argparse.Namespace) -> int:
    from render.tools import check_choices as checks

    results = checks.check_choices(args.gpus or checks.GPU_COUNTS, args.cache, args.jobs, sample=args.sample,
                                   layout=args.layout, efficiency=args.efficiency, cut=args.cut, stress=args.stress)
    write_atomic(args.out, checks.table(results))
    text, failed = checks.summary(results)
    print(text)
    print(f"wrote {args.out}")
    return 1 if failed else 0


def run_goldens(args: argparse.Namespace) -> int:
    from render.tools.goldens import make_goldens

    written = make_goldens(args.out)
    print(f"wrote {len(written)} stills to {display_path(written[0].parent)}; look at the ones git shows as changed "
          f"before committing")
    return 0


def run_bench(args: argparse.Namespace) -> int:
    from render.tools import bench

    results = bench.run(args.qualities.split(","), args.build)
    write_atomic(args.out, json.dumps(results, indent=2) + "\n")
    print(bench.table(results))
    print(f"wrote {args.out}")
    return 0


HANDLERS = {"plan": run_plan, "roofline": run_roofline, "narration": run_narration, "scene": run_render,
            "still": run_render, "sheet": run_render, "film": run_film, "films": run_films, "page": run_page,
            "review": run_review, "studio": run_studio, "measure": run_measure, "load": run_load,
            "calibrate": run_calibrate, "model": run_model_import, "list": run_list,
            "check-choices": run_check_choices, "goldens": run_goldens, "bench": run_bench}


if __name__ == "__main__":
    sys.exit(main())
