"""A transformer's parameters, counted from its architecture, and which of them a token uses.

Pure arithmetic on a `Model` (no files). It covers what the supported Hugging Face configs
describe: token embeddings (tied to the output head or not), attention with grouped-query
heads (optional q/k/v biases, Qwen3's per-head q/k norms) or DeepSeek's multi-head latent
attention, gated MLPs, mixture-of-experts layers (routed experts, shared experts, the router
and its bias) and the RMS norms; and OPT's older shape (plain MLPs, a bias on every projection,
LayerNorms, learned positions). Multi-token-prediction modules (DeepSeek-V3's
`num_nextn_predict_layers`) are not part of the model that serves a request and are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from render.specs.types import Model


@dataclass(frozen=True)
class ParameterCount:
    """A model's parameters, split the way decode reads them."""

    total: int          # everything the architecture implies
    per_expert: int     # one routed expert (its gate, up and down projections); 0 for a dense model
    moe_layers: int     # layers with routed experts
    experts: int        # routed experts per such layer
    experts_per_token: int

    @property
    def routed(self) -> int:
        """Every routed expert of every layer: the part a token reads only a few of."""
        return self.moe_layers * self.experts * self.per_expert

    @property
    def always_read(self) -> int:
        """What every token reads: embeddings, attention, norms, routers, dense MLPs, shared experts."""
        return self.total - self.routed

    @property
    def active(self) -> int:
        """What one token uses: everything but the routed experts it was not sent to."""
        return self.always_read + self.moe_layers * self.experts_per_token * self.per_expert


def gated_mlp(hidden: int, intermediate: int) -> int:
    """Gate, up and down projections (SwiGLU), no biases."""
    return 3 * hidden * intermediate


def dense_mlp(model: Model) -> int:
    """A dense layer's MLP: gated (three projections), or plain (up and down, OPT's), with biases where it has them."""
    d, intermediate = model.hidden_size, model.ffn_size
    if model.mlp == "plain":
        return 2 * d * intermediate + ((intermediate + d) if model.linear_bias else 0)
    return gated_mlp(d, intermediate)


def norm_parameters(model: Model) -> int:
    """One norm: RMS norm's weight, or LayerNorm's weight and bias."""
    return model.hidden_size * (2 if model.norm == "layer" else 1)


def attention_parameters(model: Model) -> int:
    """One layer's attention projections (and their biases and norms)."""
    d, heads = model.hidden_size, model.attention_heads
    if model.is_mla:
        # Queries through an optional low-rank bottleneck (with its norm); keys and values from one
        # compressed latent plus a shared rotary key, expanded per head for the no-position keys and values.
        if model.q_lora_rank:
            queries = d * model.q_lora_rank + model.q_lora_rank + model.q_lora_rank * heads * model.head_dim
        else:
            queries = d * heads * model.head_dim
        no_position = model.head_dim - model.qk_rope_head_dim
        keys_values = (d * (model.kv_lora_rank + model.qk_rope_head_dim) + model.kv_lora_rank
                       + model.kv_lora_rank * heads * (no_position + model.value_head_dim))
        return queries + keys_values + heads * model.value_head_dim * d
    q_width, kv_width = heads * model.head_dim, model.kv_heads * model.head_dim
    count = 2 * d * q_width + 2 * d * kv_width  # q and o; k and v
    if model.qkv_bias:
        count += q_width + 2 * kv_width
    if model.linear_bias:
        count += d  # the output projection's
    if model.qk_norm:
        count += 2 * model.head_dim
    return count


def count_parameters(model: Model) -> ParameterCount:
    d = model.hidden_size
    per_layer = attention_parameters(model) + 2 * norm_parameters(model)  # + the two norms around attention and MLP
    dense = dense_mlp(model)
    per_expert = gated_mlp(d, model.expert_ffn_size) if model.is_moe else 0
    moe_mlp = 0
    if model.is_moe:
        router = d * model.experts + (model.experts if model.router_bias else 0)
        moe_mlp = (model.experts + model.shared_experts) * per_expert + router
    mlps = (model.layers - model.moe_layers) * dense + model.moe_layers * moe_mlp
    embeddings = model.vocab_size * d * (1 if model.tied_embeddings else 2) + model.learned_positions * d
    total = model.layers * per_layer + mlps + embeddings + norm_parameters(model)  # + the final norm
    return ParameterCount(total, per_expert, model.moe_layers, model.experts, model.experts_per_token)
