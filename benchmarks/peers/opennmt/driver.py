"""OpenNMT-py 3.5.1: bidirectional GRU encoder, GRU decoder with input feeding and
additive ("mlp") attention.

Throughput is read from OpenNMT-py's own report lines, one per ``report_every`` updates::

    Step 30/  220; acc: ...; sents: 1234; bsz: 1400/1450/45; 1633/1690 tok/s; 27 sec;

``bsz`` gives the mean source/target/sentence count per batch of the interval and
``tok/s`` the source/target tokens per second of the interval; both count the tokens of the
loss, i.e. non-padding target tokens including ``</s>``. An interval of R updates therefore
holds ``R x bsz_tgt`` target tokens and lasted ``R x bsz_tgt / tgt_tok_s`` seconds (wall
clock between two reports, data loading included).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional

from benchmarks.peers.base import Decoded, Peer, Settings, Window, count_output_tokens, window_from_intervals

REPORT = re.compile(r"Step\s+(\d+)/\s*\d+;.*?bsz:\s*([\d.]+)/\s*([\d.]+)/\s*([\d.]+);\s*([\d.]+)/\s*([\d.]+) tok/s")


class OpenNMT(Peer):
    name = "opennmt"
    label = "OpenNMT-py"
    package = "OpenNMT-py"
    cell = "gru"

    def config(self, s: Settings) -> str:
        d = s.data
        lines = [
            f"save_model: {s.work / 'model'}",
            f"save_data: {s.work / 'data'}",
            f"src_vocab: {d / 'vocab.txt'}",
            "share_vocab: true",
            "src_vocab_size: 100000",
            "src_words_min_frequency: 0",
            "data:",
            "  train:",
            f"    path_src: {d / 'pieces' / 'train.src'}",
            f"    path_tgt: {d / 'pieces' / 'train.tgt'}",
            "",
            "# model: the closest OpenNMT-py has to RNNSearch-GRU",
            "encoder_type: brnn",  # hidden_size is split: 2 x hidden/2
            "decoder_type: rnn",
            "rnn_type: GRU",
            "enc_layers: 1",
            "dec_layers: 1",
            f"word_vec_size: {s.emb}",
            f"hidden_size: {s.hidden}",
            "global_attention: mlp",  # Bahdanau's additive attention
            "input_feed: 1",
            "bridge: false",
            f"dropout: [{s.dropout}]",
            "attention_dropout: [0.0]",
            "",
            "# optimisation",
            "optim: adam",
            "adam_beta1: 0.9",
            "adam_beta2: 0.999",
            "learning_rate: 0.001",
            "decay_method: none",
            "max_grad_norm: 5",
            "label_smoothing: 0.1",
            "param_init: 0.08",
            "batch_type: tokens",
            f"batch_size: {s.side_tokens}",  # sentences x max(src, tgt) length
            "normalization: tokens",
            "accum_count: [1]",
            "num_workers: 0",
            f"seed: {s.seed}",
            f"train_steps: {s.total_steps}",
            f"save_checkpoint_steps: {s.total_steps}",
            f"valid_steps: {s.total_steps + 1000}",
            f"report_every: {s.log_every}",
            "world_size: 1",
            # 3.5.1 offers fp32 and fp16 (autocast with loss scaling) only: no bf16
            f"model_dtype: {'fp16' if s.precision == 'fp16' else 'fp32'}",
        ]
        if s.device != "cpu":
            lines.append("gpu_ranks: [0]")
        return "\n".join(lines) + "\n"

    def env(self, s: Settings):
        env = super().env(s)
        env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"  # OpenNMT-py checkpoints hold Python objects
        return env

    def train_command(self, s: Settings) -> List[str]:
        s.work.mkdir(parents=True, exist_ok=True)
        cfg = s.work / "train.yaml"
        cfg.write_text(self.config(s), encoding="utf-8")
        return [str(self.python), "-m", "onmt.bin.train", "-config", str(cfg)]

    def train_window(self, s: Settings, log_text: str) -> Window:
        intervals = []
        for m in REPORT.finditer(log_text):
            step, bsz_tgt, tgt_rate = int(m.group(1)), float(m.group(3)), float(m.group(6))
            n = s.log_every if step % s.log_every == 0 else step % s.log_every
            tokens = bsz_tgt * n
            intervals.append((step, tokens, tokens / tgt_rate if tgt_rate else float("nan")))
        return window_from_intervals(intervals, s)

    def checkpoint(self, s: Settings) -> Path:
        return s.work / f"model_step_{s.total_steps}.pt"

    def decode_command(self, s: Settings) -> List[str]:
        return [str(self.python), "-m", "onmt.bin.translate", "-model", str(self.checkpoint(s)),
                "-src", str(s.dev_source("pieces")), "-output", str(s.work / "dev.hyp"),
                "-beam_size", str(s.beam), "-batch_type", "tokens", "-batch_size", str(s.batch_tokens),
                "-max_length", str(s.max_output_len), "-report_time",
                "-gpu", "-1" if s.device == "cpu" else "0", "-seed", str(s.seed)]

    def decode_result(self, s: Settings, log_text: str) -> Decoded:
        m = re.search(r"Total translation time \(s\): ([\d.]+)", log_text)
        if not m:
            raise RuntimeError("OpenNMT-py printed no 'Total translation time'")
        hyp = s.work / "dev.hyp"
        lines, tokens = count_output_tokens(hyp)
        return Decoded(seconds=float(m.group(1)), sentences=lines, output_tokens=tokens, hypotheses=hyp)

    def parameters(self, s: Settings, log_text: str) -> Optional[int]:
        m = re.search(r"\* number of parameters: (\d+)", log_text)
        return int(m.group(1)) if m else None

    def flops_model(self, s: Settings):
        from benchmarks import flops

        return flops.OpenNMTRNN(emb=s.emb, hidden=s.hidden, vocab=s.stats["vocab_size"], cell="gru")


PEER = OpenNMT()
