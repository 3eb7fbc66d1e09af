"""Write the stored checkpoints that every later version of rnmt must still load and
translate exactly as they did when written (tests/integration/test_compat_checkpoints.py).

    python scripts/make_compat_checkpoints.py [--out tests/data/compat]

One tiny model per architecture (its paper config at 16 units, a 160-piece joint
vocabulary, 100 updates on 240 verses of the bundled sample, seed 1), saved as
``<name>.safetensors``, and ``expected.json``: the config each came from, the commit and
checkpoint format it was written with, its 3-best beam translations with scores of four
sample verses, and the per-token log-probabilities of their reference translations (forced
decoding: every weight of the model moves them). Run it only to add an architecture or a new format generation (keep the
old files: they are the point); a changed model must keep translating the old files as
recorded, or carry a migration. The files of format 1 hold the architecture keys at the top
of ``model:`` (before they moved into ``model.options``) and are what shows that the
migration to format 2 works: do not rewrite them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# architecture -> paper config (relative to configs/papers/)
SYSTEMS = {
    "rnnsearch": "cseq2seq/rnnsearch.yaml",
    "rnnsearch-minus": "cseq2seq/rnnsearch-minus.yaml",
    "atr-rnnsearch": "atr/rnnsearch-atr.yaml",
    "deep-rnnsearch": "atr/deep-rnnsearch.yaml",
    "cseq2seq1": "cseq2seq/cseq2seq1-ls.yaml",
    "cseq2seq2": "cseq2seq/cseq2seq2.yaml",
    "dtmt": "dtmt/dtmt4.yaml",
    "luong": "survey/luong-local-p.yaml",
    "seq2seq": "cseq2seq/seq2seq.yaml",
    "seq2seq-sutskever": "survey/seq2seq-sutskever.yaml",
    "transformer": "survey/transformer-base.yaml",
    "hybrid-transformer-dtmt": "survey/hybrid-transformer-dtmt.yaml",
}
SOURCES = ["Y dijo Dios: Sea la luz; y fue la luz.", "Y vio Dios que la luz era buena.",
           "En el principio creó Dios los cielos y la tierra.", "Amarás a tu prójimo como a ti mismo."]
REFERENCES = ["And God said, Let there be light: and there was light.", "And God saw the light, that it was good.",
              "In the beginning God created the heaven and the earth.", "Thou shalt love thy neighbour as thyself."]
# Per-architecture overrides that keep the file small (the Transformer's 2,048-wide FFN).
EXTRA = {"transformer": ["model.options.ffn_size=32"]}
SEARCH = {"beam": 4, "nbest": 3, "alpha": 0.6}
TINY = ["model.emb_size=16", "model.hidden_size=16", "data.vocab.size=160", "data.batch_tokens=600",
        "data.max_len=60", "train.max_steps=100", "train.validate_every=100", "train.log_every=100",
        "train.warmup_steps=5", "train.lr=0.005", "train.threads=1", "train.progress=false", "train.patience=null",
        "train.seed=1", "train.init_scale=0.1", "train.amp=none", "data.dev=null",
        # as when the stored files were written: Adam and halving from the first epoch, for every family
        "train.optimizer=adam", "train.halve_after_epoch=1", "train.max_epochs=null"]


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(REPO / "tests" / "data" / "compat"))
    ap.add_argument("--only", nargs="*", help="architectures to (re)write; default all")
    ap.add_argument("--keep-trained", action="store_true",
                    help="reuse a stored file that exists and only (re)compute its expected output")
    args = ap.parse_args()
    import rnmt
    from rnmt.io.checkpoint_files import FORMAT_VERSION

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    expected_path = out / "expected.json"
    expected = json.loads(expected_path.read_text(encoding="utf-8")) if expected_path.is_file() else {}
    sample = REPO / "data" / "sample"
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for lang in ("es", "en"):
            lines = (sample / f"train.{lang}").read_text(encoding="utf-8").splitlines()[:240]
            (corpus / f"train.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for name, config in SYSTEMS.items():
            if args.only and name not in args.only:
                continue
            run = Path(tmp) / name
            overrides = [*TINY, *EXTRA.get(name, [])]
            if not (args.keep_trained and (out / f"{name}.safetensors").is_file()):
                rnmt.train(f"configs/papers/{config}",
                           [f"data.train={corpus / 'train'}", "data.src=es", "data.tgt=en", *overrides],
                           out=str(run), log=lambda *_: None)
                shutil.copy(run / "best.safetensors", out / f"{name}.safetensors")
            model = rnmt.load(out / f"{name}.safetensors", device="cpu")
            nbest = model.translate(SOURCES, **SEARCH)
            forced = model.score(SOURCES, REFERENCES)
            expected[name] = {"config": f"configs/papers/{config}", "commit": commit(), "format": FORMAT_VERSION,
                              "overrides": overrides, "search": SEARCH, "sources": SOURCES, "references": REFERENCES,
                              "nbest": [[{"text": h.text, "score": round(h.score, 5)} for h in hyps] for hyps in nbest],
                              "reference_log_probs": [[round(x, 5) for x in s.token_log_probs] for s in forced]}
            # after every model: a failure later keeps what was written
            expected_path.write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"{name}: {nbest[0][0].text!r} ({(out / f'{name}.safetensors').stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
