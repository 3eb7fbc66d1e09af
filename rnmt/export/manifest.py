"""manifest.json of an export directory: what a reader needs to translate as `rnmt translate`
does, with no code in it (docs/export-format.md).

The text side is sentencepiece's own ids: rnmt's vocabularies are sentencepiece models whose
special ids are pad 0, unk 1, bos 2, eos 3 (`rnmt.data.vocab`), and a line is encoded with
``EncodeAsIds`` as given. The search settings are the checkpoint's ``search:`` section and
the command's defaults for what that section does not hold (the output cap and the
long-line split, `rnmt.search.limits`).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict

import rnmt
from rnmt.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from rnmt.export.graphs import Signature
from rnmt.export.writing import OUTPUT_LAYER_FILES, graph_files
from rnmt.models.loading import LoadedModel
from rnmt.models.options import options_dict
from rnmt.models.registry import check_model_config
from rnmt.search.limits import MAX_OUTPUT_TOKENS, default_input_limit
from rnmt_runtime.manifest import file_sha256

FORMAT = "rnmt-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"

TEXT = {
    "ids": "sentencepiece",  # a piece's id is its sentencepiece id: no separate token table
    "encode": "sentencepiece EncodeAsIds of the line as given (no sampling, no <s>/</s> from sentencepiece)",
    "source_eos": True,  # every source segment gets </s> (eos) appended before the encoder
    "blank_lines": "a line with only whitespace is not translated: its translation is the empty string",
    "decode": "drop <pad> and <s>, stop at the first </s>, sentencepiece DecodeIds",
    "masked_in_search": ["pad", "bos"],  # their log-probabilities are -inf at every step of the search
}


def search_defaults(loaded: LoadedModel) -> Dict[str, Any]:
    """`rnmt translate`'s settings with no search flags: the checkpoint's ``search:``
    section, the output cap and the source length above which a line is split."""
    search = asdict(loaded.config.search)
    ratio, offset = search["max_len_ratio"], search["max_len_offset"]
    return {
        **search,
        "greedy_when_beam_is": 1,
        "length_penalty": {"gnmt": "((5 + |Y|) / 6) ** alpha", "length": "|Y|", "none": "1",
                           "applies_to": "finished hypotheses: log P / lp, |Y| counts </s>"},
        "max_output_tokens": MAX_OUTPUT_TOKENS,
        "max_length_rule": "min(floor(source_len * max_len_ratio) + max_len_offset, max_output_tokens), at least 1; "
                           "source_len counts the appended </s>, the output length counts its </s>",
        "max_input_tokens": default_input_limit(ratio, offset, MAX_OUTPUT_TOKENS),
        "split_rule": "a source of more than max_input_tokens subwords (</s> included) is cut into pieces of at "
                      "most max_input_tokens - 1 subwords: after the last sentence end in the second half of the "
                      "window whose next piece starts a word, else before the last word start in it, else at the "
                      "window's end (rnmt.search.limits.split_source); the pieces' translations are joined with a "
                      "space and their scores averaged",
    }


def vocab_files(loaded: LoadedModel) -> Dict[str, str]:
    if loaded.src_vocab == loaded.tgt_vocab:
        return {"src": "spm.model", "tgt": "spm.model"}
    return {"src": "src.spm.model", "tgt": "tgt.spm.model"}


def build_manifest(loaded: LoadedModel, sig: Signature, fingerprint: str, opset: int, precision: str,
                   files: Dict[str, str], parity: Dict[str, float], shortlists: bool = False) -> Dict[str, Any]:
    cfg = loaded.config.model
    # with shortlists: the output layer beside graphs.readout (the step without it), a shortlist's rows taken from it
    extra = {"output_layer": dict(OUTPUT_LAYER_FILES)} if shortlists else {}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "architecture": cfg.arch,
        "unit": None if cfg.arch == "transformer" else cfg.cell,
        # the checkpoint's whole model: section (enc_cell, dec_cell, sizes, the options with their defaults)
        "params": {**asdict(cfg), "src_vocab_size": loaded.src_vocab.size, "tgt_vocab_size": loaded.tgt_vocab.size,
                   "options": options_dict(check_model_config(cfg))},
        "special_ids": {"pad": PAD_ID, "unk": UNK_ID, "bos": BOS_ID, "eos": EOS_ID},
        "vocab": vocab_files(loaded),
        "text": TEXT,
        "graphs": graph_files(shortlists),
        **extra,
        "memory": list(sig.memory),
        "state": list(sig.state),
        "attention": sig.attention,
        "beam_shares_memory": sig.beam_shares_memory,
        "search_defaults": search_defaults(loaded),
        "fingerprint": fingerprint,
        "source_checkpoint": Path(loaded.path).name,
        "rnmt_version": rnmt.__version__,
        "opset": opset,
        "precision": precision,
        "parity": parity,  # largest |onnxruntime - PyTorch| per graph, checked at export (rnmt.export.parity)
        "files": files,
    }


def file_hashes(directory: Path) -> Dict[str, str]:
    """``{name: sha256}`` of every file in ``directory`` but the manifest."""
    return {p.name: file_sha256(p)
            for p in sorted(directory.iterdir()) if p.is_file() and p.name != MANIFEST}
