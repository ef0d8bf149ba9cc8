"""The `film` command: every stage from the command line (make's targets call it).

    plan, roofline, list     the plan stage and the data (no rendering)
    narration                the voice stage: track, subtitles, timed plan
    scene, still, sheet      one beat, one frame, a contact sheet
    film                     the whole film
    films                    many films at once on a Dask cluster
    measure                  a measured dataset from a live endpoint
    calibrate                what share of its ceilings a measured endpoint reaches (a fit)
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import math
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from render import __version__, formatting as fmt
from render import logs
from render.errors import FilmError
from render.files import BUILD_DIR, DATA_DIR, STORYBOARD_PATH, cache_dir, output_dir, write_atomic
from render.formatting import timestamp as format_timestamp
from render.plan.beat_scene import scene_of
from render.plan.report import roofline_report, roofline_table
from render.plan.resolve import resolve_choice
from render.plan.types import FilmRequest
from render.plan.storyboard import load_storyboard
from render.specs import roofline as rl
from render.specs.catalog import DATASET_NAME, load_catalog
from render.publish.kit import write_kit
from render.specs.yamlio import display_path
from render.text import NAME_LENGTH, clean_text, control_characters, terminal_text, echo

log = logging.getLogger("film")


# What the disk or the build folder's permissions can be blamed for (not a closed connection or a taken port).
WRITING_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO, errno.EFBIG}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logs.configure(logging.INFO if not args.quiet else logging.WARNING)
    try:
        return args.run(args)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="film", description="Render the 'Prefill vs decode' film from data.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_film_commands(commands)
    add_data_commands(commands)
    add_check_commands(commands)
    return parser


def add_film_commands(commands) -> None:
    """What makes a film and looks at it: the plan, the roofline, the narration, a beat, the film, many films, its
    pages and the studio."""
    plan = commands.add_parser("plan", help="resolve the storyboard into the plan (every number and line)")
    add_plan_arguments(plan, voice=False, build=False)
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--out", type=Path, help="also write the JSON plan to this file (atomically)")
    plan.set_defaults(run=run_plan)

    roof = commands.add_parser("roofline", help="print the roofline numbers for a GPU and model")
    add_choice_arguments(roof)
    roof.add_argument("--prompt", type=positive_int, help="prefill prompt length in tokens (default: the storyboard's)")
    roof.add_argument("--batch", type=positive_int, default=1, help="decode batch size (default: %(default)s)")
    roof.add_argument("--context", type=non_negative_int, default=0,
                      help="cached tokens each sequence rereads per decode step (default: %(default)s)")
    roof.add_argument("--json", action="store_true", help="print the numbers as JSON")
    roof.set_defaults(run=run_roofline)

    narration = commands.add_parser("narration", help="voice the narration: track, subtitles and timed plan")
    add_plan_arguments(narration)
    narration.set_defaults(run=run_narration)

    for name, help_text in (("scene", "render one beat with its narration to build/beats/<beat>.mp4"),
                            ("still", "render one frame of a beat to build/stills/<beat>@<seconds>.png"),
                            ("sheet", "render a contact sheet of every beat to build/sheet.png")):
        command = commands.add_parser(name, help=help_text)
        add_plan_arguments(command)
        command.add_argument("--quality", default="low", help="tiny, low (480p15), medium (720p30) or high (1080p60)")
        if name != "sheet":
            command.add_argument("--beat", required=True, help="beat id (film plan lists them)")
        if name == "still":
            command.add_argument("--at", type=seconds_into_beat, required=True, help="seconds into the beat")
        command.set_defaults(run=run_render)

    film = commands.add_parser("film", help="render the whole film into build/ (or build/<gpu>-<model>-<dtype>/)")
    add_plan_arguments(film)
    film.add_argument("--quality", default="high", help="high (1080p60, the film) or low/medium/tiny (a preview)")
    film.add_argument("--jobs", type=whole_number(1, 256), help="beats rendered at once (default: the number of cores)")
    film.set_defaults(run=run_film)

    films = commands.add_parser("films", help="render many films at once on a Dask cluster, each shared beat once")
    add_plan_arguments(films)
    films.add_argument("--variants", help="the films, as GPU/MODEL/DTYPE[/gpus=N][/kv=X] separated by spaces")
    films.add_argument("--matrix", help="all (every choice that fits), gpus or models (one axis around the choice)")
    films.add_argument("--scheduler", help="an existing Dask cluster's scheduler, tcp://HOST:PORT "
                                           "(default: a local cluster on this machine)")
    films.add_argument("--quality", default="high", help="high (1080p60, the film) or low/medium/tiny (previews)")
    films.add_argument("--jobs", type=whole_number(1, 256),
                       help="the local cluster's workers (default: the number of cores)")
    films.set_defaults(run=run_films)

    page = commands.add_parser("page", help="write the publishable page of the film made for this choice")
    add_plan_arguments(page)
    page.set_defaults(run=run_page)

    review = commands.add_parser("review", help="write the review page of the film made for this choice")
    add_plan_arguments(review)
    review.set_defaults(run=run_review)

    studio = commands.add_parser("studio", help="a page on 127.0.0.1 that draws each beat again as its files are saved")
    add_plan_arguments(studio)
    studio.add_argument("--beat", help="show and draw this beat only")
    studio.add_argument("--quality", default="low", help="its stills' and clips' quality (default: %(default)s)")
    studio.add_argument("--port", type=whole_number(0, 65535), default=0,
                        help="the port on 127.0.0.1 (default: a free one, printed)")
    studio.set_defaults(run=run_studio)


def add_data_commands(commands) -> None:
    """What reads and writes data/: measuring an endpoint, fitting a dataset, importing a model, listing the catalog."""
    measure = commands.add_parser("measure", help="measure TTFT and decode speed of an OpenAI-compatible endpoint")
    measure.add_argument("--base-url", required=True, help="the API's base URL, e.g. http://localhost:8000/v1")
    measure.add_argument("--model", required=True, help="the model name the endpoint serves")
    measure.add_argument("--api-key-env", help="environment variable holding the API key (never printed)")
    measure.add_argument("--prompt-tokens", default="34,2081,16361", help="prompt lengths (default: %(default)s)")
    measure.add_argument("--max-tokens", type=whole_number(1, 100_000), default=256,
                         help="tokens to generate (default: %(default)s)")
    measure.add_argument("--runs", type=whole_number(1, 100), default=5,
                         help="runs per prompt length (default: %(default)s)")
    measure.add_argument("--concurrency", default="1",
                         help="streams at once, a level per run of each length, e.g. 1,8,32 (default: %(default)s)")
    measure.add_argument("--warm-prefix", action="store_true",
                         help="measure cached prompts: one prompt per length, sent once before its runs "
                              "(default: cold prompts that no cache can serve)")
    measure.add_argument("--label", help="what this is, e.g. 'CoreWeave, BF16'")
    measure.add_argument("--provider", help="who serves it (default: the label, or the host)")
    measure.add_argument("--as-model",
                         help="the catalog model it runs, for the ideal times (default: the storyboard's)")
    measure.add_argument("--precision", help="its data type, a catalog id (default: the storyboard's)")
    measure.add_argument("--compared-gpu", help="the GPU its timings are compared with (default: the storyboard's)")
    measure.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default: %(default)s)")
    measure.add_argument("--max-requests", type=whole_number(1, 100_000), default=300,
                         help="cap on requests (default: %(default)s)")
    measure.add_argument("--out", type=Path, required=True, help="the dataset to write, e.g. data/measured/mine.yaml")
    measure.add_argument("--load", action="store_true",
                         help="an open-loop stream instead: Poisson arrivals at --rate, every request timed, written "
                              "as a load dataset for film load --compare (--prompt-tokens is then one length, or "
                              "mean~spread)")
    measure.add_argument("--rate", type=float, default=1.0, help="--load: requests a second (default: %(default)s)")
    measure.add_argument("--requests", type=whole_number(1, 100_000), default=100,
                         help="--load: requests to send (default: %(default)s)")
    measure.add_argument("--answer-tokens", default="64", help="--load: answer length, or mean~spread (default: "
                                                               "%(default)s)")
    measure.add_argument("--seed", type=whole_number(0, 2**32 - 1), default=0, help="--load: the arrivals' seed")
    measure.add_argument("--max-seconds", type=float, default=600.0,
                         help="--load: no request is sent after this many seconds (default: %(default)s)")
    measure.set_defaults(run=run_measure)

    calibrate = commands.add_parser("calibrate", help="fit a measured dataset: the overhead, and the share of peak "
                                                      "arithmetic and bandwidth it reaches")
    calibrate.add_argument("--measured", required=True, help="a dataset in data/measured/ (film list measured)")
    calibrate.add_argument("--gpu", help="the GPU to fit against (default: the one the dataset is compared with)")
    calibrate.add_argument("--gpus", type=whole_number(1, rl.LARGEST_GPU_COUNT), default=1,
                           help="how many of it (default: %(default)s)")
    calibrate.set_defaults(run=run_calibrate)

    model = commands.add_parser("model", help="models: import a Hugging Face config.json into data/models.yaml")
    model_commands = model.add_subparsers(dest="model_command", required=True, metavar="ACTION")
    importing = model_commands.add_parser("import", help="count a config.json's parameters and add it as a model")
    importing.add_argument("config", type=Path, help="a Hugging Face config.json on disk (or its folder)")
    importing.add_argument("--id", help="the model's id (default: from the config's name or folder)")
    importing.add_argument("--name", help="how it is written on screen (default: from the id)")
    importing.add_argument("--print", action="store_true", help="print the entry instead of adding it")
    importing.add_argument("--models", type=Path, default=DATA_DIR / "models.yaml", help=argparse.SUPPRESS)
    importing.set_defaults(run=run_model_import)

    add_load_command(commands)

    listing = commands.add_parser("list", help="list the known GPUs, models, data types or measured datasets")
    listing.add_argument("what", choices=("gpus", "models", "dtypes", "measured"))
    listing.set_defaults(run=run_list)


def add_load_command(commands) -> None:
    load = commands.add_parser("load", help="simulate the deployment serving a stream of requests: latency "
                                            "percentiles, throughput, goodput, and each scheduler's capacity")
    add_choice_arguments(load)
    load.add_argument("--efficiency", help="EFFICIENCY=: a measured dataset's id, or compute=…,memory=…[,overhead=…] "
                                           "(default: the ceilings)")
    load.add_argument("--rate", type=float, help="Poisson arrivals, requests a second (default: half the "
                                                 "deployment's saturation)")
    load.add_argument("--prompt-tokens", default=None,
                      help="prompt length: fixed (2000) or a log-normal's mean~spread (2000~500); default: the "
                           "storyboard's prompt")
    load.add_argument("--answer-tokens", default="200", help="answer length, as --prompt-tokens (default: %(default)s)")
    load.add_argument("--requests", type=whole_number(1, 1_000_000), default=1000,
                      help="requests in the workload (default: %(default)s)")
    load.add_argument("--seed", type=whole_number(0, 2**32 - 1), default=0, help="the workload's seed")
    load.add_argument("--trace", type=Path, help="a trace instead: CSV or JSON lines of arrival_seconds, "
                                                 "prompt_tokens, answer_tokens")
    load.add_argument("--scheduler", help="static, continuous, chunked or disaggregated, or several with commas "
                                          "(default: continuous; a sweep compares all four)")
    load.add_argument("--max-seqs", type=whole_number(1, 4096), default=256, help="sequences decoding at once")
    load.add_argument("--batch", type=whole_number(1, 4096), default=8, help="static batching's batch")
    load.add_argument("--max-wait", type=float, default=0.5, help="static batching: seconds before a short batch")
    load.add_argument("--chunk-tokens", type=whole_number(16, 1_000_000), default=512,
                      help="chunked prefill's tokens a step (default: %(default)s)")
    load.add_argument("--prefill-gpus", type=whole_number(1, 64), help="disaggregation: GPUs for prefill "
                                                                       "(default: the deployment's)")
    load.add_argument("--decode-gpus", type=whole_number(1, 64), help="disaggregation: GPUs for decode "
                                                                      "(default: the deployment's)")
    load.add_argument("--slo", help="objectives for goodput and capacity, e.g. ttft=0.5,tpot=0.05")
    load.add_argument("--sweep", nargs="?", const="auto", help="rates to sweep: LOW:HIGH[:COUNT], a list 1,2,4, or "
                                                               "none for 20 up to past saturation")
    load.add_argument("--compare", type=Path, help="a load dataset (film measure --load): its arrivals and lengths "
                                                   "replayed, predicted beside measured")
    load.add_argument("--kv-tokens", type=whole_number(16, 10**9), help="the KV cache's capacity in tokens, as the "
                                                                          "real server holds it (default: from memory)")
    load.add_argument("--json", action="store_true", help="print the figures as JSON")
    load.add_argument("--build", type=Path, default=BUILD_DIR, help=argparse.SUPPRESS)
    load.set_defaults(run=run_load)


def run_load(args: argparse.Namespace) -> int:
    from render.serving.metrics import parse_slo
    from render.serving.workload import check_rate, parse_lengths
    from dataclasses import replace

    from render.tools import load

    choice, storyboard = choice_of(args)
    catalog = load_catalog(DATA_DIR)
    deployment = choice.deployment
    efficiency = None
    if args.efficiency:
        from render.plan.resolve import efficiency_of

        efficiency = efficiency_of(catalog, args.efficiency, storyboard.parameters.embedding_rows)
    prompt = parse_lengths(args.prompt_tokens or str(storyboard.parameters.prompt_tokens), "--prompt-tokens")
    answer = parse_lengths(args.answer_tokens, "--answer-tokens")
    if args.rate is not None:
        check_rate(args.rate)
    if not (0 <= args.max_wait <= 3600):
        raise FilmError(f"--max-wait {args.max_wait:g}: give seconds from 0 to 3600")
    if args.scheduler:
        names = [name.strip() for name in args.scheduler.split(",")]
    else:
        names = ["static", "continuous", "chunked", "disaggregated"] if args.sweep else ["continuous"]
    schedulers = tuple(load.scheduler_of(name, args, deployment) for name in names)
    request = load.LoadRequest(deployment, schedulers, args.rate, args.requests, prompt, answer, args.seed,
                               args.trace, parse_slo(args.slo) if args.slo else None, efficiency,
                               kv_tokens=args.kv_tokens)
    if args.compare:
        from render.measure.load import read_load

        rows = load.compare(read_load(args.compare), request)
        if args.json:
            print(json.dumps({name: {"predicted": p, "measured": m, "error": e} for name, p, m, e in rows}, indent=2))
        else:
            print(load.compare_table(rows))
        return 0
    if args.sweep:
        rates = load.sweep_rates(args.sweep)
        result = load.sweep(request, rates, progress=load.progress_bar())
        folder = args.build / "load"
        png, svg = load.write_sweep_chart(folder, request, result)
        if args.json:
            print(json.dumps(load.sweep_json(result), indent=2))
        else:
            print(load.describe(request).replace(" at {rate}", " at each rate"))
            print(f"capacity: the highest rate at which {load.CAPACITY_SHARE:.0%} of requests meet {result.slo}")
            print(load.capacity_table(result))
            print(f"chart: {png}, {svg}")
        return 0
    if request.rate is None and request.trace is None:
        request = replace(request, rate=float(f"{load.saturation_rate(request) / 2:.3g}"))
    reports = load.run(request)
    if args.json:
        print(json.dumps(reports[0].as_json() if len(reports) == 1 else [r.as_json() for r in reports], indent=2))
    else:
        print(load.describe(request).replace("{rate}", f"{request.rate:g} a second"))
        print(load.report_table(reports))
    return 0


def add_check_commands(commands) -> None:
    """The project's own checks: every choice narrated, the tests' stills made again, the speed of a render."""
    checks = commands.add_parser("check-choices", help="narrate every GPU x model x data type x GPU count: which "
                                                       "make a film, and each one's fullest slot")
    checks.add_argument("--gpus", type=gpu_counts, default=None,
                        help="GPU counts to try, comma-separated (default: every count in the matrix, 1,2,4,8)")
    checks.add_argument("--out", type=Path, default=BUILD_DIR / "check-choices.tsv")
    checks.add_argument("--cache", type=Path, default=None, help="the clip cache (default: build/cache)")
    checks.add_argument("--sample", action="store_true",
                        help="only the sample make test narrates: the tightest ten by estimate and each axis's ends")
    checks.add_argument("--layout", action="store_true",
                        help="also lint every beat's layout (about 40 s a choice: with --sample, or for hours)")
    checks.add_argument("--efficiency", help="the films of expected numbers: EFFICIENCY=, a measured dataset's id or "
                                             "compute=0.6,memory=0.8")
    checks.add_argument("--jobs", type=whole_number(1, 256), default=os.cpu_count() or 1,
                        help="choices narrated at once, each in its own process (default: one per core)")
    checks.set_defaults(run=run_check_choices)

    goldens = commands.add_parser("goldens", help="make again the stills the tests compare every beat with")
    goldens.add_argument("--out", type=Path, default=None, help="where the stills go (default: tests/goldens)")
    goldens.set_defaults(run=run_goldens)

    bench = commands.add_parser("bench", help="how fast the film renders here, as ratios to its length")
    bench.add_argument("--qualities", default="low,high", help="comma-separated qualities to render cold")
    bench.add_argument("--build", type=Path, default=BUILD_DIR / "bench", help="scratch folder (emptied first)")
    bench.add_argument("--out", type=Path, default=BUILD_DIR / "bench.json")
    bench.set_defaults(run=run_bench)


def gpu_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{echo(text)}: give whole numbers of GPUs separated by commas, e.g. 1,2,4,8") from None
    if not counts or any(count < 1 for count in counts):
        raise argparse.ArgumentTypeError(f"{echo(text)}: each GPU count is at least 1")
    return counts


def add_choice_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpu", help="GPU id (film list gpus); default: the storyboard's")
    parser.add_argument("--gpus", type=any_integer, help="tensor parallelism over this many of the GPU (default: 1)")
    parser.add_argument("--model", help="model id (film list models), or the path of a Hugging Face config.json; "
                                        "default: the storyboard's")
    parser.add_argument("--dtype", help="weight data type (film list dtypes); default: the storyboard's")
    parser.add_argument("--kv-dtype", help="the KV cache's format (bf16, fp16 or fp8); default: the data type's own")


def any_integer(text: str) -> int:
    """A whole number; its range is checked with the choice, so the message can name GPUS=."""
    try:
        return int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{echo(text)} is not a whole number") from None


def add_plan_arguments(parser: argparse.ArgumentParser, voice: bool = True, build: bool = True) -> None:
    """What chooses a plan (and where its outputs go), the same for every command that resolves one."""
    add_choice_arguments(parser)
    parser.add_argument("--compare-gpu", help="the wasted-money beat's other GPU (default: the storyboard's)")
    parser.add_argument("--measured", help="measured dataset in data/measured/ (default: the storyboard's)")
    parser.add_argument("--efficiency", help="speak expected numbers beside the ceilings: a measured dataset's id (its "
                                             "fit) or compute=0.6,memory=0.8[,overhead=0.2]")
    parser.add_argument("--storyboard", default=STORYBOARD_PATH, help="storyboard file (default: %(default)s)")
    if voice:
        parser.add_argument("--voice",
                            help="hibari, piper or recorded, optionally engine:voice (default: the storyboard's)")
        parser.add_argument("--recordings", type=Path,
                            help="folder of <beat-id>.wav/.flac recordings (default: the storyboard's)")
    if build:
        parser.add_argument("--build", type=Path, default=BUILD_DIR, help="build folder (default: build/)")


def request_of(args: argparse.Namespace) -> FilmRequest:
    """What the command line asks for (a command without an option leaves it to the storyboard)."""
    return FilmRequest(**{name: getattr(args, name, None) for name in FilmRequest.__dataclass_fields__})


def plan_from(args: argparse.Namespace, request: FilmRequest | None = None):
    """The plan the command line asks for (`request`: a matrix's film, with the command line's other settings),
    through the library's film_plan."""
    from render.video.cues import film_plan

    return film_plan(request or request_of(args), args.storyboard)


def whole_number(low: int, high: int):
    """An argparse type: a whole number from `low` to `high` (commas and underscores allowed)."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace(",", "").replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{echo(text)} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(
                f"must be at least {low}, not {text}" if low else f"must not be negative, not {text}")
        if value > high:
            raise argparse.ArgumentTypeError(f"at most {high:,}, not {text}")
        return value

    return parse


positive_int = whole_number(1, 10**7)
non_negative_int = whole_number(0, 10**7)
MAX_MEASURED_PROMPT = 2_000_000


def seconds_into_beat(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{echo(text)} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a time from 0 into the beat, not {text}")
    return value


def choice_of(args: argparse.Namespace):
    """The GPU, model and data type a command names, with the storyboard's defaults."""
    storyboard = load_storyboard(getattr(args, "storyboard", STORYBOARD_PATH))
    asked = request_of(args)
    return resolve_choice(load_catalog(DATA_DIR), storyboard, FilmRequest().with_deployment_of(asked)), storyboard


def out_dir_of(plan, args: argparse.Namespace) -> Path:
    return output_dir(plan.choice.name, plan.choice.is_default, args.build)


def run_plan(args: argparse.Namespace) -> int:
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
        return 0
    if args.out:
        return 0
    print(f"{plan.title}: {choice.gpu.name}, {choice.model.name}, {choice.dtype.name} "
          f"(compared with {choice.compare_gpu.name}; measured: {choice.measured_id})")
    for beat in plan.beats:
        drawn_by = scene_of(beat.id).path
        print(f"\n{format_timestamp(beat.start)}-{format_timestamp(beat.end)}  {beat.title}  [{drawn_by}]")
        print(f"  {beat.narration}")
        for name, caption in beat.captions.items():
            print(f"  ({name}) {caption}")
    return 0


def run_narration(args: argparse.Namespace) -> int:
    from render.voice.narration import fit_table, make_narration

    plan = plan_from(args)
    log.info("narrating %s for %s with %s", plan.title, plan.choice.name, plan.narration.voice)
    result = make_narration(plan, out_dir_of(plan, args), cache_dir(args.build))
    print(fit_table(result.plan))
    cache_line = (f"speech cache: {result.synthesised} clips synthesised, {result.reused} reused"
                  + (f", {result.repaired} damaged ones regenerated" if result.repaired else ""))
    print(cache_line if result.synthesised else f"{cache_line}: nothing to synthesise")
    print(f"wrote {display_path(result.track)} ({plan.duration:.3f} s), {display_path(result.srt)}, "
          f"{display_path(result.vtt)}, {display_path(result.timed_plan_path)} in {result.seconds:.1f} s")
    return 0


def run_film(args: argparse.Namespace) -> int:
    from render.video import beats
    from render.video.scheduler import make_film

    beats.quality(args.quality)
    plan = plan_from(args)
    log.info("making %s for %s at %s quality", plan.title, plan.choice.name, args.quality)
    result = make_film(plan, args.quality, args.build, args.jobs, say=lambda line: print(line, flush=True))
    kit = write_kit(result.plan, result.poster, result.film.parent)
    page = write_page(result.plan, result.film)
    print(f"subtitles: {display_path(result.srt)}, {display_path(result.vtt)}; poster: {display_path(result.poster)}")
    print(f"publishing: {display_path(kit.description)}, {display_path(kit.transcript)}, "
          f"{display_path(kit.thumbnail)}, {display_path(page)}")
    print(f"duration {result.duration:.3f} s; made in {result.seconds:.1f} s "
          f"({len(result.rendered)} beats rendered, {len(result.reused)} reused)")
    print(display_path(result.film))
    return 0


def run_films(args: argparse.Namespace) -> int:
    from render.cluster.films import make_films
    from render.cluster.variants import MATRICES, matrix_variants, parse_variants, plans_for
    from render.video import beats

    beats.quality(args.quality)
    if bool(args.variants) == bool(args.matrix):
        raise FilmError("make films: say which films, either VARIANTS=\"h100-sxm/llama-3.1-8b/bf16 …\" or "
                        f"MATRIX={'|'.join(MATRICES)} (not both)")
    around = request_of(args)
    if args.variants:
        if around.asks_deployment:
            raise FilmError("make films: with VARIANTS each variant names its own GPU, model and data type; "
                            "leave GPU, GPUS, MODEL, DTYPE and KV_DTYPE unset (or use MATRIX=gpus|models around them)")
        variants = parse_variants(args.variants)
    else:
        variants = matrix_variants(args.matrix, load_catalog(DATA_DIR), load_storyboard(args.storyboard), around)
    plans, left_out = plans_for(variants, lambda variant: plan_from(args, around.with_deployment_of(variant)),
                                strict=bool(args.variants))
    if left_out:
        print(f"films: MATRIX={args.matrix} leaves out {len(left_out)} of its {len(variants)} choices, "
              "which do not fit: "
              + "; ".join(left_out[:3]) + (" …" if len(left_out) > 3 else ""), flush=True)
    if not plans:
        raise FilmError(f"MATRIX={args.matrix}: no choice around {around} fits; try another GPU, more GPUS= or a "
                        f"smaller data type")
    result = make_films(plans, args.quality, args.build, args.scheduler, args.jobs,
                        say=lambda line: print(line, flush=True),
                        on_film=lambda made: (write_kit(made.plan, made.poster, made.film.parent),
                                              write_page(made.plan, made.film)))
    print(result.table())
    return 1 if result.failed else 0


def run_review(args: argparse.Namespace) -> int:
    """The review page of the film already made for this choice (the film, else its preview)."""
    from render.publish.review import film_to_review, make_review
    from render.voice.narration import make_narration

    plan = plan_from(args)
    folder = out_dir_of(plan, args)
    film = film_to_review(folder, make_arguments(args))
    timed = make_narration(plan, folder, cache_dir(args.build)).plan  # cached: the film's own timings
    shown_file = film.parent / "shown.json"
    try:
        shown = json.loads(shown_file.read_text()) if shown_file.is_file() else {}
    except ValueError:
        shown = {}  # damaged: the page lists the narration's numbers only
    shown = {beat.id: sorted({*shown.get(beat.id, []), *beat.reads}) for beat in timed.beats}
    page = make_review(timed, film, shown, args.build, say=lambda line: print(line, file=sys.stderr, flush=True))
    print(display_path(page))
    return 0


def run_page(args: argparse.Namespace) -> int:
    """The publishable page of the film already made for this choice (the film, else its preview)."""
    from render.publish.review import film_to_review
    from render.voice.narration import make_narration

    plan = plan_from(args)
    folder = out_dir_of(plan, args)
    film = film_to_review(folder, make_arguments(args), "to make a page of")
    timed = make_narration(plan, folder, cache_dir(args.build)).plan  # cached: the film's own timings
    print(display_path(write_page(timed, film)))
    return 0


def write_page(plan, film: Path) -> Path:
    from render.plan.resolve import explorer_for
    from render.publish.page import make_page

    return make_page(plan, explorer_for(plan), film, say=lambda line: print(line, file=sys.stderr, flush=True))


def make_arguments(args: argparse.Namespace) -> str:
    """The choice as make's variables (' GPU=a100-sxm-80gb GPUS=2'), for a message that says what to run."""
    names = (("gpu", "GPU"), ("gpus", "GPUS"), ("model", "MODEL"), ("dtype", "DTYPE"), ("kv_dtype", "KV_DTYPE"),
             ("compare_gpu", "COMPARE_GPU"), ("measured", "MEASURED"), ("efficiency", "EFFICIENCY"))
    return "".join(f" {variable}={getattr(args, name)}" for name, variable in names
                   if getattr(args, name, None) is not None)


def run_render(args: argparse.Namespace) -> int:
    """scene, still and sheet: resolve, narrate (cached), then render from the timed plan."""
    from render.video import beats, runner
    from render.voice.narration import Narrator, make_narration

    beats.quality(args.quality)  # an unknown quality fails before anything is done
    plan = plan_from(args)
    if args.command != "sheet":
        plan.beat(args.beat)  # so is an unknown beat
    out = out_dir_of(plan, args)
    cache = cache_dir(args.build)
    if args.command == "scene":
        narration = make_narration(plan, out, cache)
        path = runner.render_beat(narration.plan, narration.track, args.beat, args.quality, out / "beats",
                                 cache=cache).video
    else:
        # A picture needs the speech's timings, not the track; a still, only its own beat's.
        narrator = Narrator(plan, cache)
        if args.command == "still":
            path = beats.render_still(narrator.timed_slice(args.beat), args.beat, args.at, args.quality, out / "stills",
                                      cache=cache)
        else:
            path = beats.make_sheet(narrator.narrate().plan, args.quality, out / "sheet.png", cache=cache)
    print(display_path(path))
    return 0


def run_studio(args: argparse.Namespace) -> int:
    """`make studio`: see render/studio/."""
    from render.publish import web
    from render.studio.server import Broadcast, run_studio as serve
    from render.studio.session import Studio
    from render.video import beats
    from render.video.finish import output_lock
    from render.voice.narration import make_narration

    beats.quality(args.quality)
    plan = plan_from(args)  # a bad choice or storyboard at the start is refused as make film refuses it
    if args.beat is not None:
        plan.beat(args.beat)
    folder = out_dir_of(plan, args) / "studio"
    cache = cache_dir(args.build)
    broadcast = Broadcast()
    def narrate(resolved):  # the timed plan at once (the stills need only that); the track levelled meanwhile
        narration = make_narration(resolved, folder, cache, level_later=True)
        narration.levelling.start()
        return narration

    studio = Studio(lambda: plan_from(args), narrate, folder, cache, args.quality, args.beat, broadcast.publish)
    page = web.render("studio.html", title=plan.title, label=plan.choice.long_label, duration=plan.duration)
    with output_lock(folder):
        return serve(studio, Path(args.storyboard), args.port, page, broadcast)


def run_measure(args: argparse.Namespace) -> int:
    from render.tools.measuring import MeasureRequest, measure_endpoint
    from render.measure.timings import planned_requests

    if args.load:
        return run_measure_load(args)
    try:
        lengths = tuple(whole_number(1, MAX_MEASURED_PROMPT)(part) for part in args.prompt_tokens.split(","))
    except argparse.ArgumentTypeError as error:
        raise FilmError(f"--prompt-tokens {echo(args.prompt_tokens)}: {error}") from None
    if list(lengths) != sorted(set(lengths)) or len(lengths) < 2:
        raise FilmError(f"--prompt-tokens {echo(args.prompt_tokens)}: give at least two increasing lengths")
    if args.out.suffix != ".yaml" or not DATASET_NAME.fullmatch(args.out.stem):
        raise FilmError(f"--out {args.out}: the dataset must be a .yaml file whose name is its id: letters, digits, "
                        f"'.', '_' and '-', e.g. data/measured/my-endpoint.yaml")
    levels = concurrency_levels(args.concurrency)
    planned = planned_requests(len(lengths), args.runs, levels)
    if planned > args.max_requests:
        raise FilmError(f"this run needs {planned:,} timed requests ({len(lengths)} prompt lengths x {args.runs} runs "
                        f"x {sum(levels)} streams over --concurrency {args.concurrency}), more than --max-requests "
                        f"{args.max_requests:,}; raise --max-requests or lower --runs or --concurrency")
    measure_endpoint(MeasureRequest(
        base_url=args.base_url, model=args.model, api_key_env=args.api_key_env, lengths=lengths, runs=args.runs,
        max_tokens=args.max_tokens, max_requests=args.max_requests, timeout=args.timeout, levels=levels,
        warm_prefix=args.warm_prefix, label=args.label, provider=args.provider, out=args.out,
        request=FilmRequest(gpu=args.compared_gpu, model=args.as_model, dtype=args.precision)),
        say=lambda line: print(line, flush=True))
    return 0


def run_measure_load(args: argparse.Namespace) -> int:
    from render.measure import client
    from render.measure.load import measure_load, write_load
    from render.serving.workload import check_rate, parse_lengths

    prompt = parse_lengths(args.prompt_tokens, "--prompt-tokens")
    answer = parse_lengths(args.answer_tokens, "--answer-tokens")
    check_rate(args.rate)
    if not (1 <= args.max_seconds <= 86_400):
        raise FilmError(f"--max-seconds {args.max_seconds:g}: give from 1 to 86,400 seconds")
    if args.out.suffix != ".yaml":
        raise FilmError(f"--out {args.out}: a load dataset is a .yaml file, e.g. build/load/mine.yaml")
    endpoint = client.Endpoint(args.base_url, args.model, client.api_key_from(args.api_key_env), timeout=args.timeout,
                               max_requests=args.requests + 64)
    record = measure_load(endpoint, args.rate, args.requests, prompt, answer, args.seed, args.max_seconds,
                          say=lambda line: print(line, flush=True))
    write_load(args.out, record)
    print(f"wrote {display_path(args.out)}: {len(record.requests):,} requests timed ({record.failed} failed); compare "
          f"it with film load --compare {shlex.quote(str(args.out))}")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from render.specs.calibration import calibrate
    from render.specs.calibration import deployment_of
    from render.tools.calibrate import report

    catalog = load_catalog(DATA_DIR)
    dataset = catalog.measured(args.measured)
    rows = load_storyboard().parameters.embedding_rows
    print(report(calibrate(dataset, deployment_of(dataset, catalog, args.gpu, args.gpus, rows))))
    return 0


def concurrency_levels(text: str) -> tuple[int, ...]:
    from render.measure.timings import MAX_CONCURRENCY

    try:
        levels = tuple(whole_number(1, MAX_CONCURRENCY)(part) for part in text.split(","))
    except argparse.ArgumentTypeError as error:
        raise FilmError(f"--concurrency {echo(text)}: {error}") from None
    if list(levels) != sorted(set(levels)) or levels[0] != 1:
        raise FilmError(f"--concurrency {echo(text)}: give increasing numbers of streams starting with 1 "
                        f"(the single-stream figures the measured beats use), e.g. 1,8,32")
    return levels


def run_roofline(args: argparse.Namespace) -> int:
    choice, storyboard = choice_of(args)
    deployment = choice.deployment
    prompt = args.prompt or storyboard.parameters.prompt_tokens
    rl.check_fits(deployment, max(prompt, args.batch * args.context),
                  f"a {prompt:,}-token prompt" if prompt >= args.batch * args.context
                  else f"{args.batch} sequences of {args.context:,} cached tokens")
    report = roofline_report(deployment, prompt, args.batch, args.context)
    print(json.dumps(report.as_data(), indent=2) if args.json else roofline_table(choice.label, deployment, report))
    return 0


def run_model_import(args: argparse.Namespace) -> int:
    """Append the config's entry to data/models.yaml (atomically, after checking it loads)."""
    from render.specs.hf_config import add_model, model_entry_yaml, model_from_file

    if args.name is not None:
        found = control_characters(args.name)
        if found or not args.name.strip() or len(args.name) > NAME_LENGTH:
            raise FilmError(f"--name: a name is one line of plain text, 1 to {NAME_LENGTH} characters"
                            + (f"; this one holds control characters ({', '.join(found)})" if found else
                               f"; this one is {len(args.name):,} characters long" if args.name.strip() else ""))
    model = model_from_file(args.config, args.id, args.name)
    if args.print:
        print(model_entry_yaml(model), end="")
        return 0
    add_model(args.models, model)
    models_path = args.models
    count = count_summary(model)
    print(f"added {model.id} ({model.name}: {count}) to {display_path(models_path)}; "
          f"render it with make film MODEL={model.id}")
    return 0


def count_summary(model) -> str:
    active = rl.active_parameters(model)
    total = f"{fmt.large(model.parameters)} parameters"
    return f"{total}, {fmt.large(active)} active per token" if active != model.parameters else total


def run_check_choices(args: argparse.Namespace) -> int:
    from render.tools import check_choices as checks

    results = checks.check_choices(args.gpus or checks.GPU_COUNTS, args.cache, args.jobs, sample=args.sample,
                                   layout=args.layout, efficiency=args.efficiency)
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


def run_list(args: argparse.Namespace) -> int:
    from render.specs.listing import catalog_table

    print(catalog_table(load_catalog(DATA_DIR), args.what))
    return 0


if __name__ == "__main__":
    sys.exit(main())
