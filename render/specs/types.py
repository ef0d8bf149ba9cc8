"""What a GPU, a model and a data type are, as the roofline needs them. Pure data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, replace

from render.specs.fields import datum

GIB = 2**30
# A value outside a field's range is a typo, not a chip: each range is in the data's own units.
FLOPS = {"low": 1e12, "high": 1e17, "unit": "FLOP/s", "note": "(1 TFLOP/s to 100 PFLOP/s, dense)"}


@dataclass(frozen=True)
class Gpu:
    id: str
    name: str
    short_name: str
    spoken_name: str
    article: str = datum(one_of=("a", "an"), either=True)  # the article before its spoken name
    bf16_flops: float = datum(**FLOPS)
    fp8_flops: float | None = datum(**FLOPS)
    bandwidth: float = datum(1e10, 1e14, "bytes/s", note="(10 GB/s to 100 TB/s)")
    memory_gib: float = datum(1, 100_000, "GiB")
    sm_count: int = datum(1, 10_000, "streaming multiprocessors")
    source: str
    # GPU-to-GPU bytes/s per GPU, in one direction
    interconnect_bandwidth: float = datum(1e9, 1e14, "bytes/s", note="per GPU and direction (1 GB/s to 100 TB/s)")
    # the fixed cost of one all-reduce, whatever its size
    allreduce_latency_seconds: float = datum(1e-7, 1e-2, "seconds", note="(0.1 µs to 10 ms)")
    allreduce_latency_is_assumption: bool
    interconnect_source: str
    # the vendor's name for what sm_count counts: NVIDIA's streaming multiprocessors, AMD's compute units
    compute_unit: str = datum(one_of=("SM", "CU"), why="what sm_count counts", default="SM")
    # How much of a step's shorter part (arithmetic or memory traffic) hides under the longer: 1, the roofline's ideal,
    # as a GPU overlaps them; 0, one after the other, as a fit finds a CPU's small batches do (rl.achieved sets it).
    # That of a step carrying a prompt's tokens; a step that only decodes hides `decode_overlap` (None: the same).
    overlap: float = datum(0, 1, "of the shorter part", yaml=False, default=1.0)
    decode_overlap: float | None = datum(0, 1, "of the shorter part", yaml=False, default=None)

    def step_overlap(self, prefilling: bool) -> float:
        """The share of a step's shorter part hidden under its longer: prefill's, or decode's in a step that only
        decodes (a fit finds a CPU's prefill overlapping its weight reads with its arithmetic, and its decode not)."""
        return self.overlap if prefilling or self.decode_overlap is None else self.decode_overlap

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB


@dataclass(frozen=True)
class Model:
    """A transformer as its Hugging Face config.json describes it (render/specs/architecture.py
    counts its parameters). Fields after `source` default to a dense, grouped-query model."""

    id: str
    name: str
    spoken_name: str
    layers: int = datum(1, 1_000, "layers")
    hidden_size: int = datum(64, 1_000_000, "values")
    attention_heads: int = datum(1, 10_000, "heads")
    kv_heads: int = datum(1, 10_000, "heads")
    # query/key width per head (MLA: the no-position part + the rotary part)
    head_dim: int = datum(8, 4_096, "values")
    ffn_size: int = datum(64, 10_000_000, "values")  # a dense MLP's intermediate size
    vocab_size: int = datum(100, 10_000_000, "tokens")
    tied_embeddings: bool
    qkv_bias: bool
    # the published total (for an imported config: the counted one)
    parameters: int = datum(1e6, 1e14, "parameters")
    source: str
    architecture: str = "llama"   # the config's model_type
    qk_norm: bool = False         # Qwen3: an RMS norm on each query and key head
    # Mixture of experts (experts = 0: a dense model)
    experts: int = datum(0, 100_000, "experts", default=0)               # routed experts per MoE layer
    experts_per_token: int = datum(0, 1_000, "experts", default=0)       # of those, how many each token uses
    expert_ffn_size: int = datum(0, 10_000_000, "values", default=0)     # one expert's intermediate size
    shared_experts: int = datum(0, 1_000, "experts", default=0)          # experts every token uses (DeepSeek)
    # layers whose MLP is dense in a MoE model (DeepSeek's first three)
    dense_layers: int = datum(0, 1_000, "layers", default=0)
    router_bias: bool = False     # a per-expert bias on the router (DeepSeek-V3's score correction)
    # Multi-head latent attention (kv_lora_rank = 0: ordinary grouped-query attention)
    q_lora_rank: int = datum(0, 1_000_000, "values", default=0)
    kv_lora_rank: int = datum(0, 1_000_000, "values", default=0)
    qk_rope_head_dim: int = datum(0, 4_096, "values", default=0)
    v_head_dim: int = datum(0, 4_096, "values", default=0)
    # OPT's older shape: an MLP of two matrices, a bias on every projection, LayerNorms (a weight and a bias) and a
    # table of learned positions
    mlp: str = datum(one_of=("gated", "plain"), why="gated: gate, up and down (SwiGLU); plain: up and down",
                     default="gated")
    linear_bias: bool = False     # every projection carries a bias (attention's output and the MLP's too)
    norm: str = datum(one_of=("rms", "layer"), why="rms: a weight; layer: a weight and a bias", default="rms")
    learned_positions: int = datum(0, 10_000_000, "positions", default=0)  # rows of a learned position table

    @property
    def shape(self) -> tuple:
        """Everything that makes the roofline's numbers, without the names: two models of one shape are
        the same model to every formula (a config of the catalog's model has the catalog entry's shape)."""
        naming = ("id", "name", "spoken_name", "parameters", "source")
        return tuple((key, value) for key, value in self.__dict__.items() if key not in naming)

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def value_head_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def attention_width(self) -> int:
        """heads x the mean of the key and value head widths: the N^2 attention work per layer is
        2 x this x N^2 (d for Llama: heads x head_dim)."""
        return self.attention_heads * (self.head_dim + self.value_head_dim) // 2


@dataclass(frozen=True)
class DataType:
    id: str
    name: str
    spoken_name: str
    bytes_per_weight: float = datum(0.0625, 8, "bytes per weight")
    arithmetic: str = datum(one_of=("bf16", "fp8"), why="the tensor-core format its matrix products run in")
    weight_only: bool
    kv_dtype: str
    kv_bytes: float = datum(0.0625, 8, "bytes per value")
    embeddings_in_format: bool  # False: the embedding table and output head stay at 16 bits
    source: str


@dataclass(frozen=True)
class Deployment:
    """A model served in one data type, tensor-parallel over `gpus` of one GPU."""

    gpu: Gpu
    model: Model
    dtype: DataType      # the weights' format; its kv_dtype/kv_bytes: the KV cache's
    gpus: int = 1
    # False, the source's convention: a step reads every weight, the whole input embedding table included. True: it
    # gathers only its tokens' rows of that table (the output head, a matrix multiply, is read whole either way).
    embedding_rows: bool = False

    def on(self, gpu: Gpu) -> "Deployment":
        """The same deployment on another GPU (as many of them)."""
        return replace(self, gpu=gpu)

    def with_dtype(self, dtype: DataType) -> "Deployment":
        """The same deployment with other weights, keeping this one's KV cache format."""
        return replace(self, dtype=kv_cache_in(dtype, self.dtype))


def kv_cache_in(dtype: DataType, kv: DataType) -> DataType:
    """`dtype`'s weights with `kv`'s KV cache format (KV_DTYPE=)."""
    if (dtype.kv_dtype, dtype.kv_bytes) == (kv.kv_dtype, kv.kv_bytes):
        return dtype
    return replace(dtype, kv_dtype=kv.kv_dtype, kv_bytes=kv.kv_bytes)


@dataclass(frozen=True)
class Hardware:
    """What the narration names: one GPU ("an H100") or several of it ("four H100s")."""

    gpu: Gpu
    count: int = 1

    @property
    def id(self) -> str:
        return self.gpu.id

    @property
    def short_name(self) -> str:
        return self.gpu.short_name

    @property
    def article(self) -> str:
        return self.gpu.article
