"""A local HTTP server that plays an OpenAI-compatible model service, for tests.

It speaks POST /v1/chat/completions over real HTTP, so the real ``openai`` client and the grader's
retry path run against it. Behaviour is scripted:

* ``answers``: a function (prompt, request body) -> completion text;
* ``faults``: a queue of actions applied to the next requests, in order: ``("429", retry_after)``,
  ``("500",)``, ``("503",)``, ``("slow", seconds)``, ``("drop",)`` (close the connection without a
  reply), ``("401",)``, ``("404",)``, ``("400-seed",)`` (refuse the seed parameter),
  ``("400-context",)`` (the messages exceed the model's context, worded as vLLM words it),
  ``("400",)`` (any other bad request);
* ``always``: an action applied to every request (e.g. ``("401",)`` or ``("slow", 0.5)``).

Every request body is recorded in ``requests``.

Each server's ``base_url`` carries a path segment of its own: the grader keys its completion
cache by the endpoint, and two servers of one test run may be given the same port in turn, so
the segment keeps one server's scripted replies from being served, cached, to another's test.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeModelServer:
    def __init__(self, answers: Callable[[str, dict], str] | None = None) -> None:
        self.answers = answers or (lambda prompt, body: "```python\ndef f():\n    return {}\n```")
        self.faults: deque[tuple] = deque()
        self.always: tuple | None = None
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.token = uuid.uuid4().hex[:12]  # this server's own endpoint path (see the module's doc)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, payload: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    action = server.faults.popleft() if server.faults else server.always
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "no such route", "type": "invalid_request_error"}})
                    return
                if action:
                    kind = action[0]
                    if kind == "429":
                        self._send(429, {"error": {"message": "rate limited", "type": "rate_limit_error"}},
                                   {"Retry-After": str(action[1])})
                        return
                    if kind in ("500", "502", "503"):
                        self._send(int(kind), {"error": {"message": "server error", "type": "server_error"}})
                        return
                    if kind == "401":
                        self._send(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                                   "code": "invalid_api_key"}})
                        return
                    if kind == "404":
                        self._send(404, {"error": {"message": "The model does not exist", "type": "invalid_request_error"}})
                        return
                    if kind == "400-seed" and "seed" in body:
                        self._send(400, {"error": {"message": "Unrecognized request argument supplied: seed",
                                                   "type": "invalid_request_error"}})
                        return
                    if kind == "400-context":
                        self._send(400, {"object": "error", "type": "BadRequestError", "code": 400, "param": None,
                                         "message": "This model's maximum context length is 4096 tokens. However, you "
                                                    "requested 5120 tokens (4096 in the messages, 1024 in the "
                                                    "completion). Please reduce the length of the messages or "
                                                    "completion."})
                        return
                    if kind == "400":
                        self._send(400, {"error": {"message": "'temperature' must be at most 2",
                                                   "type": "invalid_request_error"}})
                        return
                    if kind == "drop":
                        self.close_connection = True
                        self.connection.close()
                        return
                    if kind == "slow":
                        time.sleep(action[1])
                prompt = body["messages"][-1]["content"]
                text = server.answers(prompt, body)
                self._send(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(text) // 4,
                              "total_tokens": (len(prompt) + len(text)) // 4},
                })

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/{self.token}/v1"

    def __enter__(self) -> "FakeModelServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
