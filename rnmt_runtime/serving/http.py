"""The HTTP application of ``rnmt serve`` and of the runtime's server: ``POST /translate``,
``GET /health``, ``GET /model`` (and the page, where one is given), over any translation
service.

A service is what runs the model: rnmt's PyTorch one (`rnmt.serve.app.TranslationService`)
or the runtime's over an export directory (`rnmt_runtime.serving.runtime.RuntimeService`).
It has ``cost(lines)`` (source subwords, the batcher's unit), ``translate(lines, options,
should_stop, constraints)`` (run in the model thread; response items), ``constraint_problem``,
``has_attention``, ``max_output``, ``stopped`` (the exception its search raises when told to
stop), ``thread_init()`` and ``model_info(settings, batcher)`` (``GET /model``). Every error,
whatever its status, is a JSON object with a one-line ``error``; the bounds a request meets
are listed in docs/serving.md ("Limits and guarantees").
"""

# No "from __future__ import annotations": FastAPI reads the endpoints' annotations, and the
# request body's class is made per app (a name it could not resolve from a string).
import asyncio
import json
import math
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Dict, List, Optional

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from rnmt_runtime.serving.batcher import DynamicBatcher, Expired, QueueFull, SearchOptions, ShuttingDown
from rnmt_runtime.serving.guards import BearerToken, ConcurrencyLimit, TrustedHosts
from rnmt_runtime.serving.schemas import ErrorResponse, Health, ModelInfo, TranslateResponse, make_translate_request
from rnmt_runtime.serving.settings import ServeSettings

EOS = "</s>"  # the end mark shown as the last source and target token of an alignment


def response_item(source: str, nbest: List[Any], options: Any,
                  attention: Optional[List[List[float]]]) -> Dict[str, Any]:
    """One item of a ``POST /translate`` answer, the same for both services: ``nbest`` are
    translations best first (``text``, ``score``, ``src_pieces``, ``tgt_pieces``),
    ``attention`` the best one's attention as rows of floats (None for an empty source).
    Built in the model thread, so that the event loop stays free."""
    best = nbest[0]
    item: Dict[str, Any] = {"source": source, "text": best.text, "score": _score(best.score)}
    if (options.nbest or 1) > 1:
        item["nbest"] = [{"text": t.text, "score": _score(t.score)} for t in nbest]
    if options.return_alignment:
        if attention is None:
            item["alignment"] = {"src_tokens": [], "tgt_tokens": [], "attention": []}
        else:
            item["alignment"] = {"src_tokens": list(best.src_pieces) + [EOS],
                                 "tgt_tokens": list(best.tgt_pieces) + [EOS],
                                 "attention": [[round(float(v), 4) for v in row] for row in attention]}
    return item


def served_limits(settings: ServeSettings, batcher: DynamicBatcher) -> Dict[str, Any]:
    """The ``limits`` and ``batching`` of ``GET /model``, the same for both services."""
    return {
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


def _score(x: float) -> float:
    return round(float(x), 5) if math.isfinite(x) else 0.0


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


def create_app(service: Any, settings: ServeSettings, fields: Dict[str, Any], version: str,
               static: Optional[Path] = None) -> FastAPI:
    """The app serving ``service`` under ``settings`` (checked already); ``fields``: the
    search options a request may give (`make_translate_request`); ``static``: the page's
    directory, served at ``/`` and ``/static`` (none: no page)."""
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

    app = FastAPI(title="rnmt translation server", version=version,
                  description="Neural machine translation with a recurrent model. Concurrent requests with equal "
                              "search options are batched together.", lifespan=lifespan,
                  docs_url=None, redoc_url=None)  # FastAPI's doc pages load scripts from a CDN
    app.state.service, app.state.batcher, app.state.settings = service, batcher, settings
    _add_guards(app, settings)
    _add_error_handlers(app)
    _add_translate(app, service, settings, batcher, make_translate_request(settings, fields))
    _add_status(app, service, settings, batcher, started)
    if static is not None:
        page = static / "index.html"

        @app.get("/", include_in_schema=False)
        async def index():
            return FileResponse(page, media_type="text/html")

        app.mount("/static", StaticFiles(directory=static), name="static")
    return app


def _add_translate(app: FastAPI, service: Any, settings: ServeSettings, batcher: DynamicBatcher,
                   TranslateRequest: type) -> None:
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
        items = await _translated(request, service, batcher, settings, lines, options, cost, phrases)
        if isinstance(items, Response):
            return items
        return {"translations": items, "elapsed_ms": _elapsed_ms(t0)}


def _add_status(app: FastAPI, service: Any, settings: ServeSettings, batcher: DynamicBatcher,
                started: float) -> None:
    @app.get("/health", response_model=Health, summary="Liveness and queue state",
             responses={503: {"model": Health, "description": "the translation worker is stopped or stopping"}})
    async def health():
        status = "stopping" if batcher.closing else "ok" if batcher.running else "stopped"
        body = {"status": status, "uptime_s": round(time.monotonic() - started, 3),
                "pending": batcher.pending, "batching": {"enabled": settings.batching, **batcher.stats.as_dict()}}
        return body if status == "ok" else JSONResponse(body, status_code=503)

    @app.get("/model", response_model=ModelInfo, summary="The model being served")
    async def model_info():
        return service.model_info(settings, batcher)


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


def _batcher(service: Any, settings: ServeSettings) -> DynamicBatcher:
    """The model threads (the service's ``workers``) and their queue; without batching, one
    request per batch."""
    return DynamicBatcher(service.translate, batching=settings.batching,
                          max_wait_ms=settings.max_wait_ms if settings.batching else 0.0,
                          max_batch_tokens=settings.max_batch_tokens,
                          max_batch_sentences=settings.max_batch_sentences if settings.batching else 1,
                          thread_init=service.thread_init, max_queue=settings.max_queue,
                          workers=service.workers)


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


def _refusal(service: Any, settings: ServeSettings, cost: int,
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


async def _translated(request: Request, service: Any, batcher: DynamicBatcher, settings: ServeSettings,
                      lines: List[str],
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
    except service.stopped:
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
