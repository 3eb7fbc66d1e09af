"""rnmt's model behind the HTTP API: `TranslationService` runs a loaded PyTorch model, and
`create_app` serves it with the application `rnmt_runtime.serving.http` builds (the same one
the runtime serves an export directory with).

`create_app` takes an already loaded model, so the model is loaded once, before the server
listens, and a bad model path never gets as far as starting a server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import torch
from fastapi import FastAPI

import rnmt
from rnmt.errors import UserError
from rnmt.models.base import reports_attention
from rnmt.models.loading import LoadedModel, count_parameters
from rnmt.search.beam import SearchStopped
from rnmt.search.options import describe, server_fields
from rnmt.search.shortlist import Shortlist
from rnmt.search.translator import Translation, Translator
from rnmt.serve.batcher import DynamicBatcher, SearchOptions
from rnmt.serve.settings import ServeSettings
from rnmt_runtime.serving import http

STATIC = Path(__file__).resolve().parent / "static"


def model_name(path: Path) -> str:
    path = Path(path)
    return path.parent.name if path.suffix == ".safetensors" and path.parent.name else path.name


def _result(source: str, nbest: List[Translation], options: SearchOptions) -> Dict[str, Any]:
    attention = nbest[0].attention
    return http.response_item(source, nbest, options,
                              None if attention is None else attention.detach().float().cpu().tolist())


class TranslationService:
    """The loaded model and its translator; `translate` runs in the model thread."""

    def __init__(self, loaded: LoadedModel, device: torch.device | str = "cpu") -> None:
        self.loaded = loaded
        self.device = torch.device(device)
        self.translator = Translator(loaded.model, loaded.src_vocab, loaded.tgt_vocab, loaded.config.search,
                                     self.device)
        self.parameters = count_parameters(loaded.model)
        self.has_attention = reports_attention(loaded.model, self.device)
        if loaded.config.search.coverage and not self.has_attention:
            raise UserError(f"{loaded.path}: its search.coverage ({loaded.config.search.coverage:g}) needs attention "
                            f"weights, which this model does not report")

    def cost(self, lines: List[str]) -> int:
        """Source subwords (plus EOS) of ``lines``: the batcher's token budget unit."""
        return sum(len(self.loaded.src_vocab.encode(line)) + 1 for line in lines if line.strip())

    max_output: Optional[int] = None  # absolute cap on output lengths
    stopped = SearchStopped  # what the search raises when told to stop
    threads: Optional[int] = None  # the model thread's torch threads (set by create_app)
    workers = 1  # batches at once: one (the model's caches are not audited for concurrent calls)

    def thread_init(self) -> None:
        if self.threads:
            torch.set_num_threads(self.threads)

    def model_info(self, settings: ServeSettings, batcher: DynamicBatcher) -> Dict[str, Any]:
        return _model_info(self.loaded, self, settings, batcher)

    def constraint_problem(self, phrases: List[List[str]], limit: int) -> Optional[str]:
        """Why these constraints (one list per text) cannot be searched for, or None."""
        tgt = self.loaded.tgt_vocab
        for i, line in enumerate(phrases):
            total = 0
            for k, phrase in enumerate(line):
                ids = tgt.encode(phrase) if phrase.strip() else []
                where = f"constraint {k} of text {i}"
                if not ids:
                    return f"{where} is empty"
                if tgt.unk_id in ids:
                    return f"{where} ({phrase!r}) holds characters the target vocabulary does not know"
                total += len(ids)
            if total > limit:
                return (f"the constraints of text {i} are {total} target subwords, the limit is {limit} per text "
                        f"(--max-constraint-tokens, and below --max-output-tokens)")
        return None

    def translate(self, lines: List[str], options: SearchOptions, should_stop=None,
                  constraints: Optional[List[List[str]]] = None) -> List[Dict[str, Any]]:
        with torch.inference_mode():
            results = self.translator.translate(lines, return_attention=options.return_alignment,
                                                beam=options.beam, alpha=options.alpha, nbest=options.nbest,
                                                coverage=options.coverage,
                                                no_repeat_ngram=options.no_repeat_ngram,
                                                min_output_tokens=options.min_output_tokens,
                                                max_output=self.max_output, should_stop=should_stop,
                                                constraints=constraints)
        return [_result(line, nbest, options) for line, nbest in zip(lines, results)]


def create_app(loaded: LoadedModel, settings: Optional[ServeSettings] = None,
               device: torch.device | str = "cpu", shortlist: Optional[Shortlist] = None) -> FastAPI:
    """The app serving ``loaded``; ``shortlist``: search every batch over it
    (`rnmt.search.shortlist`; sampling requests draw from the whole vocabulary)."""
    settings = (settings or ServeSettings()).check()
    service = TranslationService(loaded, device)
    service.translator.shortlist = shortlist
    service.threads = settings.threads
    return http.create_app(service, settings, server_fields(settings), rnmt.__version__, STATIC)


def _model_info(loaded: LoadedModel, service: TranslationService, settings: ServeSettings,
                batcher: DynamicBatcher) -> Dict[str, Any]:
    """``GET /model``: the model, its default search, the device and every limit a request meets."""
    cfg = loaded.config
    options = describe(settings, cfg.search)
    return {
        "name": model_name(loaded.path), "arch": cfg.model.arch, "cell": cfg.model.cell,
        "source_language": cfg.data.src, "target_language": cfg.data.tgt,
        "parameters": service.parameters, "src_vocab_size": loaded.src_vocab.size,
        "tgt_vocab_size": loaded.tgt_vocab.size, "emb_size": cfg.model.emb_size,
        "hidden_size": cfg.model.hidden_size,
        "step": loaded.meta.get("step"), "dev_bleu": loaded.meta.get("dev_bleu"),
        # each option's value when a request leaves it out (the same as "options"' defaults)
        "search": {item["name"]: item["default"] for item in options if item["name"] != "return_alignment"},
        "shortlist": None if service.translator.shortlist is None else service.translator.shortlist.sizes(),
        "options": options,
        "device": str(service.device), "threads": settings.threads or torch.get_num_threads(),
        **http.served_limits(settings, batcher),
    }


