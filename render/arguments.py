"""The `film` command's arguments: every command and option, and the types that check a value where it enters
(render/cli.py runs what they ask for). Nothing here does a command's work."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

from render import __version__
from render.files import BUILD_DIR, DATA_DIR, STORYBOARD_PATH
from render.plan.types import FilmRequest
from render.specs import roofline as rl
from render.text import echo, whole_number_in


def build_parser() -> argparse.ArgumentParser:
    """Every command and its options; `args.command` (and `args.model_command`) names what to run."""
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

    roof = commands.add_parser("roofline", help="print the roofline numbers for a GPU and model")
    add_choice_arguments(roof)
    roof.add_argument("--prompt", type=positive_int, help="prefill prompt length in tokens (default: the storyboard's)")
    roof.add_argument("--batch", type=positive_int, default=1, help="decode batch size (default: %(default)s)")
    roof.add_argument("--context", type=non_negative_int, default=0,
                      help="cached tokens each sequence rereads per decode step (default: %(default)s)")
    roof.add_argument("--json", action="store_true", help="print the numbers as JSON")

    narration = commands.add_parser("narration", help="voice the narration: track, subtitles and timed plan")
    add_plan_arguments(narration)

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

    film = commands.add_parser("film", help="render the whole film into build/ (or build/<gpu>-<model>-<dtype>/)")
    add_plan_arguments(film)
    film.add_argument("--quality", default="high", help="high (1080p60, the film) or low/medium/tiny (a preview)")
    film.add_argument("--jobs", type=whole_number(1, 256), help="beats rendered at once (default: the number of cores)")

    films = commands.add_parser("films", help="render many films at once on a Dask cluster, each shared beat once")
    add_plan_arguments(films)
    films.add_argument("--variants", help="the films, as GPU/MODEL/DTYPE[/gpus=N][/kv=X] separated by spaces")
    films.add_argument("--matrix", help="all (every choice that fits), gpus or models (one axis around the choice)")
    films.add_argument("--scheduler", help="an existing Dask cluster's scheduler, tcp://HOST:PORT "
                                           "(default: a local cluster on this machine)")
    films.add_argument("--quality", default="high", help="high (1080p60, the film) or low/medium/tiny (previews)")
    films.add_argument("--jobs", type=whole_number(1, 256),
                       help="the local cluster's workers (default: the number of cores)")

    page = commands.add_parser("page", help="write the publishable page of the film made for this choice")
    add_plan_arguments(page)

    review = commands.add_parser("review", help="write the review page of the film made for this choice")
    add_plan_arguments(review)

    studio = commands.add_parser("studio", help="a page on 127.0.0.1 that draws each beat again as its files are saved")
    add_plan_arguments(studio)
    studio.add_argument("--beat", help="show and draw this beat only")
    studio.add_argument("--quality", default="low", help="its stills' and clips' quality (default: %(default)s)")
    studio.add_argument("--port", type=whole_number(0, 65535), default=0,
                        help="the port on 127.0.0.1 (default: a free one, printed)")


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

    calibrate = commands.add_parser("calibrate", help="fit a measured dataset: the overhead, and the share of peak "
                                                      "arithmetic and bandwidth it reaches")
    calibrate.add_argument("--measured", required=True, help="a dataset in data/measured/ (film list measured)")
    calibrate.add_argument("--gpu", help="the GPU to fit against (default: the one the dataset is compared with)")
    calibrate.add_argument("--gpus", type=whole_number(1, rl.LARGEST_GPU_COUNT), default=1,
                           help="how many of it (default: %(default)s)")

    model = commands.add_parser("model", help="models: import a Hugging Face config.json into data/models.yaml")
    model_commands = model.add_subparsers(dest="model_command", required=True, metavar="ACTION")
    importing = model_commands.add_parser("import", help="count a config.json's parameters and add it as a model")
    importing.add_argument("config", type=Path, help="a Hugging Face config.json on disk (or its folder)")
    importing.add_argument("--id", help="the model's id (default: from the config's name or folder)")
    importing.add_argument("--name", help="how it is written on screen (default: from the id)")
    importing.add_argument("--print", action="store_true", help="print the entry instead of adding it")
    importing.add_argument("--models", type=Path, default=DATA_DIR / "models.yaml", help=argparse.SUPPRESS)

    add_load_command(commands)

    listing = commands.add_parser("list", help="list the known GPUs, models, data types or measured datasets")
    listing.add_argument("what", choices=("gpus", "models", "dtypes", "measured"))


def add_load_command(commands) -> None:
    load = commands.add_parser("load", help="simulate the deployment serving a stream of requests: latency "
                                            "percentiles, throughput, goodput, and each scheduler's capacity")
    add_choice_arguments(load)
    load.add_argument("--efficiency", help="EFFICIENCY=: a measured dataset's id, or compute=…,memory=…[,overhead=…]"
                                           "[,overlap=…][,decode_overlap=…][,step_overhead=…] (default: the ceilings)")
    load.add_argument("--rate", type=float, help="Poisson arrivals, requests a second (default: half the "
                                                 "deployment's saturation)")
    load.add_argument("--prompt-tokens", default=None,
                      help="prompt length: fixed (2000) or a log-normal's mean~spread (2000~500); default: the "
                           "storyboard's prompt")
    load.add_argument("--answer-tokens", default="200", help="answer length, as --prompt-tokens (default: %(default)s)")
    load.add_argument("--requests", type=whole_number(1, 1_000_000), default=1000,
                      help="requests in the workload (default: %(default)s)")
    load.add_argument("--seed", type=whole_number(0, 2**32 - 1), default=0, help="the workload's seed")
    load.add_argument("--seeds", type=whole_number(1, 10), default=1,
                      help="with --sweep: each capacity found again for this many seeds from --seed, and its spread "
                           "reported (default: %(default)s)")
    load.add_argument("--trace", type=Path, help="a trace instead: CSV or JSON lines of arrival_seconds, "
                                                 "prompt_tokens, answer_tokens")
    load.add_argument("--scheduler", help="static, continuous, chunked or disaggregated, or several with commas "
                                          "(default: continuous; a sweep compares all four)")
    load.add_argument("--max-num-seqs", type=whole_number(1, 4096),
                      help="vLLM's --max-num-seqs: sequences running at once (default: vLLM's own on the GPU, 1,024 on "
                           "one of 70 GiB or more that is not an A100, else 256)")
    load.add_argument("--max-seqs", dest="max_num_seqs", type=whole_number(1, 4096), help=argparse.SUPPRESS)
    load.add_argument("--batch", type=whole_number(1, 4096), default=8, help="static batching's batch")
    load.add_argument("--max-wait", type=float, default=0.5, help="static batching: seconds before a short batch")
    load.add_argument("--chunk-tokens", dest="max_num_batched_tokens", type=whole_number(16, 1_000_000),
                      help=argparse.SUPPRESS)  # (the earlier names: --max-seqs above, and this)
    load.add_argument("--max-num-batched-tokens", type=whole_number(16, 1_000_000),
                      help="vLLM's --max-num-batched-tokens: the tokens a step takes, chunked prefill's budget "
                           "(default: vLLM's own on the GPU, 8,192 on one of 70 GiB or more that is not an A100, else "
                           "2,048)")
    load.add_argument("--block-size", type=block_size,
                      help="vLLM's --block-size: tokens a KV cache block holds (8, 16, 32, 64 or 128; default: 16, "
                           "vLLM's)")
    load.add_argument("--prefill-gpus", type=whole_number(1, 64), help="disaggregation: GPUs for prefill "
                                                                       "(default: the deployment's)")
    load.add_argument("--decode-gpus", type=whole_number(1, 64), help="disaggregation: GPUs for decode "
                                                                      "(default: the deployment's)")
    load.add_argument("--slo", help="objectives for goodput and capacity, e.g. ttft=0.5,tpot=0.05")
    load.add_argument("--sweep", nargs="?", const="auto", help="rates to sweep: LOW:HIGH[:COUNT], a list 1,2,4, or "
                                                               "none for up to 20 a round step apart, past saturation")
    load.add_argument("--compare", type=Path, help="a load dataset (film measure --load): its arrivals and lengths "
                                                   "replayed, predicted beside measured")
    load.add_argument("--kv-tokens", type=whole_number(16, 10**9), help="the KV cache's capacity in tokens, as the "
                                                                          "real server holds it (default: from memory)")
    load.add_argument("--json", action="store_true", help="print the figures as JSON")
    load.add_argument("--build", type=Path, default=BUILD_DIR, help=argparse.SUPPRESS)


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
    checks.add_argument("--stress", action="store_true",
                        help="only the choices that stress the layout (with --layout: each beat of each linted)")
    checks.add_argument("--layout", action="store_true",
                        help="also lint every beat's layout (about 40 s a choice: with --sample, or for hours)")
    checks.add_argument("--efficiency", help="the films of expected numbers: EFFICIENCY=, a measured dataset's id or "
                                             "compute=0.6,memory=0.8")
    checks.add_argument("--cut", help="the storyboard's other cut to narrate (extended); the sample is the film's own")
    checks.add_argument("--jobs", type=whole_number(1, 256), default=os.cpu_count() or 1,
                        help="choices narrated at once, each in its own process (default: one per core)")

    goldens = commands.add_parser("goldens", help="make again the stills the tests compare every beat with")
    goldens.add_argument("--out", type=Path, default=None, help="where the stills go (default: tests/goldens)")

    bench = commands.add_parser("bench", help="how fast the film renders here, as ratios to its length")
    bench.add_argument("--qualities", default="low,high", help="comma-separated qualities to render cold")
    bench.add_argument("--build", type=Path, default=BUILD_DIR / "bench", help="scratch folder (emptied first)")
    bench.add_argument("--out", type=Path, default=BUILD_DIR / "bench.json")


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


def add_plan_arguments(parser: argparse.ArgumentParser, voice: bool = True, build: bool = True) -> None:
    """What chooses a plan (and where its outputs go), the same for every command that resolves one."""
    add_choice_arguments(parser)
    parser.add_argument("--compare-gpu", help="the GPU the film compares its own with (default: the storyboard's)")
    parser.add_argument("--measured", help="measured dataset in data/measured/ (default: the storyboard's)")
    parser.add_argument("--efficiency", help="speak expected numbers beside the ceilings: a measured dataset's id (its "
                                             "fit) or compute=0.6,memory=0.8[,overhead=0.2][,overlap=0]"
                                             "[,decode_overlap=0][,step_overhead=0.002]")
    parser.add_argument("--storyboard", default=STORYBOARD_PATH, help="storyboard file (default: %(default)s)")
    parser.add_argument("--cut", help="another cut the storyboard defines: extended (the film goes on to a server "
                                      "under load); default: the film as the transcript times it")
    if voice:
        parser.add_argument("--voice",
                            help="hibari, piper or recorded, optionally engine:voice (default: the storyboard's)")
        parser.add_argument("--recordings", type=Path,
                            help="folder of <beat-id>.wav/.flac recordings (default: the storyboard's)")
    if build:
        parser.add_argument("--build", type=Path, default=BUILD_DIR, help="build folder (default: build/)")


def whole_number(low: int, high: int):
    """An argparse type: a whole number from `low` to `high` (commas and underscores allowed)."""

    def parse(text: str) -> int:
        try:
            return whole_number_in(text, low, high)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def block_size(text: str) -> int:
    """An argparse type: one of vLLM's block sizes."""
    from render.serving.load import BLOCK_SIZES

    value = whole_number(1, 10**6)(text)
    if value not in BLOCK_SIZES:
        raise argparse.ArgumentTypeError(f"{value} tokens is not one of vLLM's block sizes: give "
                                         f"{', '.join(map(str, BLOCK_SIZES[:-1]))} or {BLOCK_SIZES[-1]}")
    return value


positive_int = whole_number(1, 10**7)
non_negative_int = whole_number(0, 10**7)
any_integer = whole_number(-math.inf, math.inf)  # its range is checked with the choice, so the message names GPUS=


def seconds_into_beat(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{echo(text)} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a time from 0 into the beat, not {text}")
    return value


def request_of(args: argparse.Namespace) -> FilmRequest:
    """What the command line asks for (a command without an option leaves it to the storyboard)."""
    return FilmRequest(**{name: getattr(args, name, None) for name in FilmRequest.__dataclass_fields__})
