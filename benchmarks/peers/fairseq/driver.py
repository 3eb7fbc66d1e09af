"""fairseq 0.12.2 ``lstm``: bidirectional LSTM encoder, LSTM decoder with input feeding
and fairseq's only attention for this architecture (the decoder state projected to the
encoder's size, dot product with the encoder outputs), decoder output projected to 256
before the output layer. fairseq has no GRU and no additive attention for RNNs; this is
its closest model.

Data: ``fairseq-preprocess`` binarises the shared pieces with the shared vocabulary
(``--srcdict vocab.txt --joined-dictionary``) into ``WORK/bin``; this is part of the
training command but not of the measured window.

Throughput: with ``--log-format json`` every ``--log-interval`` updates fairseq prints a
``train_inner`` record with ``wpb`` (real target tokens per update in the interval,
``</s>`` included) and ``wps`` (those tokens over the interval's wall-clock seconds), so an
interval of R updates holds ``R x wpb`` tokens and lasted ``R x wpb / wps`` seconds.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import List, Optional

from benchmarks.peers.base import Decoded, Peer, Settings, Window, window_from_intervals


class Fairseq(Peer):
    name = "fairseq"
    label = "fairseq"
    package = "fairseq"
    cell = "lstm"

    def env(self, s: Settings):
        env = super().env(s)
        env["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"  # fairseq checkpoints hold an argparse.Namespace
        return env

    def _dev_prefix(self, s: Settings) -> Path:
        """The dev pairs to decode (all, or the first --dev-sentences), as WORK/dev.{src,tgt}."""
        prefix = s.work / "dev"
        for side in ("src", "tgt"):
            lines = (s.data / "pieces" / f"dev.{side}").read_text(encoding="utf-8").splitlines()
            if s.dev_sentences:
                lines = lines[: s.dev_sentences]
            Path(f"{prefix}.{side}").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return prefix

    def train_command(self, s: Settings) -> List[str]:
        s.work.mkdir(parents=True, exist_ok=True)
        py = str(self.python)
        preprocess = [py, "-m", "fairseq_cli.preprocess", "--source-lang", "src", "--target-lang", "tgt",
                      "--trainpref", str(s.data / "pieces" / "train"), "--validpref", str(self._dev_prefix(s)),
                      "--destdir", str(s.work / "bin"), "--srcdict", str(s.data / "vocab.txt"),
                      "--joined-dictionary", "--workers", "1"]
        train = [py, "-m", "fairseq_cli.train", str(s.work / "bin"), "--task", "translation",
                 "--source-lang", "src", "--target-lang", "tgt",
                 "--arch", "lstm", "--encoder-embed-dim", str(s.emb), "--encoder-hidden-size", str(s.hidden),
                 "--encoder-layers", "1", "--encoder-bidirectional",
                 "--decoder-embed-dim", str(s.emb), "--decoder-hidden-size", str(s.hidden),
                 "--decoder-layers", "1", "--decoder-out-embed-dim", str(s.emb), "--decoder-attention", "True",
                 "--dropout", str(s.dropout),
                 "--optimizer", "adam", "--adam-betas", "(0.9, 0.999)", "--lr", "0.001", "--lr-scheduler", "fixed",
                 "--clip-norm", "5", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
                 # sentences x max(src, tgt) length, as OpenNMT-py and JoeyNMT
                 "--max-tokens", str(s.side_tokens), "--required-batch-size-multiple", "1",
                 "--max-update", str(s.total_steps), "--log-interval", str(s.log_every), "--log-format", "json",
                 "--disable-validation", "--save-dir", str(s.work / "checkpoints"), "--no-epoch-checkpoints",
                 *self.device_flags(s), "--num-workers", "0", "--seed", str(s.seed), "--no-progress-bar"]
        script = " && ".join(" ".join(shlex.quote(c) for c in cmd) for cmd in (preprocess, train))
        return ["bash", "-c", script]

    def train_window(self, s: Settings, log_text: str) -> Window:
        intervals = []
        for line in log_text.splitlines():
            at = line.find("{")
            if "train_inner" not in line or at < 0:
                continue
            try:
                rec = json.loads(line[at:])
            except json.JSONDecodeError:
                continue
            step, wpb, wps = int(rec["num_updates"]), float(rec["wpb"]), float(rec["wps"])
            n = s.log_every if step % s.log_every == 0 else step % s.log_every
            intervals.append((step, wpb * n, wpb * n / wps if wps else float("nan")))
        return window_from_intervals(intervals, s)

    def decode_command(self, s: Settings) -> List[str]:
        return [str(self.python), "-m", "fairseq_cli.generate", str(s.work / "bin"),
                "--path", str(s.work / "checkpoints" / "checkpoint_last.pt"), "--gen-subset", "valid",
                "--source-lang", "src", "--target-lang", "tgt",
                "--beam", str(s.beam), "--max-tokens", str(s.batch_tokens), "--max-len-a", "1.5", "--max-len-b", "10",
                *self.device_flags(s), "--num-workers", "0", "--seed", str(s.seed), "--no-progress-bar"]

    @staticmethod
    def device_flags(s: Settings) -> List[str]:
        """``--cpu`` on the CPU; on a GPU nothing, or ``--fp16`` (fp16 weights and activations,
        fp32 master weights, dynamic loss scaling) for the half-precision rows of
        benchmarks/gpu.py. fairseq 0.12.2's ``--bf16`` implies ``--tpu`` (options.py) and so
        needs torch_xla: it has no bf16 on a GPU."""
        if s.device == "cpu":
            return ["--cpu"]
        return ["--fp16"] if s.precision == "fp16" else []

    def decode_result(self, s: Settings, log_text: str) -> Decoded:
        m = re.search(r"Translated ([\d,]+) sentences \(([\d,]+) tokens\) in ([\d.]+)s", log_text)
        if not m:
            raise RuntimeError("fairseq printed no 'Translated ... sentences' line")
        hyps = {}
        for line in log_text.splitlines():
            if line.startswith("H-"):
                parts = line.split("\t")
                hyps[int(parts[0][2:])] = parts[2] if len(parts) > 2 else ""
        hyp = s.work / "dev.hyp"
        hyp.write_text("".join(hyps[i] + "\n" for i in sorted(hyps)), encoding="utf-8")
        tokens = sum(len(h.split()) for h in hyps.values())
        return Decoded(seconds=float(m.group(3)), sentences=len(hyps), output_tokens=tokens, hypotheses=hyp)

    def parameters(self, s: Settings, log_text: str) -> Optional[int]:
        m = re.search(r"num\. (?:shared )?model params: ([\d,]+)", log_text)
        return int(m.group(1).replace(",", "")) if m else None

    def flops_model(self, s: Settings):
        from benchmarks import flops

        return flops.FairseqLSTM(emb=s.emb, hidden=s.hidden, vocab=s.stats["vocab_size"], out_emb=s.emb, cell="lstm")


PEER = Fairseq()
