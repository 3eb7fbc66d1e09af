"""Transformer (Vaswani et al. 2017) as described in the survey's section 2.6: the reference
peer of the recurrent models.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)
    FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2

Encoder: ``enc_layers`` layers of self-attention and FFN; decoder: ``dec_layers`` layers of
masked self-attention, attention over the encoder output, and FFN. Each sub-layer is
wrapped as LayerNorm(x + Dropout(Sublayer(x))) (post-norm, the paper's form;
``options.pre_norm: true`` gives x + Sublayer(LN(x)) with a final LN). Inputs are
sqrt(d_model) * E x + PE(pos) (sinusoids; `rnmt.modules.embedding.positional_encoding`
concatenates the sin and cos halves instead of interleaving them, a fixed permutation of
channels). ``hidden_size`` is d_model, ``options.ffn_size`` the FFN width (2048),
``attention_heads`` h (8).

Incremental decoding keeps every decoder layer's self-attention keys and values of the
positions decoded so far in the state (``k<l>`` / ``v<l>``, [B, t, d_model]); the encoder
side keys and values of every layer are computed once in ``encode``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rnmt.config import ModelConfig
from rnmt.errors import UserError
from rnmt.models.base import StepLogits, TensorDict, TranslationModel
from rnmt.models.registry import register
from rnmt.modules.embedding import Embedding, positional_encoding


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(d_model, d_model)  # W^Q
        self.key_value = nn.Linear(d_model, 2 * d_model)  # [W^K W^V]
        self.out = nn.Linear(d_model, d_model)  # W^O
        self.dropout = dropout

    def keys_values(self, x: Tensor):
        return self.key_value(x).chunk(2, dim=-1)

    def forward(self, x: Tensor, keys: Tensor, values: Tensor, bias: Tensor | None) -> Tensor:
        """x [B, T, d] attends over keys/values [B, S, d]; ``bias`` broadcasts to [B, h, T, S]."""
        B, T, d = x.shape
        h = self.heads
        q = self.query(x).view(B, T, h, -1).transpose(1, 2)
        k = keys.view(B, keys.size(1), h, -1).transpose(1, 2)
        v = values.view(B, values.size(1), h, -1).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
        if bias is not None:
            scores = scores + bias
        weights = F.dropout(torch.softmax(scores, -1), self.dropout, self.training)
        return self.out(torch.matmul(weights, v).transpose(1, 2).reshape(B, T, d)), weights


class FeedForward(nn.Sequential):
    def __init__(self, d_model: int, ffn: int, dropout: float) -> None:
        super().__init__(nn.Linear(d_model, ffn), nn.ReLU(), nn.Dropout(dropout), nn.Linear(ffn, d_model))


class EncoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, dropout: float) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d, heads, dropout)
        self.ffn = FeedForward(d, ffn, dropout)
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(2))


class DecoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, dropout: float) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d, heads, dropout)
        self.cross_attn = MultiHeadAttention(d, heads, dropout)
        self.ffn = FeedForward(d, ffn, dropout)
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(3))


def sublayer(x: Tensor, norm: nn.LayerNorm, fn, dropout: nn.Module, pre_norm: bool) -> Tensor:
    """LN(x + Dropout(fn(x))) (post-norm), or x + Dropout(fn(LN(x))) (pre-norm)."""
    if pre_norm:
        return x + dropout(fn(norm(x)))
    return norm(x + dropout(fn(x)))


def padding_bias(src_mask: Tensor, dtype: torch.dtype) -> Tensor:
    """[B, 1, 1, S] additive attention bias: 0 on real tokens, -1e9 on padding."""
    bias = torch.zeros(src_mask.shape, dtype=dtype, device=src_mask.device).masked_fill(~src_mask, -1e9)
    return bias[:, None, None, :]


def encoder_stack(layers: nn.ModuleList, x: Tensor, bias: Tensor, dropout: nn.Module, pre_norm: bool) -> Tensor:
    """The encoder's self-attention and FFN sub-layers over ``x`` [B, S, d] (without the
    final LN of the pre-norm form); the Transformer and the hybrids' encoder both run it."""
    for layer in layers:
        x = sublayer(x, layer.norms[0], lambda y: layer.self_attn(y, *layer.self_attn.keys_values(y), bias)[0],
                     dropout, pre_norm)
        x = sublayer(x, layer.norms[1], layer.ffn, dropout, pre_norm)
    return x


@dataclass(frozen=True)
class TransformerOptions:
    ffn_size: Optional[int] = None  # inner size of the feed-forward layers (default 4 d_model)
    pre_norm: bool = False  # layer norm before each sub-layer instead of after
    tie_all_embeddings: bool = False  # source, target and output share one matrix (joint vocabulary)


@register("transformer", options=TransformerOptions, reads=("attention_heads", "enc_layers", "dec_layers"))
class Transformer(TranslationModel):
    def __init__(self, cfg: ModelConfig, src_vocab: int, tgt_vocab: int, options: TransformerOptions) -> None:
        super().__init__()
        d, heads = cfg.hidden_size, cfg.attention_heads
        if cfg.emb_size != d:
            raise UserError("transformer: model.emb_size must equal model.hidden_size (d_model)")
        if d % heads:
            raise UserError(f"transformer: {heads} attention heads do not divide d_model {d}")
        ffn = options.ffn_size or 4 * d
        self.pre_norm = options.pre_norm
        self.d_model = d
        self.src_embed = Embedding(src_vocab, d, zero_index=self.pad_id)
        self.tgt_embed = Embedding(tgt_vocab, d, zero_index=self.bos_id)
        if options.tie_all_embeddings:
            if src_vocab != tgt_vocab:
                raise UserError("model.options.tie_all_embeddings needs one joint vocabulary (data.vocab.joint: true)")
            self.tgt_embed.weight = self.src_embed.weight
        self.encoder = nn.ModuleList(EncoderLayer(d, heads, ffn, cfg.dropout) for _ in range(cfg.enc_layers))
        self.decoder = nn.ModuleList(DecoderLayer(d, heads, ffn, cfg.dropout) for _ in range(cfg.dec_layers))
        self.final_norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(2)) if self.pre_norm else None
        self.output = nn.Linear(d, tgt_vocab, bias=False)
        if cfg.tie_target_embeddings or options.tie_all_embeddings:
            self.output.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(cfg.dropout)

    def _sublayer(self, x: Tensor, norm: nn.LayerNorm, fn) -> Tensor:
        return sublayer(x, norm, fn, self.dropout, self.pre_norm)

    def _embed(self, table: Embedding, tokens: Tensor, positions: Tensor) -> Tensor:
        emb = table(tokens) * math.sqrt(self.d_model)
        return self.dropout(emb + positional_encoding(positions, self.d_model).to(emb.dtype))

    def encode(self, src: Tensor, src_mask: Tensor) -> TensorDict:
        positions = torch.arange(src.size(1), device=src.device).expand_as(src)
        x = self._embed(self.src_embed, src, positions)
        x = encoder_stack(self.encoder, x, padding_bias(src_mask, x.dtype), self.dropout, self.pre_norm)
        if self.pre_norm:
            x = self.final_norms[0](x)
        memory: TensorDict = {"src_mask": src_mask}
        for k, layer in enumerate(self.decoder):
            memory[f"ck{k}"], memory[f"cv{k}"] = layer.cross_attn.keys_values(x)
        return memory

    def init_state(self, memory: TensorDict) -> TensorDict:
        B = memory["src_mask"].size(0)
        like = memory["ck0"] if self.decoder else memory["src_mask"].float()
        state: TensorDict = {"position": torch.zeros(B, dtype=torch.long, device=like.device)}
        for k in range(len(self.decoder)):
            state[f"k{k}"] = like.new_zeros(B, 0, self.d_model)
            state[f"v{k}"] = like.new_zeros(B, 0, self.d_model)
        return state

    def _decode(self, x: Tensor, memory: TensorDict, self_kv, self_bias: Tensor | None):
        """Runs the decoder stack; ``self_kv(k, y)`` gives layer k's self-attention keys/values."""
        cross_bias = padding_bias(memory["src_mask"], x.dtype)
        weights = None
        for k, layer in enumerate(self.decoder):
            x = self._sublayer(x, layer.norms[0], lambda y: layer.self_attn(y, *self_kv(k, y), self_bias)[0])

            def cross(y: Tensor) -> Tensor:
                nonlocal weights
                out, weights = layer.cross_attn(y, memory[f"ck{k}"], memory[f"cv{k}"], cross_bias)
                return out

            x = self._sublayer(x, layer.norms[1], cross)
            x = self._sublayer(x, layer.norms[2], layer.ffn)
        if self.pre_norm:
            x = self.final_norms[1](x)
        return self.output(x), weights

    offers_step_logits = True

    def step(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict):
        logits, new, extras, _ = self.step_logits(prev_tokens, state, memory)
        return torch.log_softmax(logits.float(), dim=-1), new, extras

    def step_logits(self, prev_tokens: Tensor, state: TensorDict, memory: TensorDict) -> StepLogits:
        x = self._embed(self.tgt_embed, prev_tokens.unsqueeze(1), state["position"].unsqueeze(1))
        new: TensorDict = {"position": state["position"] + 1}

        def self_kv(k: int, y: Tensor):
            key, value = self.decoder[k].self_attn.keys_values(y)
            new[f"k{k}"] = torch.cat([state[f"k{k}"], key], 1)
            new[f"v{k}"] = torch.cat([state[f"v{k}"], value], 1)
            return new[f"k{k}"], new[f"v{k}"]

        logits, weights = self._decode(x, memory, self_kv, None)
        attention = weights.mean(1)[:, -1] if weights is not None else None
        extras = {"attention": attention} if attention is not None else {}
        return StepLogits(logits[:, -1], new, extras)

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor) -> Tensor:
        memory = self.encode(src, src_mask)
        T = tgt_in.size(1)
        positions = torch.arange(T, device=tgt_in.device).expand_as(tgt_in)
        x = self._embed(self.tgt_embed, tgt_in, positions)
        causal = torch.full((T, T), -1e9, dtype=x.dtype, device=x.device).triu(1)
        logits, _ = self._decode(x, memory, lambda k, y: self.decoder[k].self_attn.keys_values(y), causal)
        return logits
