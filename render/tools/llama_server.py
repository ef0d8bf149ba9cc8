"""A real OpenAI-compatible inference server for `film measure`'s tests and `make bench`'s check of a fit's
predictions: llama.cpp's own HTTP server, as the xllamacpp wheel ships it compiled (a test dependency from PyPI:
nothing is built here), run in a process of its own, serving a tiny random-weight Llama model written with the
`gguf` package. Nothing is downloaded at run time.

The model is small enough to run fast on two CPU cores and big enough that prefill of a
thousand tokens takes visibly longer than of fifty. Its tokenizer spells words letter by
letter (about six tokens a word), so a prompt's size in words says little about its size in
tokens, as with real tokenizers on unusual text. Special tokens get zero output weights, so a
greedy decode never stops early.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import string
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

CHAT_TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
                 "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIALS = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
# Small: prefill of thousands of tokens in a fraction of a second. Wide: 160 MB of weights, more than
# a CPU's caches hold, so each decode step is bound by reading them, as on a GPU, and batching pays.
SMALL = {"embed": 256, "layers": 4, "heads": 4, "feed_forward": 768}
WIDE = {"embed": 1024, "layers": 3, "heads": 8, "feed_forward": 3072}


def write_tiny_model(path: Path, context: int = 4096, seed: int = 7, shape: dict = SMALL) -> Path:
    """A random-weight Llama in GGUF: SentencePiece-style vocabulary of letters, '▁' and bytes."""
    embed, layers, heads, feed_forward = shape["embed"], shape["layers"], shape["heads"], shape["feed_forward"]
    import gguf

    pieces = SPECIALS + ["▁"] + list(string.ascii_lowercase + string.ascii_uppercase + string.digits + ".,:;!?'-")
    byte_pieces = [f"<0x{value:02X}>" for value in range(256)]
    vocab = pieces + byte_pieces
    types = ([gguf.TokenType.UNKNOWN] + [gguf.TokenType.CONTROL] * 4 + [gguf.TokenType.NORMAL] * (len(pieces) - 5)
             + [gguf.TokenType.BYTE] * 256)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-random-llama")
    writer.add_context_length(context)
    writer.add_embedding_length(embed)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(feed_forward)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(embed // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(vocab)
    writer.add_token_scores([0.0] * len(vocab))
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_chat_template(CHAT_TEMPLATE)

    rng = np.random.default_rng(seed)

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    output = weights(len(vocab), embed)
    output[:len(SPECIALS)] = 0.0  # never the greedy choice: the stream runs to max_tokens
    writer.add_tensor("token_embd.weight", weights(len(vocab), embed))
    writer.add_tensor("output_norm.weight", np.ones(embed, np.float32))
    writer.add_tensor("output.weight", output)
    for layer in range(layers):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(embed, np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{block}.{name}.weight", weights(embed, embed))
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(embed, np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", weights(feed_forward, embed))
        writer.add_tensor(f"{block}.ffn_up.weight", weights(feed_forward, embed))
        writer.add_tensor(f"{block}.ffn_down.weight", weights(embed, feed_forward))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LlamaServer:
    """llama.cpp's server on 127.0.0.1 in a process of its own, started and waited for, and stopped after."""

    # One thread: on a shared machine (the suite's other worker rendering) llama.cpp's threads spin at each
    # step's barrier while one of them waits for a core, and a run takes minutes, not seconds (measured: the
    # concurrency sweep 77 s with two threads against a busy neighbour, 21 s with one).
    def __init__(self, model: Path, context: int = 4096, slots: int = 1, threads: int = 1, log: Path | None = None):
        self.model, self.context, self.slots, self.threads = model, context, slots, threads
        self.port = free_port()
        self.log = log or model.with_suffix(f".{self.port}.log")
        self.process: subprocess.Popen | None = None

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.root + "/v1"

    def __enter__(self) -> "LlamaServer":
        settings = {"model": str(self.model), "port": self.port, "context": self.context, "slots": self.slots,
                    "threads": self.threads}
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen([sys.executable, __file__, json.dumps(settings)], stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama.cpp's server exited ({self.process.returncode}): "
                                   f"{self.log.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(self.root + "/health", timeout=2) as answer:
                    if json.load(answer).get("status") == "ok":
                        return self
            except OSError:
                pass
            time.sleep(0.2)
        self.__exit__()
        raise RuntimeError(f"llama.cpp's server was not ready in 60 s: {self.log.read_text(errors='replace')[-2000:]}")

    def __exit__(self, *exc) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def post(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(self.root + path, json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as answer:
            return json.load(answer)

    def prompt_tokens(self, content: str) -> int:
        """The server's own count of a one-message chat prompt: a non-streamed completion's usage."""
        answer = self.post("/v1/chat/completions", {"model": "tiny-random-llama", "max_tokens": 1,
                                                    "messages": [{"role": "user", "content": content}]})
        return answer["usage"]["prompt_tokens"]


def serve(settings: dict) -> None:
    """The server's process: llama.cpp's server (the options `llama-server` would take) until SIGTERM."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = settings["model"]
    params.hostnames = ["127.0.0.1"]
    params.port = settings["port"]
    params.n_ctx = settings["context"] * settings["slots"]  # each slot gets the whole context
    params.n_parallel = settings["slots"]
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = settings["threads"]
    params.model_alias = {"tiny-random-llama"}
    params.ui = False
    params.use_jinja = True
    server = xllamacpp.Server(params)  # serves HTTP from its own threads as soon as it is made
    print(f"serving on {server.listening_address}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})  # for sigwait, in every thread
    serve(json.loads(sys.argv[1]))


def tiny_deployment(shape: dict = WIDE):
    """The tiny model as the roofline sees it, on "this CPU" (nominal ceilings: a fit's fractions are of these, and
    its predictions need only the model's true shape): F32 weights, as written, and llama.cpp's F16 KV cache."""
    from render.specs.architecture import count_parameters
    from render.specs.types import DataType, Deployment, Gpu, Model

    vocabulary = len(SPECIALS) + 1 + len(string.ascii_lowercase + string.ascii_uppercase + string.digits
                                         + ".,:;!?'-") + 256
    model = Model("tiny-random-llama", "tiny random Llama", "tiny random llama", shape["layers"], shape["embed"],
                  shape["heads"], shape["heads"], shape["embed"] // shape["heads"], shape["feed_forward"], vocabulary,
                  False, False, 0, "render/tools/llama_server.py")
    model = dataclasses.replace(model, parameters=count_parameters(model).total)
    cpu = Gpu("this-cpu", "this CPU", "CPU", "this C P U", "a", 1e11, None, 2e10, 16, 2, "nominal", 1e10, 1e-5, True,
              "nominal")
    f32 = DataType("f32", "F32", "F thirty-two", 4, "bf16", False, "f16", 2, True, "as write_tiny_model writes them")
    return Deployment(cpu, model, f32)
