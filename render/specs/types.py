"""What a GPU, a model and a data type are, as the roofline needs them. Pure data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB


@dataclass(frozen=True)
class Model:
    id: str
    name: str
    spoken_name: str
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    ffn_size: int
    vocab_size: int
    tied_embeddings: bool
    qkv_bias: bool
    parameters: int
    source: str

    @property
    def attention_width(self) -> int:
        """heads x head_dim: the width of the query and output projections (d for Llama)."""
        return self.attention_heads * self.head_dim

    def architecture_parameters(self) -> int:
        """The parameter count implied by the config, to check the published one against."""
        d, kv_width = self.hidden_size, self.kv_heads * self.head_dim
        attention = 2 * d * self.attention_width + 2 * d * kv_width
        if self.qkv_bias:
            attention += self.attention_width + 2 * kv_width
        mlp = 3 * d * self.ffn_size  # gate, up and down projections
        norms = 2 * d
        embeddings = self.vocab_size * d * (1 if self.tied_embeddings else 2)
        return self.layers * (attention + mlp + norms) + embeddings + d  # + final norm


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
    source: str
