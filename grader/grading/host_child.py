"""Run one module's entry point on many inputs, in a process of its own (see hostrun.py).

This file is executed as a script (``python -I host_child.py``), never imported by the grader:
it uses the standard library only, and numpy only when the module under test loaded it.

stdin: one JSON object ``{"source", "entry_point", "inputs": [[arg, ...], ...], "case_cpu_s",
"memory_mb"}``. stdout: one JSON line per input, in order, ``{"ok": true, "value": ...}`` or
``{"ok": false, "error": "Type: message"}``, then ``{"done": true}``; or a single
``{"load_error": "..."}`` when the module cannot be loaded. What the module prints goes to stderr.
Values are converted as the sandbox's harness converts them: exact builtin types, numpy scalars
and arrays; anything else is an error for that input.
"""

import json
import resource
import signal
import sys
import types


class CaseTimeout(BaseException):
    """One input used up its CPU budget."""


def _on_timer(signum, frame):
    raise CaseTimeout()


def to_plain(value, depth=0):
    if depth > 64:
        raise TypeError("result is nested too deeply")
    t = type(value)
    if value is None or t in (bool, str, int):
        return value
    if t is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("result contains a non-finite float")
        return value
    if t in (list, tuple):
        return [to_plain(x, depth + 1) for x in value]
    if t is dict:
        out = {}
        for k, x in value.items():
            if type(k) is not str:
                raise TypeError(f"dict key of type {type(k).__name__}, expected str")
            out[k] = to_plain(x, depth + 1)
        return out
    np = sys.modules.get("numpy")
    if np is not None and t.__module__ == "numpy":
        if t is np.ndarray:
            return to_plain(value.tolist(), depth)
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.floating):
            return to_plain(float(value), depth)
    raise TypeError(f"unsupported result type {t.__module__}.{t.__qualname__}")


def main():
    job = json.loads(sys.stdin.read())
    out = sys.stdout
    sys.stdout = sys.stderr  # the module's prints never reach the answer stream
    limit = int(job["memory_mb"]) << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def send(rec):
        out.write(json.dumps(rec, allow_nan=False, separators=(",", ":")) + "\n")

    try:
        module = types.ModuleType("candidate")
        module.__file__ = "<candidate>"
        sys.modules["candidate"] = module
        exec(compile(job["source"], "<candidate>", "exec", dont_inherit=True), module.__dict__)
        fn = module.__dict__.get(job["entry_point"])
        if not callable(fn):
            raise LookupError(f"no function named {job['entry_point']!r}")
    except BaseException as exc:  # noqa: BLE001 - reported, the run ends
        send({"load_error": f"{type(exc).__name__}: {exc}"[:2000]})
        out.flush()
        return
    signal.signal(signal.SIGPROF, _on_timer)
    budget = float(job["case_cpu_s"])
    for args in job["inputs"]:
        try:
            signal.setitimer(signal.ITIMER_PROF, budget)
            try:
                value = fn(*args)
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            send({"ok": True, "value": to_plain(value)})
        except CaseTimeout:
            send({"ok": False, "error": f"Timeout: more than {budget:g} s of CPU"})
        except BaseException as exc:  # noqa: BLE001 - what the module does is the result
            if isinstance(exc, (SystemExit, KeyboardInterrupt)):
                raise
            send({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]})
    send({"done": True})
    out.flush()


if __name__ == "__main__":
    main()
