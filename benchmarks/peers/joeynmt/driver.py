"""JoeyNMT 2.3.0: bidirectional GRU encoder, GRU decoder with input feeding and
Bahdanau (additive) attention, ``bridge`` initial state.

The pieces are fed with ``level: word`` (JoeyNMT splits on spaces and does nothing else),
so its vocabulary is exactly the shared sentencepiece model's.

Throughput: every ``logging_freq`` updates JoeyNMT logs

    2026-01-01 10:00:00,123 - INFO - joeynmt.training - Epoch 1, Step: 30, Batch Loss: ...,
    Tokens per Sec: 812, Lr: ...

where "Tokens per Sec" is the real target tokens (``trg_mask.sum()``, ``</s>`` included) of
the interval over its duration. The duration is not printed, so it is taken from the
millisecond timestamps of consecutive log lines, and the interval's tokens are rate x
duration.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import List, Optional

from benchmarks.peers.base import Decoded, Peer, Settings, Window, count_output_tokens, window_from_intervals

STEP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*?Step:\s*(\d+), .*?Tokens per Sec:\s*([\d.]+)", re.M)
START = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*?(Train stats:|EPOCH 1\b)", re.M)


def _time(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


class JoeyNMT(Peer):
    name = "joeynmt"
    label = "JoeyNMT"
    package = "joeynmt"
    cell = "gru"

    def config(self, s: Settings) -> str:
        vocab = s.work / "vocab.txt"  # one piece per line, as JoeyNMT reads it
        pieces = [line.split(" ", 1)[0] for line in (s.data / "vocab.txt").read_text(encoding="utf-8").splitlines()]
        vocab.write_text("\n".join(pieces) + "\n", encoding="utf-8")
        tiny_dev = s.work / "dev"  # JoeyNMT wants a dev set; it is never used (no validation)
        for side in ("src", "tgt"):
            lines = (s.data / "pieces" / f"dev.{side}").read_text(encoding="utf-8").splitlines()[:2]
            Path(f"{tiny_dev}.{side}").write_text("\n".join(lines) + "\n", encoding="utf-8")
        side = lambda lang: (f"    lang: {lang}\n    level: word\n    lowercase: false\n    normalize: false\n"  # noqa: E731
                             f"    max_length: 100\n    voc_file: {vocab}\n")
        return f"""name: rnnsearch-gru-peer
model_dir: {s.work / 'model'}
use_cuda: false
fp16: false
num_workers: 0
seed: {s.seed}
data:
  train: {s.data / 'pieces' / 'train'}
  dev: {tiny_dev}
  dataset_type: plain
  src:
{side('src')}  trg:
{side('tgt')}
training:
  optimizer: adam
  adam_betas: [0.9, 0.999]
  learning_rate: 0.001
  scheduling: exponential   # JoeyNMT 2.3.0 needs a scheduler; factor 1.0 keeps the rate constant
  decrease_factor: 1.0
  loss: crossentropy
  label_smoothing: 0.1
  normalization: tokens
  clip_grad_norm: 5.0
  batch_size: {s.side_tokens}   # sentences x max(src, tgt) length, as OpenNMT-py
  batch_type: token
  batch_multiplier: 1
  updates: {s.total_steps}   # JoeyNMT 2.3.0 reads "updates" (not "max_updates")
  epochs: 1000
  logging_freq: {s.log_every}
  validation_freq: {s.total_steps * 100}
  early_stopping_metric: loss
  eval_metrics: []
  print_valid_sents: []
  keep_best_ckpts: 1
  shuffle: true
  overwrite: true
model:
  initializer: uniform
  init_weight: 0.08
  embed_initializer: uniform
  embed_init_weight: 0.08
  bias_initializer: zeros
  tied_embeddings: false
  tied_softmax: false
  encoder:
    type: recurrent
    rnn_type: gru
    embeddings:
      embedding_dim: {s.emb}
      scale: false
    hidden_size: {s.hidden}
    bidirectional: true
    dropout: {s.dropout}
    num_layers: 1
  decoder:
    type: recurrent
    rnn_type: gru
    embeddings:
      embedding_dim: {s.emb}
      scale: false
    hidden_size: {s.hidden}
    dropout: {s.dropout}
    hidden_dropout: {s.dropout}
    num_layers: 1
    input_feeding: true
    init_hidden: bridge
    attention: bahdanau
testing:
  beam_size: {s.beam}
  beam_alpha: 1.0
  batch_size: {s.batch_tokens}
  batch_type: token
  max_output_length: {s.max_output_len}
  n_best: 1
  eval_metrics: []
"""

    def train_command(self, s: Settings) -> List[str]:
        s.work.mkdir(parents=True, exist_ok=True)
        cfg = s.work / "config.yaml"
        cfg.write_text(self.config(s), encoding="utf-8")
        return [str(self.python), "-m", "joeynmt", "train", str(cfg), "--skip-test"]

    def train_window(self, s: Settings, log_text: str) -> Window:
        steps = [(_time(m.group(1)), int(m.group(2)), float(m.group(3))) for m in STEP.finditer(log_text)]
        intervals = []
        for (t0, _, _), (t1, step, rate) in zip(steps, steps[1:]):
            intervals.append((step, rate * (t1 - t0), t1 - t0))
        return window_from_intervals(intervals, s)

    def decode_command(self, s: Settings) -> List[str]:
        # JoeyNMT's translate mode reads standard input and, without -o, prints the
        # hypotheses on standard output (its log goes to standard error). Its -o option
        # fails in 2.3.0 (AttributeError: 'BaseConfig' object has no attribute 'n_best').
        import shlex

        cmd = [str(self.python), "-m", "joeynmt", "translate", str(s.work / "config.yaml")]
        return ["bash", "-c", " ".join(shlex.quote(c) for c in cmd) + " < " + shlex.quote(str(s.dev_source("pieces")))
                + " > " + shlex.quote(str(s.work / "dev.hyp"))]

    def decode_result(self, s: Settings, log_text: str) -> Decoded:
        m = re.findall(r"Generation took ([\d.]+)\[sec\]", log_text)
        if not m:
            raise RuntimeError("JoeyNMT printed no 'Generation took'")
        hyp = s.work / "dev.hyp"
        lines, tokens = count_output_tokens(hyp)
        return Decoded(seconds=float(m[-1]), sentences=lines, output_tokens=tokens, hypotheses=hyp)

    def parameters(self, s: Settings, log_text: str) -> Optional[int]:
        m = re.search(r"Total params: (\d+)", log_text)
        return int(m.group(1)) if m else None

    def flops_model(self, s: Settings):
        from benchmarks import flops

        return flops.JoeyRNN(emb=s.emb, hidden=s.hidden, vocab=s.stats["vocab_size"], cell="gru")


PEER = JoeyNMT()
