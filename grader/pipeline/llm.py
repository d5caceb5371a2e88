"""The model client: chat completions through the ``openai`` client, retried with tenacity.

This is the only module that imports ``openai`` and ``tenacity``. Only transient failures are
retried (429 honouring Retry-After, 5xx, timeouts, dropped connections), with capped exponential
backoff and jitter; every attempt is recorded. Authentication, permission, not-found and bad
request errors stop the run with one clear line (:class:`ModelServiceError`), except one: a
request longer than the model's context (400 ``context_length_exceeded``, as OpenAI and
llama-cpp-python's server say it, or a message naming the maximum context length, as vLLM does)
is a property of that conversation, not of the service, so it gets an empty completion whose
``finish_reason`` is ``context_length_exceeded`` (graded like any empty answer; not cached).

Completions are cached on content: the model, the endpoint, the prompt's hash, the generation
parameters and the sample index key a file under the cache directory, so a re-run costs no calls.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from ..errors import ModelServiceError
from ..settings import cache_dir

MAX_RETRY_AFTER_S = 120.0
CACHE_FORMAT = 1


@dataclass(frozen=True)
class GenParams:
    model: str
    temperature: float = 0.8
    top_p: float = 1.0
    max_tokens: int = 4096
    seed: int | None = 0
    system_prompt: str | None = None

    def sample_seed(self, sample: int) -> int | None:
        return None if self.seed is None else self.seed + sample

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature, "top_p": self.top_p,
                "max_tokens": self.max_tokens, "seed": self.seed, "system_prompt": self.system_prompt}


@dataclass
class Completion:
    text: str
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    latency_s: float = 0.0
    cost_usd: float | None = None
    model_reported: str | None = None
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "usage": self.usage, "finish_reason": self.finish_reason, "attempts": self.attempts,
            "latency_s": round(self.latency_s, 4), "cost_usd": self.cost_usd,
            "model_reported": self.model_reported, "cached": self.cached,
        }


def _status(exc: BaseException) -> int | None:
    return getattr(exc, "status_code", None)


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
                        openai.InternalServerError)):
        return True
    status = _status(exc)
    return isinstance(exc, openai.APIStatusError) and status is not None and (status in (408, 409) or status >= 500)


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's requested wait (Retry-After / retry-after-ms headers), if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


CONTEXT_OVERFLOW = "context_length_exceeded"


def is_context_overflow(exc: BaseException) -> bool:
    """A 400 saying that the messages (and the tokens asked for) do not fit the model's context."""
    if not isinstance(exc, openai.BadRequestError):
        return False
    if getattr(exc, "code", None) == CONTEXT_OVERFLOW:
        return True
    text = " ".join(str(getattr(exc, "message", None) or exc).lower().split())
    return "maximum context length" in text or "context window" in text or CONTEXT_OVERFLOW in text


def _fatal_message(exc: BaseException, base_url: str, model: str) -> str:
    status = _status(exc)
    body = getattr(exc, "message", None) or str(exc)
    body = " ".join(str(body).split())[:200]
    if isinstance(exc, openai.AuthenticationError):
        return f"the model service at {base_url} refused the API key (401): {body}"
    if isinstance(exc, openai.PermissionDeniedError):
        return f"the model service at {base_url} denied access (403): {body}"
    if isinstance(exc, openai.NotFoundError):
        return f"model {model!r} or endpoint not found at {base_url} (404): {body}"
    return f"the model service at {base_url} rejected the request ({status}): {body}"


class ModelClient:
    """Chat completions with narrow retries, attempt records and a content-keyed cache."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        params: GenParams,
        timeout_s: float = 300.0,
        max_attempts: int = 6,
        backoff_initial_s: float = 1.0,
        backoff_max_s: float = 60.0,
        use_cache: bool = True,
        price_in_per_mtok: float | None = None,
        price_out_per_mtok: float | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.params = params
        self.max_attempts = max_attempts
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.use_cache = use_cache
        self.price_in = price_in_per_mtok
        self.price_out = price_out_per_mtok
        self._seed_supported = True
        self._lock = threading.Lock()
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0
        )

    # -- cache -----------------------------------------------------------------------------
    def cache_key(self, prompt: str | list[dict[str, str]], sample: int) -> str:
        """Content key of one request: a single prompt, or a whole conversation (its every turn)."""
        p = self.params
        text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, ensure_ascii=False)
        key = {
            "v": CACHE_FORMAT, "model": p.model, "endpoint": self.base_url,
            "prompt": hashlib.sha256(text.encode()).hexdigest(),
            "system": hashlib.sha256((p.system_prompt or "").encode()).hexdigest(),
            "temperature": p.temperature, "top_p": p.top_p, "max_tokens": p.max_tokens,
            "seed": p.sample_seed(sample), "sample": sample,
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()

    def _cache_path(self, key: str) -> Path:
        return cache_dir() / "completions" / key[:2] / f"{key}.json"

    def _cache_get(self, key: str) -> Completion | None:
        if not self.use_cache:
            return None
        path = self._cache_path(key)
        try:
            data = json.loads(path.read_text())
            if data.get("key") != key or not isinstance(data.get("text"), str):
                return None
        except (OSError, ValueError):
            return None
        return Completion(text=data["text"], usage=data.get("usage") or {}, finish_reason=data.get("finish_reason"),
                          model_reported=data.get("model_reported"), cost_usd=data.get("cost_usd"), cached=True)

    def _cache_put(self, key: str, c: Completion) -> None:
        if not self.use_cache:
            return
        path = self._cache_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump({"key": key, "text": c.text, "usage": c.usage, "finish_reason": c.finish_reason,
                       "model_reported": c.model_reported, "cost_usd": c.cost_usd}, f)
        os.replace(tmp, path)

    # -- calls -----------------------------------------------------------------------------
    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        ra = retry_after_seconds(exc) if exc is not None else None
        if ra is not None:
            return min(ra, MAX_RETRY_AFTER_S)
        # capped exponential backoff with full jitter
        return wait_random_exponential(multiplier=self.backoff_initial_s, max=self.backoff_max_s)(state)

    def complete(self, prompt: str | list[dict[str, str]], sample: int) -> Completion:
        """One completion for a prompt (the first user turn) or a conversation (user and assistant
        turns, the last one a user turn). The system prompt, if any, goes first."""
        key = self.cache_key(prompt, sample)
        hit = self._cache_get(key)
        if hit is not None:
            return hit
        attempts: list[dict[str, Any]] = []
        t0 = time.monotonic()

        def record(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            attempts.append({
                "attempt": state.attempt_number,
                "error": type(exc).__name__ if exc else None,
                "status": _status(exc) if exc else None,
                "detail": " ".join(str(exc).split())[:200] if exc else "",
                "retry_after_s": retry_after_seconds(exc) if exc else None,
                "elapsed_s": round(time.monotonic() - t0, 3),
            })

        retrying = Retrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            before_sleep=record,
            reraise=True,
        )
        try:
            response = retrying(self._call, prompt, sample)
        except openai.APIError as exc:
            if is_transient(exc):
                record_final = {"attempt": len(attempts) + 1, "error": type(exc).__name__, "status": _status(exc),
                                "detail": " ".join(str(exc).split())[:200]}
                attempts.append(record_final)
                raise TransientExhausted(
                    f"the model service kept failing after {self.max_attempts} attempts: {type(exc).__name__}",
                    attempts,
                ) from exc
            if is_context_overflow(exc):
                attempts.append({"attempt": len(attempts) + 1, "error": type(exc).__name__, "status": _status(exc),
                                 "detail": " ".join(str(exc).split())[:200],
                                 "elapsed_s": round(time.monotonic() - t0, 3)})
                return Completion(text="", finish_reason=CONTEXT_OVERFLOW, attempts=attempts,
                                  latency_s=time.monotonic() - t0)
            raise ModelServiceError(_fatal_message(exc, self.base_url, self.params.model)) from None
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content if choice and choice.message else None) or ""
        usage = {}
        if response.usage is not None:
            usage = {"prompt_tokens": int(response.usage.prompt_tokens or 0),
                     "completion_tokens": int(response.usage.completion_tokens or 0)}
        cost = None
        if usage and self.price_in is not None and self.price_out is not None:
            cost = (usage["prompt_tokens"] * self.price_in + usage["completion_tokens"] * self.price_out) / 1e6
        attempts.append({"attempt": len(attempts) + 1, "error": None, "status": 200, "detail": "",
                         "elapsed_s": round(time.monotonic() - t0, 3)})
        c = Completion(text=text, usage=usage, finish_reason=choice.finish_reason if choice else None,
                       attempts=attempts, latency_s=time.monotonic() - t0, cost_usd=cost,
                       model_reported=getattr(response, "model", None))
        self._cache_put(key, c)
        return c

    def _call(self, prompt: str | list[dict[str, str]], sample: int) -> Any:
        p = self.params
        messages = []
        if p.system_prompt:
            messages.append({"role": "system", "content": p.system_prompt})
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages.extend({"role": m["role"], "content": m["content"]} for m in prompt)
        kwargs: dict[str, Any] = {"model": p.model, "messages": messages, "temperature": p.temperature,
                                  "top_p": p.top_p, "max_tokens": p.max_tokens}
        seed = p.sample_seed(sample)
        if seed is not None and self._seed_supported:
            kwargs["seed"] = seed
        try:
            return self._client.chat.completions.create(**kwargs)
        except openai.BadRequestError as exc:
            # some OpenAI-compatible servers refuse the seed parameter: drop it once, remember
            if "seed" in kwargs and "seed" in str(exc).lower():
                with self._lock:
                    self._seed_supported = False
                kwargs.pop("seed")
                return self._client.chat.completions.create(**kwargs)
            raise

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # noqa: BLE001
            pass


class TransientExhausted(Exception):
    """A sample whose completion kept failing transiently; the run goes on without it."""

    def __init__(self, message: str, attempts: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.attempts = attempts
