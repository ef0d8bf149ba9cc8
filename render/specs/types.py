"""What a GPU, a model and a data type are, as the roofline needs them. Pure data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, replace

GIB = 2**30


@dataclass(frozen=True)
class Gpu:
    id: str
    name: str
    short_name: str
    spoken_name: str
    article: str
    bf16_flops: float
    fp8_flops: float | None
    bandwidth: float
    memory_gib: float
    sm_count: int
    source: str
    interconnect_bandwidth: float        # GPU-to-GPU bytes/s per GPU, in one direction
    allreduce_latency_seconds: float     # the fixed cost of one all-reduce, whatever its size
    allreduce_latency_is_assumption: bool
    interconnect_source: str
    compute_unit: str = "SM"             # the vendor's name for what sm_count counts: SM (NVIDIA), CU (AMD)

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
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int             # query/key width per head (MLA: the no-position part + the rotary part)
    ffn_size: int             # a dense MLP's intermediate size
    vocab_size: int
    tied_embeddings: bool
    qkv_bias: bool
    parameters: int           # the published total (for an imported config: the counted one)
    source: str
    architecture: str = "llama"   # the config's model_type
    qk_norm: bool = False         # Qwen3: an RMS norm on each query and key head
    # Mixture of experts (experts = 0: a dense model)
    experts: int = 0              # routed experts per MoE layer
    experts_per_token: int = 0    # of those, how many each token uses
    expert_ffn_size: int = 0      # one expert's intermediate size
    shared_experts: int = 0       # experts every token uses (DeepSeek)
    dense_layers: int = 0         # layers whose MLP is dense in a MoE model (DeepSeek's first three)
    router_bias: bool = False     # a per-expert bias on the router (DeepSeek-V3's score correction)
    # Multi-head latent attention (kv_lora_rank = 0: ordinary grouped-query attention)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0

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
    bytes_per_weight: float
    arithmetic: str
    weight_only: bool
    kv_dtype: str
    kv_bytes: float
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
