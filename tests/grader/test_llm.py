"""The model client against a real local HTTP server: retries, Retry-After, fatal errors, cache."""

from __future__ import annotations

import time

import pytest

from fakes.model_server import FakeModelServer
from grader.errors import ModelServiceError
from grader.pipeline.llm import GenParams, ModelClient, TransientExhausted


def client(server, **kw):
    params = kw.pop("params", GenParams(model="fake-model", temperature=0.5, seed=100))
    return ModelClient(base_url=server.base_url, api_key="k", params=params, timeout_s=kw.pop("timeout_s", 5.0),
                       backoff_initial_s=0.05, backoff_max_s=0.2, **kw)


def test_canned_completion_usage_and_per_sample_seed():
    with FakeModelServer(lambda p, b: f"echo {p}") as srv:
        c = client(srv, price_in_per_mtok=1.0, price_out_per_mtok=2.0)
        out = c.complete("hello", sample=3)
        assert out.text == "echo hello" and not out.cached
        assert out.usage["prompt_tokens"] == 1 and out.cost_usd is not None
        assert srv.requests[0]["seed"] == 103 and srv.requests[0]["temperature"] == 0.5
        assert out.attempts[-1]["status"] == 200


def test_429_honours_retry_after_then_succeeds():
    with FakeModelServer(lambda p, b: "ok") as srv:
        srv.faults.extend([("429", 1), ("429", 0)])
        c = client(srv)
        t0 = time.monotonic()
        out = c.complete("p", 0)
        assert out.text == "ok"
        assert time.monotonic() - t0 >= 0.95  # waited for Retry-After: 1
        assert [a["status"] for a in out.attempts] == [429, 429, 200]
        assert out.attempts[0]["retry_after_s"] == 1.0


@pytest.mark.parametrize("fault", [("500",), ("503",), ("drop",)])
def test_transient_failures_are_retried(fault):
    with FakeModelServer(lambda p, b: "ok") as srv:
        srv.faults.extend([fault, fault])
        out = client(srv).complete("p", 0)
        assert out.text == "ok" and len(out.attempts) == 3 and len(srv.requests) == 3


def test_timeouts_are_retried():
    with FakeModelServer(lambda p, b: "ok") as srv:
        srv.faults.append(("slow", 2.0))
        out = client(srv, timeout_s=0.5).complete("p", 0)
        assert out.text == "ok"
        assert out.attempts[0]["error"] == "APITimeoutError"


def test_persistent_transient_failure_gives_up_with_the_attempts():
    with FakeModelServer(lambda p, b: "ok") as srv:
        srv.always = ("500",)
        with pytest.raises(TransientExhausted) as ei:
            client(srv, max_attempts=3).complete("p", 0)
        assert len(ei.value.attempts) == 3 and len(srv.requests) == 3


@pytest.mark.parametrize("fault, fragment", [(("401",), "refused the API key (401)"),
                                             (("404",), "not found"), (("400",), "rejected the request (400)")])
def test_fatal_errors_stop_with_one_clear_line_and_no_retry(fault, fragment):
    with FakeModelServer(lambda p, b: "ok") as srv:
        srv.always = fault
        with pytest.raises(ModelServiceError) as ei:
            client(srv).complete("p", 0)
        assert fragment in str(ei.value) and "\n" not in str(ei.value)
        assert len(srv.requests) == 1


def test_a_service_that_refuses_seed_is_asked_again_without_it():
    with FakeModelServer(lambda p, b: "ok") as srv:
        srv.always = ("400-seed",)
        c = client(srv)
        assert c.complete("p", 0).text == "ok"
        assert "seed" in srv.requests[0] and "seed" not in srv.requests[1]
        c.complete("q", 1)
        assert "seed" not in srv.requests[2]


def test_cache_means_a_rerun_costs_no_calls():
    with FakeModelServer(lambda p, b: "ok") as srv:
        c = client(srv)
        c.complete("p", 0)
        again = client(srv).complete("p", 0)
        assert again.cached and again.text == "ok" and len(srv.requests) == 1
        client(srv).complete("p", 1)  # another sample index is another key
        client(srv, params=GenParams(model="fake-model", temperature=0.9, seed=100)).complete("p", 0)
        assert len(srv.requests) == 3


def test_a_request_longer_than_the_context_is_an_empty_answer_not_a_stopped_run():
    """vLLM's wording (no error code): the sample gets an empty completion, the run goes on."""
    with FakeModelServer(lambda p, b: "ok") as srv:
        srv.faults.append(("400-context",))
        c = client(srv)
        out = c.complete("a very long conversation", 0)
        assert (out.text, out.finish_reason, out.usage, out.cached) == ("", "context_length_exceeded", {}, False)
        assert [a["status"] for a in out.attempts] == [400] and len(srv.requests) == 1
        assert c.complete("a very long conversation", 0).text == "ok"  # not cached: asked again
        assert c.complete("short", 1).text == "ok"
