"""Request and response bodies of the HTTP API (they define its OpenAPI schema)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, create_model, model_validator
from typing_extensions import Annotated

from rnmt_runtime.serving.settings import ServeSettings


def make_translate_request(settings: ServeSettings, fields: Dict[str, Any]) -> type:
    """The body of ``POST /translate``, with this server's limits in its schema; ``fields``:
    ``{name: (annotation, pydantic Field)}`` of the search options it takes, with their bounds
    (rnmt's from `rnmt.search.options.server_fields`, the runtime's from
    `rnmt_runtime.serving.runtime`)."""
    Text = Annotated[str, StringConstraints(max_length=settings.max_chars)]

    SearchFields = create_model("SearchFields", __config__=ConfigDict(extra="forbid", strict=True),
                                **fields)  # type: ignore[call-overload]

    class TranslateRequest(SearchFields):  # type: ignore[misc, valid-type]
        """Give either ``text`` (one segment) or ``texts`` (several). Search options left out
        take the model's defaults; requests with equal options may be translated together."""

        # strict: JSON's true is not a beam of 1, nor "yes" a boolean (a whole number may still be a float)
        model_config = ConfigDict(extra="forbid", strict=True, title="TranslateRequest", json_schema_extra={
            "examples": [{"text": "En el principio creó Dios los cielos y la tierra."},
                         {"texts": ["Hola.", ""], "beam": min(4, settings.max_beam),
                          "nbest": min(2, settings.max_beam), "return_alignment": True}]})

        text: Optional[Text] = Field(None, description="one source segment")
        texts: Optional[List[Text]] = Field(None, max_length=settings.max_texts,
                                            description="source segments, translated in order")
        constraints: Optional[List[Union[Text, List[Text]]]] = Field(
            None, max_length=max(settings.max_constraints, settings.max_texts),
            description=f"target phrases every output must contain: with 'text' a list of phrases, with 'texts' "
                        f"one list of phrases per text ([] for none); at most {settings.max_constraints} phrases "
                        f"and {settings.max_constraint_tokens} target subwords per text")

        @model_validator(mode="after")
        def _one_input(self) -> TranslateRequest:
            if (self.text is None) == (self.texts is None):
                raise ValueError("give exactly one of 'text' and 'texts'")
            if self.constraints is not None:
                per_text = self.phrases()
                if len(per_text) != len(self.lines()):
                    raise ValueError(f"constraints: {len(per_text)} lists of phrases for {len(self.lines())} texts")
                for i, phrases in enumerate(per_text):
                    if len(phrases) > settings.max_constraints:
                        where = "" if self.text is not None else f" of text {i}"
                        raise ValueError(f"constraints: {len(phrases)} phrases{where}, the limit is "
                                         f"{settings.max_constraints} per text")
            return self

        def lines(self) -> List[str]:
            return [self.text] if self.text is not None else list(self.texts or [])

        def phrases(self) -> List[List[str]]:
            """One list of constraint phrases per text ([] each without constraints)."""
            return constraint_phrases(self.constraints, self.text is not None, len(self.lines()))

    return TranslateRequest


def constraint_phrases(given: Optional[list], one_text: bool, texts: int) -> List[List[str]]:
    """A request's ``constraints`` as one list of phrases per text (a list of phrases with
    ``text``, a list of lists with ``texts``; none: an empty list per text)."""
    if given is None:
        return [[] for _ in range(texts)]
    if one_text:
        if not all(isinstance(p, str) for p in given):
            raise ValueError("constraints: with 'text', give a list of phrases (strings)")
        return [list(given)]
    if not all(isinstance(p, list) for p in given):
        raise ValueError("constraints: with 'texts', give one list of phrases per text")
    return [list(p) for p in given]


class Alignment(BaseModel):
    """Attention weights of the best hypothesis: ``attention[i][j]`` is the weight of source
    token j when target token i was produced. Both token lists end with ``</s>``."""

    src_tokens: List[str]
    tgt_tokens: List[str]
    attention: List[List[float]]


class NBestHypothesis(BaseModel):
    """One entry of a response's n-best list."""

    text: str
    score: float


class TranslationResult(BaseModel):
    source: str
    text: str = Field(description="the best translation ('' for an empty source)")
    score: float = Field(description="search score of the best translation (higher is better)")
    nbest: Optional[List[NBestHypothesis]] = Field(None, description="the n best hypotheses, when nbest > 1")
    alignment: Optional[Alignment] = Field(None, description="when return_alignment is true")


class TranslateResponse(BaseModel):
    translations: List[TranslationResult]
    elapsed_ms: float = Field(description="time the request spent in the server, queueing included")


class ErrorResponse(BaseModel):
    error: str = Field(description="one line saying what is wrong")
    detail: Optional[Any] = Field(None, description="machine-readable details, when there are any")


class Health(BaseModel):
    status: str
    uptime_s: float
    pending: int = Field(description="requests waiting for the model")
    batching: Dict[str, Any]


class Limits(BaseModel):
    max_body_bytes: int
    max_texts: int
    max_chars: int
    max_beam: int
    max_constraints: int = Field(description="constraint phrases per text")
    max_constraint_tokens: int = Field(description="target subwords of one text's constraint phrases together")
    max_request_tokens: int = Field(description="source subwords per request (EOS marks included)")
    max_output_tokens: int = Field(description="longest output, whatever the source length")
    max_queue: int = Field(description="requests that may wait for the model")
    timeout_s: float = Field(description="seconds a request may take before it is answered 504")


class BatchingInfo(BaseModel):
    enabled: bool
    max_wait_ms: float
    max_batch_tokens: int
    max_batch_sentences: int


class OptionInfo(BaseModel):
    """One search option a request may give (`rnmt.search.options.describe`)."""

    name: str
    type: str = Field(description="integer, number, boolean or choice")
    default: Optional[Any] = Field(None, description="the value this model uses when the request leaves it out")
    help: str
    minimum: Optional[Union[int, float]] = None
    maximum: Optional[Union[int, float]] = None
    exclusive_minimum: bool = False
    exclusive_maximum: bool = False
    choices: Optional[List[str]] = None


class ModelInfo(BaseModel):
    name: str
    arch: str
    cell: Optional[str] = None
    source_language: Optional[str] = None
    target_language: Optional[str] = None
    parameters: Optional[Dict[str, int]] = Field(None, description="per component and 'total'")
    src_vocab_size: int
    tgt_vocab_size: int
    emb_size: int
    hidden_size: int
    step: Optional[int] = None
    dev_bleu: Optional[float] = None
    search: Dict[str, Any] = Field(description="default search options")
    shortlist: Optional[Dict[str, int]] = Field(
        None, description="the lexical shortlist searches run over (frequent, best per source subword); null: none")
    options: List[OptionInfo] = Field(description="the search options a request may give, with their bounds")
    device: str
    threads: int
    limits: Limits
    batching: BatchingInfo
