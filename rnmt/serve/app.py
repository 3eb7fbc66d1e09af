"""The FastAPI application: ``POST /translate``, ``GET /health``, ``GET /model`` and the page.

`create_app` takes an already loaded model, so the model is loaded once, before the server
listens, and a bad model path never gets as far as starting a server. Every error, whatever
its status, is a JSON object with a one-line ``error``; the bounds a request meets are
listed in docs/serving.md ("Limits and guarantees").
"""


import asyncio
import json
import math
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

import rnmt
from rnmt.data.vocab import EOS
from rnmt.errors import UserError
from rnmt.models.base import reports_attention
from rnmt.models.loading import LoadedModel, count_parameters
from rnmt.search.beam import SearchStopped
from rnmt.search.options import describe
from rnmt.search.translator import Translation, Translator
from rnmt.serve.batcher import DynamicBatcher, Expired, QueueFull, SearchOptions, ShuttingDown
from rnmt.serve.guards import BearerToken, ConcurrencyLimit, TrustedHosts
from rnmt.serve.schemas import (
    ErrorResponse,
    Health,
    ModelInfo,
    TranslateResponse,
    make_translate_request,
)
from rnmt.serve.settings import ServeSettings

STATIC = Path(__file__).resolve().parent / "static"
ERRORS = {400: {"model": ErrorResponse, "description": "the Host header names another server"},
          401: {"model": ErrorResponse, "description": "missing or wrong API key (with --api-key)"},
          413: {"model": ErrorResponse, "description": "body, number of texts, a text or the request's "
                                                        "subword count too large"},
          422: {"model": ErrorResponse, "description": "malformed JSON, invalid fields, or constraints over "
                                                        "their limits or not spellable in the target vocabulary"},
          500: {"model": ErrorResponse, "description": "the model failed on this request"},
          503: {"model": ErrorResponse, "description": "queue full, too many requests in progress or "
                                                        "shutting down (see Retry-After)"},
          504: {"model": ErrorResponse, "description": "the translation did not finish in time"}}
RETRY_AFTER = "1"


def model_name(path: Path) -> str:
    path = Path(path)
    return path.parent.name if path.suffix == ".safetensors" and path.parent.name else path.name


def _round(x: float) -> float:
    return round(float(x), 5) if math.isfinite(x) else 0.0


def _result(source: str, nbest: List[Translation], options: SearchOptions) -> Dict[str, Any]:
    """One response item, built in the model thread so the event loop stays free."""
    best = nbest[0]
    item: Dict[str, Any] = {"source": source, "text": best.text, "score": _round(best.score)}
    if (options.nbest or 1) > 1:
        item["nbest"] = [{"text": t.text, "score": _round(t.score)} for t in nbest]
    if options.return_alignment:
        if best.attention is None:  # an empty source
            item["alignment"] = {"src_tokens": [], "tgt_tokens": [], "attention": []}
        else:
            att = best.attention.detach().float().cpu()
            item["alignment"] = {
                "src_tokens": list(best.src_pieces) + [EOS],
                "tgt_tokens": list(best.tgt_pieces) + [EOS],
                "attention": [[round(v, 4) for v in row] for row in att.tolist()],
            }
    return item


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


def too_large_body(size: int, limit: int) -> Dict[str, Any]:
    return {"error": f"request body too large: at least {size} bytes, the limit is {limit} bytes",
            "detail": {"limit_bytes": limit}}


class BodyReader:
    """Reads the whole request body, at most ``limit`` bytes (413 above), before the app behind it runs.

    The in-progress limit behind it then counts only requests that have fully arrived: a client
    that stalls mid-body waits here, where the server's arrival deadline ends it, without
    holding a slot that complete requests need.
    """

    def __init__(self, app, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._reject(send, int(declared))
            return
        chunks: List[bytes] = []
        received = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left, or was closed for sending too slowly: nobody to answer
            chunks.append(message.get("body", b""))
            received += len(chunks[-1])
            if received > self.limit:
                await self._reject(send, received)
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, replay(b"".join(chunks), receive), send)

    async def _reject(self, send, size: int) -> None:
        body = json.dumps(too_large_body(size, self.limit)).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def replay(body: bytes, receive):
    """An ASGI ``receive`` that returns ``body`` as one message, then defers to ``receive``
    (which reports the client's disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive_again():
        return pending.pop() if pending else await receive()

    return receive_again


def _summary(errors: List[Dict[str, Any]]) -> str:
    """One line for the first validation error, e.g. ``texts.2: String should have at most 5 characters``."""
    if not errors:
        return "invalid request"
    first = errors[0]
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "")
        where = [part for part in first.get("loc", ()) if isinstance(part, int)]
        at = f" at character {where[0]}" if where else ""
        return f"malformed JSON{at}: {reason}" if reason else f"malformed JSON{at}"
    if first.get("type") in ("model_attributes_type", "dict_type") and tuple(first.get("loc", ())) == ("body",):
        return "the request body must be a JSON object (Content-Type: application/json) with 'text' or 'texts'"
    loc = [str(part) for part in first.get("loc", ()) if part != "body"]
    msg = str(first.get("msg", "invalid value"))
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return (f"{'.'.join(loc)}: {msg}" if loc else msg) + more


def create_app(loaded: LoadedModel, settings: Optional[ServeSettings] = None,
               device: torch.device | str = "cpu") -> FastAPI:
    settings = (settings or ServeSettings()).check()
    service = TranslationService(loaded, device)
    service.max_output = settings.max_output_tokens
    batcher = _batcher(service, settings)
    started = time.monotonic()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await batcher.start()
        try:
            yield
        finally:
            await batcher.stop()

    app = FastAPI(title="rnmt translation server", version=rnmt.__version__,
                  description="Neural machine translation with a recurrent model. Concurrent requests with equal "
                              "search options are batched together.", lifespan=lifespan,
                  docs_url=None, redoc_url=None)  # FastAPI's doc pages load scripts from a CDN
    app.state.service = service
    app.state.batcher = batcher
    app.state.settings = settings
    _add_guards(app, settings)
    _add_error_handlers(app)
    TranslateRequest = make_translate_request(settings)

    @app.post("/translate", response_model=TranslateResponse, response_model_exclude_none=True,
              responses=ERRORS, summary="Translate one or more segments")
    async def translate(body: TranslateRequest, request: Request):  # type: ignore[valid-type]
        t0 = time.perf_counter()
        lines = body.lines()
        if not any(line.strip() for line in lines):  # nothing for the model to do
            return {"translations": _blank_items(lines, body), "elapsed_ms": _elapsed_ms(t0)}
        cost = service.cost(lines)
        constrained = body.constraints is not None and any(body.phrases())
        phrases = body.phrases() if constrained else None
        refused = _refusal(service, settings, cost, phrases, body.return_alignment or bool(body.coverage))
        if refused is not None:
            return refused
        options = SearchOptions(beam=body.beam, alpha=body.alpha, coverage=body.coverage, nbest=body.nbest,
                                no_repeat_ngram=body.no_repeat_ngram, min_output_tokens=body.min_output_tokens,
                                return_alignment=body.return_alignment, constrained=constrained)
        items = await _translated(request, batcher, settings, lines, options, cost, phrases)
        if isinstance(items, Response):
            return items
        return {"translations": items, "elapsed_ms": _elapsed_ms(t0)}

    @app.get("/health", response_model=Health, summary="Liveness and queue state",
             responses={503: {"model": Health, "description": "the translation worker is stopped or stopping"}})
    async def health():
        status = "stopping" if batcher.closing else "ok" if batcher.running else "stopped"
        body = {"status": status, "uptime_s": round(time.monotonic() - started, 3),
                "pending": batcher.pending, "batching": {"enabled": settings.batching, **batcher.stats.as_dict()}}
        return body if status == "ok" else JSONResponse(body, status_code=503)

    @app.get("/model", response_model=ModelInfo, summary="The model being served")
    async def model_info():
        return _model_info(loaded, service, settings, batcher)

    @app.get("/", include_in_schema=False)
    async def index():
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def _batcher(service: TranslationService, settings: ServeSettings) -> DynamicBatcher:
    """The one model thread and its queue; without batching, one request per batch."""
    def thread_init() -> None:
        if settings.threads:
            torch.set_num_threads(settings.threads)

    return DynamicBatcher(service.translate, batching=settings.batching,
                          max_wait_ms=settings.max_wait_ms if settings.batching else 0.0,
                          max_batch_tokens=settings.max_batch_tokens,
                          max_batch_sentences=settings.max_batch_sentences if settings.batching else 1,
                          thread_init=thread_init, max_queue=settings.max_queue)


def _add_guards(app: FastAPI, settings: ServeSettings) -> None:
    # Added last runs first: host check, API key, the whole body read, then the in-progress limit.
    app.add_middleware(ConcurrencyLimit, limit=settings.max_connections)
    app.add_middleware(BodyReader, limit=settings.max_body_bytes)
    if settings.api_key:
        app.add_middleware(BearerToken, key=settings.api_key)
    if settings.allowed_hosts:
        app.add_middleware(TrustedHosts, hosts=settings.allowed_hosts)


def _add_error_handlers(app: FastAPI) -> None:
    """Every error as a JSON object with a one-line ``error``."""
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = jsonable_encoder(exc.errors(), custom_encoder={Exception: str})
        for e in errors:
            e.pop("input", None)  # do not echo (possibly huge) inputs back
            e.pop("url", None)
        return JSONResponse({"error": _summary(errors), "detail": errors}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        unreadable = _unreadable_body(exc)
        if unreadable is not None:
            return JSONResponse({"error": f"malformed JSON: {unreadable}"}, status_code=422)
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": f"internal error: {_first_line(exc)}"}, status_code=500)


def _unreadable_body(exc: StarletteHTTPException) -> Optional[str]:
    """Why FastAPI could not read a body as JSON, for the 400 it raises when the reason is
    not a plain syntax error (bytes that are not UTF-8, nesting deeper than the parser's
    recursion): such a body is malformed JSON, 422 like any other (docs/serving.md)."""
    cause = exc.__cause__
    if exc.status_code != 400 or cause is None:
        return None
    if isinstance(cause, UnicodeDecodeError):
        return f"the body is not UTF-8 (byte {cause.start})"
    if isinstance(cause, RecursionError):
        return "nested too deeply"
    return _first_line(cause)


def _first_line(exc: BaseException) -> str:
    first = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"


def _elapsed_ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _unavailable(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=503, headers={"Retry-After": RETRY_AFTER})


def _blank_items(lines: List[str], body: Any) -> List[Dict[str, Any]]:
    """The response items of a request whose every line is blank, shaped as the options ask."""
    items: List[Dict[str, Any]] = [{"source": line, "text": "", "score": 0.0} for line in lines]
    for item in items:
        if body.return_alignment:
            item["alignment"] = {"src_tokens": [], "tgt_tokens": [], "attention": []}
        if (body.nbest or 1) > 1:
            item["nbest"] = [{"text": "", "score": 0.0}]
    return items


def _refusal(service: TranslationService, settings: ServeSettings, cost: int,
             phrases: Optional[List[List[str]]], needs_attention: bool) -> Optional[JSONResponse]:
    """The response refusing a request over the subword limit, with constraints the limits
    or the target vocabulary do not allow, or asking for attention weights the model does not
    report; None for a request the model may take."""
    if needs_attention and not service.has_attention:
        return JSONResponse({"error": "this model reports no attention weights, which return_alignment and "
                                      "coverage need"}, status_code=422)
    if cost > settings.max_request_tokens:
        return JSONResponse({"error": f"request too large: {cost} source subwords (end-of-sentence marks "
                                      f"included), the limit is {settings.max_request_tokens} per request; "
                                      f"split it into several requests",
                             "detail": {"subwords": cost, "limit_subwords": settings.max_request_tokens}},
                            status_code=413)
    if phrases is not None:
        limit = min(settings.max_constraint_tokens, settings.max_output_tokens - 1)
        problem = service.constraint_problem(phrases, limit)
        if problem is not None:
            return JSONResponse({"error": f"constraints: {problem}",
                                 "detail": {"limit_constraints": settings.max_constraints,
                                            "limit_constraint_subwords": limit}}, status_code=422)
    return None


async def _translated(request: Request, batcher: DynamicBatcher, settings: ServeSettings, lines: List[str],
                      options: SearchOptions, cost: int, phrases: Optional[List[List[str]]]):
    """The request's response items from the model thread, or the error response: 503 when
    the queue is full or the server stops, 504 past the timeout, 499 when the client left
    (its job is then dropped), 500 when the model failed on this request."""
    try:
        future = batcher.submit(lines, options, cost=cost, timeout=settings.request_timeout, constraints=phrases)
    except QueueFull as exc:
        return _unavailable(f"the server is busy: {exc}; retry later")
    except ShuttingDown:
        return _unavailable("the server is shutting down")
    except RuntimeError:
        return _unavailable("the translation worker is not running")
    try:
        items = await _wait(request, future, settings.request_timeout)
    except Expired:
        items = f"the translation did not finish within {settings.request_timeout:g} s"
    except ShuttingDown as exc:
        return _unavailable(str(exc))
    except SearchStopped:
        return _unavailable("the translation was stopped")
    except Exception as exc:  # this request alone failed (a failing batch is retried per request)
        return JSONResponse({"error": f"translation failed: {_first_line(exc)}"}, status_code=500)
    finally:
        if not future.done():
            future.cancel()  # the client left or the request was cancelled: drop the job
    if items is None:
        return Response(status_code=499)
    if isinstance(items, str):
        return JSONResponse({"error": items}, status_code=504)
    return items


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
        "options": options,
        "device": str(service.device), "threads": settings.threads or torch.get_num_threads(),
        "limits": {"max_body_bytes": settings.max_body_bytes, "max_texts": settings.max_texts,
                   "max_chars": settings.max_chars, "max_beam": settings.max_beam,
                   "max_constraints": settings.max_constraints,
                   "max_constraint_tokens": settings.max_constraint_tokens,
                   "max_request_tokens": settings.max_request_tokens,
                   "max_output_tokens": settings.max_output_tokens, "max_queue": settings.max_queue,
                   "timeout_s": settings.request_timeout},
        "batching": {"enabled": settings.batching, "max_wait_ms": batcher.max_wait * 1000,
                     "max_batch_tokens": batcher.max_batch_tokens,
                     "max_batch_sentences": batcher.max_batch_sentences},
    }


async def _wait(request: Request, future: asyncio.Future, timeout: float):
    """The job's result; None if the client disconnected, a message string on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return f"the translation did not finish within {timeout:g} s"
        done, _ = await asyncio.wait({future}, timeout=min(0.2, remaining))
        if done:
            return future.result()
        if await request.is_disconnected():
            return None
