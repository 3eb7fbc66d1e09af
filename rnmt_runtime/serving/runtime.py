"""An export directory behind the HTTP API: the service `rnmt_runtime.serving.http` serves
for ``rnmt serve --model EXPORT_DIR``, with the request fields of rnmt's server.

The fields and their bounds are rnmt serve's (`rnmt.search.options.server_fields`); the
options the runtime does not search with (constraints) are answered 422 with one line saying
so.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from rnmt_runtime.search import SearchStopped
from rnmt_runtime.translator import Options, Translator

UNSUPPORTED = "the runtime (an export directory) does not search with it; serve the checkpoint for it"


def request_fields(settings: Any, defaults: Any) -> Dict[str, Tuple[Any, Any]]:
    """``{name: (annotation, Field)}`` of the search options a request may give."""
    from pydantic import Field

    return {
        "beam": (Optional[int], Field(None, ge=1, le=settings.max_beam,
                                      description="beam size (1 = greedy; default from the model's config)")),
        "alpha": (Optional[float], Field(None, ge=0, allow_inf_nan=False,
                                         description="GNMT length penalty exponent (default from the model's config)")),
        "coverage": (Optional[float], Field(None, ge=0, le=10, allow_inf_nan=False,
                                            description="GNMT coverage penalty beta on beam search's finished "
                                                        "hypotheses (default from the model's config; 0: off)")),
        "nbest": (int, Field(1, ge=1, le=settings.max_beam, description="the N best translations of each text")),
        "no_repeat_ngram": (Optional[int], Field(None, ge=0, le=32, description="no output contains the same N "
                                                 "subwords twice (default from the model's config; 0: off)")),
        "min_output_tokens": (Optional[int], Field(None, ge=0, le=settings.max_output_tokens,
                                                   description="no output ends before N subwords")),
        "return_alignment": (bool, Field(False, description="return the attention matrix of the best hypothesis")),
    }


class RuntimeService:
    """The translator of an export directory, run in the server's model threads: ``workers``
    batches at once (onnxruntime's sessions may be run from several threads)."""

    max_output: Optional[int] = None
    stopped = SearchStopped

    def __init__(self, translator: Translator, workers: int = 1) -> None:
        self.translator = translator
        self.workers = workers
        self.has_attention = translator.model.reports_attention

    def thread_init(self) -> None:  # onnxruntime's threads are set when the sessions open
        pass

    def cost(self, lines: List[str]) -> int:
        return sum(len(self.translator.src_vocab.encode(line)) + 1 for line in lines if line.strip())

    def constraint_problem(self, phrases: List[List[str]], limit: int) -> Optional[str]:
        return f"not available: {UNSUPPORTED}"

    def translate(self, lines: List[str], options: Any, should_stop=None,
                  constraints: Optional[List[List[str]]] = None) -> List[Dict[str, Any]]:
        results = self.translator.translate(lines, Options(
            beam=options.beam, alpha=options.alpha, nbest=options.nbest or 1,
            min_output_tokens=options.min_output_tokens, no_repeat_ngram=options.no_repeat_ngram,
            coverage=options.coverage,
            max_output_tokens=self.max_output,
            max_input_tokens=2 ** 31 - 1,  # the server refuses long requests instead of splitting (413)
            return_attention=options.return_alignment, should_stop=should_stop))
        from rnmt_runtime.serving.http import response_item

        return [response_item(line, nbest, options, None if nbest[0].attention is None else nbest[0].attention.tolist())
                for line, nbest in zip(lines, results)]

    def model_info(self, settings: Any, batcher: Any) -> Dict[str, Any]:
        from rnmt_runtime import __version__
        from rnmt_runtime.serving import http

        m, d = self.translator.manifest, self.translator.defaults
        params = m.raw.get("params") if isinstance(m.raw.get("params"), dict) else {}
        options = [{"name": k, "type": t, "default": v, "help": "", "minimum": None, "maximum": None,
                    "exclusive_minimum": False, "exclusive_maximum": False, "choices": None}
                   for k, t, v in (("beam", "integer", d.beam), ("alpha", "number", d.alpha),
                                   ("nbest", "integer", 1), ("min_output_tokens", "integer", d.min_output_tokens),
                                   ("no_repeat_ngram", "integer", d.no_repeat_ngram),
                                   ("coverage", "number", d.coverage),
                                   ("return_alignment", "boolean", False))]
        return {
            "name": m.directory.name, "arch": m.architecture, "cell": m.raw.get("unit"),
            "source_language": m.raw.get("source_language"), "target_language": m.raw.get("target_language"),
            "parameters": None, "src_vocab_size": len(self.translator.src_vocab),
            "tgt_vocab_size": len(self.translator.tgt_vocab), "emb_size": int(params.get("emb_size", 0)),
            "hidden_size": int(params.get("hidden_size", 0)), "step": None, "dev_bleu": None,
            "search": {o["name"]: o["default"] for o in options if o["name"] != "return_alignment"},
            "shortlist": None if self.translator.shortlist is None else self.translator.shortlist.sizes(),
            "options": options, "device": f"cpu (onnxruntime, {m.precision}; rnmt-runtime {__version__})",
            "threads": settings.threads or 0,
            **http.served_limits(settings, batcher),
        }


def create_runtime_app(translator: Translator, settings: Any, workers: int = 1):
    """The FastAPI app serving ``translator``, ``workers`` batches at once (the page is rnmt
    serve's alone)."""
    from rnmt_runtime import __version__
    from rnmt_runtime.serving import http

    return http.create_app(RuntimeService(translator, workers), settings, request_fields(settings, translator.defaults),
                           __version__)
