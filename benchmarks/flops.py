"""Analytic FLOPs per target token of the models in the peer comparison.

Counting rules (the same for every model):

* only matrix products are counted, 2 FLOPs per multiply-add: a product of an
  ``[n, k]`` input with a ``[k, m]`` weight costs ``2 n k m``. Element-wise work (gates,
  tanh, softmax, adding biases), embedding look-ups and the loss are left out; they are a
  few percent of the total for these sizes and are not what a GEMM peak measures;
* a GRU step with input size x and hidden size h costs ``2 (x + h) 3h`` (three gates),
  an LSTM step ``2 (x + h) 4h``;
* work on the source side (encoder, projection of the attention keys) is counted per
  source token and converted to "per target token" with the corpus ratio
  ``src_per_tgt`` = (source tokens) / (target tokens), ``</s>`` included on both sides;
* attention costs per target token are proportional to the number of source positions
  it attends to; ``attn_src`` is the target-length-weighted mean source length,
  sum_k (S_k (T_k)) / sum_k T_k, again with ``</s>``;
* work done once per sentence (the decoder's initial state) is divided by the mean
  target length ``tgt_len``;
* the architecture's FLOPs are counted: a projection of the attention keys that the
  model can compute once per sentence is counted once per source token, even where an
  implementation recomputes it at every decoder step (OpenNMT-py's ``mlp`` attention
  does; :meth:`OpenNMTRNN.executed` gives that larger figure);
* one training step costs 3x the forward pass (the backward pass needs two products for
  each product of the forward pass: gradients of the inputs and of the weights).

``python -m benchmarks.flops [--stats DIR/stats.json]`` prints the breakdown per model.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Dict


def mm(n_in: int, n_out: int) -> int:
    """FLOPs of one vector through an ``n_in x n_out`` weight matrix."""
    return 2 * n_in * n_out


def gru(x: int, h: int) -> int:
    return mm(x, 3 * h) + mm(h, 3 * h)


def lstm(x: int, h: int) -> int:
    return mm(x, 4 * h) + mm(h, 4 * h)


def cell(kind: str, x: int, h: int) -> int:
    return {"gru": gru, "lstm": lstm}[kind](x, h)


@dataclass
class Corpus:
    """Length statistics (with ``</s>``) that the per-target-token counts need."""

    src_per_tgt: float = 1.0
    attn_src: float = 32.0
    tgt_len: float = 32.0

    @classmethod
    def from_stats(cls, stats: Dict, split: str = "train") -> Corpus:
        st = stats[split]
        return cls(src_per_tgt=st["src_per_tgt"], attn_src=st["attn_src_per_tgt"],
                   tgt_len=st["mean_tgt_len"] + 1)


class Model:
    name = "model"

    def source(self) -> Dict[str, int]:
        """FLOPs per source token."""
        raise NotImplementedError

    def sentence(self) -> Dict[str, int]:
        """FLOPs per sentence (decoder initial state)."""
        return {}

    def target(self, attn_src: float) -> Dict[str, float]:
        """FLOPs per target token, attending to ``attn_src`` positions."""
        raise NotImplementedError

    def breakdown(self, c: Corpus) -> Dict[str, float]:
        """Forward FLOPs per target token, by part."""
        out: Dict[str, float] = {}
        for k, v in self.source().items():
            out[k] = v * c.src_per_tgt
        for k, v in self.sentence().items():
            out[k] = v / c.tgt_len
        out.update(self.target(c.attn_src))
        return out

    def forward_per_token(self, c: Corpus) -> float:
        return sum(self.breakdown(c).values())

    def train_per_token(self, c: Corpus) -> float:
        return 3 * self.forward_per_token(c)


@dataclass
class RNNSearch(Model):
    """rnmt's RNNSearch (dl4mt): bi-RNN encoder (hidden d per direction), conditional
    two-level decoder unit, additive attention of size 2d, tanh readout of size E."""

    emb: int = 256
    hidden: int = 512
    vocab: int = 8000
    cell: str = "gru"
    name = "rnmt RNNSearch"

    def source(self):
        E, d = self.emb, self.hidden
        return {"encoder": 2 * cell(self.cell, E, d), "attention keys": mm(2 * d, 2 * d)}

    def sentence(self):
        return {"initial state": mm(2 * self.hidden, self.hidden)}

    def target(self, S):
        E, d, V, A = self.emb, self.hidden, self.vocab, 2 * self.hidden
        return {
            "decoder units": cell(self.cell, E, d) + cell(self.cell, 2 * d, d),
            "attention": mm(d, A) + S * (2 * A + 2 * 2 * d),  # query; scores and context
            "readout": mm(d, E) + mm(E, E) + mm(2 * d, E),
            "output layer": mm(E, V),
        }


@dataclass
class OpenNMTRNN(Model):
    """OpenNMT-py ``brnn`` + ``rnn`` decoder with input feeding and ``mlp`` attention.
    The encoder's hidden size H is split across directions (H/2 each), so the memory and
    the attention are of size H; no readout layer: the generator maps H to V."""

    emb: int = 256
    hidden: int = 512
    vocab: int = 8000
    cell: str = "gru"
    name = "OpenNMT-py"

    def source(self):
        E, H = self.emb, self.hidden
        return {"encoder": 2 * cell(self.cell, E, H // 2), "attention keys": mm(H, H)}

    def target(self, S):
        E, H, V = self.emb, self.hidden, self.vocab
        return {
            "decoder units": cell(self.cell, E + H, H),  # input feeding
            "attention": mm(H, H) + S * (2 * H + 2 * H) + mm(2 * H, H),  # query; scores, context; linear_out
            "output layer": mm(H, V),
        }

    def executed(self, c: Corpus) -> float:
        """Forward FLOPs per target token as OpenNMT-py runs them: its ``mlp`` attention
        projects every memory position again at every decoder step."""
        return self.forward_per_token(c) + c.attn_src * mm(self.hidden, self.hidden) \
            - c.src_per_tgt * mm(self.hidden, self.hidden)


@dataclass
class FairseqLSTM(Model):
    """fairseq ``lstm``: bi-LSTM encoder (h per direction, outputs 2h), LSTM decoder with
    input feeding, its one attention (query projected to 2h, dot product with the
    encoder outputs), ``output_proj`` to H, ``additional_fc`` to O when O != H, output layer."""

    emb: int = 256
    hidden: int = 512
    vocab: int = 8000
    out_emb: int = 256
    cell: str = "lstm"
    name = "fairseq LSTM"

    def source(self):
        return {"encoder": 2 * cell(self.cell, self.emb, self.hidden)}

    def sentence(self):
        H, M = self.hidden, 2 * self.hidden
        return {"initial state": 2 * mm(M, H)}  # encoder_hidden_proj, encoder_cell_proj

    def target(self, S):
        E, H, V, M, O = self.emb, self.hidden, self.vocab, 2 * self.hidden, self.out_emb
        parts = {
            "decoder units": cell(self.cell, E + H, H),
            "attention": mm(H, M) + S * (2 * M + 2 * M) + mm(H + M, H),  # input_proj; scores, context; output_proj
            "output layer": mm(O, V),
        }
        if O != H:
            parts["readout"] = mm(H, O)
        return parts


@dataclass
class JoeyRNN(Model):
    """JoeyNMT recurrent model: bi-RNN encoder (h per direction), ``bridge`` initial
    state, RNN decoder with input feeding and Bahdanau attention (keys projected once),
    attention vector layer ``tanh(W [s; c])`` of size H, output layer H to V."""

    emb: int = 256
    hidden: int = 512
    vocab: int = 8000
    cell: str = "gru"
    name = "JoeyNMT"

    def source(self):
        E, h, H = self.emb, self.hidden, self.hidden
        return {"encoder": 2 * cell(self.cell, E, h), "attention keys": mm(2 * h, H)}

    def sentence(self):
        return {"initial state": mm(2 * self.hidden, self.hidden)}

    def target(self, S):
        E, H, V, M = self.emb, self.hidden, self.vocab, 2 * self.hidden
        return {
            "decoder units": cell(self.cell, E + H, H),
            "attention": mm(H, H) + S * (2 * H + 2 * M) + mm(H + M, H),  # query; scores, context; att vector
            "output layer": mm(H, V),
        }


def default_models(emb: int = 256, hidden: int = 512, vocab: int = 8000) -> Dict[str, Model]:
    return {
        "rnmt": RNNSearch(emb, hidden, vocab, "gru"),
        "opennmt": OpenNMTRNN(emb, hidden, vocab, "gru"),
        "fairseq": FairseqLSTM(emb, hidden, vocab, emb, "lstm"),
        "joeynmt": JoeyRNN(emb, hidden, vocab, "gru"),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="FLOPs per target token of the compared models")
    p.add_argument("--stats", help="stats.json written by benchmarks/prepare.py (default: typical values)")
    p.add_argument("--emb", type=int, default=256)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--vocab", type=int, default=8000)
    args = p.parse_args(argv)
    c = Corpus.from_stats(json.load(open(args.stats))) if args.stats else Corpus()
    print(f"corpus: {c.src_per_tgt:.3f} source tokens per target token, {c.attn_src:.1f} attended "
          f"positions, {c.tgt_len:.1f} target tokens per sentence")
    for key, model in default_models(args.emb, args.hidden, args.vocab).items():
        parts = model.breakdown(c)
        print(f"\n{model.name} ({key})")
        for name, v in parts.items():
            print(f"  {name:<16} {v / 1e6:8.2f} MFLOP")
        print(f"  {'forward':<16} {model.forward_per_token(c) / 1e6:8.2f} MFLOP per target token")
        print(f"  {'training (x3)':<16} {model.train_per_token(c) / 1e6:8.2f} MFLOP per target token")
        if isinstance(model, OpenNMTRNN):
            print(f"  {'as executed':<16} {model.executed(c) / 1e6:8.2f} MFLOP forward (keys re-projected every step)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
