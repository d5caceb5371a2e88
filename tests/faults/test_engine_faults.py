"""Faults the grader must survive: the engine restarting mid-run, containers orphaned by a killed
grader, Ctrl-C, and an operator killing a container. Real engines, real containers.

The restart test runs against a second Docker daemon of its own (own socket, data root and bridge),
so restarting it never disturbs other tests running in parallel.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from fakes.model_server import FakeModelServer
from grader.results.runs import RunDir

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
F1 = ROOT / "problems" / "perf-core" / "f1-conv-layer-accounting"


def fenced(code: str) -> str:
    return f"```python\n{code}\n```\n"


def slow_solution(delay: float) -> str:
    return f"import time\ntime.sleep({delay})\n" + (F1 / "solution.py").read_text()


def _as_a_foreground_job() -> None:
    # A shell starts background jobs with SIGINT ignored, and a Python started with SIGINT ignored
    # never turns it into KeyboardInterrupt: under `nohup bin/test &` the Ctrl-C below would be
    # lost and the run would simply finish. A Ctrl-C comes from a terminal, to a foreground job.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def eval_proc(args: list[str], env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "grader", "eval", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **(env or {})},
                            preexec_fn=_as_a_foreground_job)


def wait_for(pred, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def grade_lines(run: Path) -> list[dict]:
    path = run / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(l) for l in path.read_text().splitlines() if '"type":"grade"' in l]


# ------------------------------------------------------------------------------------------
# a second engine, restarted under a running eval
# ------------------------------------------------------------------------------------------

class SecondEngine:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pg-engine-", dir="/var/tmp"))
        self.sock = self.dir / "docker.sock"
        self.bridge = f"pgt{uuid.uuid4().hex[:8]}"
        self.proc: subprocess.Popen | None = None

    @property
    def host(self) -> str:
        return f"unix://{self.sock}"

    def start(self) -> None:
        cmd = ["dockerd", "--data-root", str(self.dir / "data"), "--exec-root", str(self.dir / "exec"),
               "--pidfile", str(self.dir / "pid"), "-H", self.host, "--bridge", self.bridge,
               "--iptables=false", "--ip-masq=false", "--ip-forward=false", "--containerd-namespace", self.bridge,
               "--containerd-plugins-namespace", self.bridge + "p"]
        log = open(self.dir / "dockerd.log", "ab")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, start_new_session=True)
        wait_for(self.answers, 60, "the second engine to answer")

    def answers(self) -> bool:
        import docker

        try:
            c = docker.APIClient(base_url=self.host, timeout=5)
            c.ping()
            c.close()
            return True
        except Exception:  # noqa: BLE001
            return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def second_engine(docker_api, sandbox_image):
    if os.geteuid() != 0 or not shutil.which("dockerd"):
        pytest.fail("the engine fault test needs root and dockerd (run bin/setup as root)", pytrace=False)
    eng = SecondEngine()
    subprocess.run(["ip", "link", "add", eng.bridge, "type", "bridge"], check=True)
    subprocess.run(["ip", "addr", "add", "10.231.7.1/24", "dev", eng.bridge], check=True)
    subprocess.run(["ip", "link", "set", eng.bridge, "up"], check=True)
    try:
        eng.start()
        import docker

        other = docker.APIClient(base_url=eng.host, timeout=120)
        other.load_image(docker_api.get_image(sandbox_image.tag))
        repo, tag = sandbox_image.tag.split(":")
        other.tag(sandbox_image.tag, repo, "latest")
        other.close()
        yield eng
    finally:
        eng.stop()
        subprocess.run(["ip", "link", "del", eng.bridge], check=False)
        shutil.rmtree(eng.dir, ignore_errors=True)


def test_engine_restart_mid_run_is_infrastructure_retried_never_counted(second_engine, tmp_path):
    runs = tmp_path / "runs"
    with FakeModelServer(lambda p, b: fenced(slow_solution(1.5))) as srv:
        proc = eval_proc(["--problem", "f1-conv-layer-accounting", "--model", "fake", "--base-url", srv.base_url,
                          "--api-key-env", "NONE", "--samples", "6", "--workers", "2", "--runs-dir", str(runs),
                          "--name", "restart", "--quiet", "--json", str(tmp_path / "s.json")],
                         env={"DOCKER_HOST": second_engine.host})
        run = runs / "restart"
        # restart while the first containers are running (they sleep 1.5 s at import)
        wait_for(lambda: (run / "journal.jsonl").exists()
                 and '"type":"completion"' in (run / "journal.jsonl").read_text(), 60, "the first completion")
        time.sleep(0.7)
        second_engine.restart()
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    grades = grade_lines(run)
    final = {(g["problem"], g["sample"]): g["grade"]["verdict"] for g in grades}
    assert final == {("perf-core/f1-conv-layer-accounting", s): "pass" for s in range(6)}, final
    assert len(grades) == 6  # retried inside the grading, never written twice
    retried = [g for g in grades if g["infra_notes"]]
    assert retried, "the restart must have hit at least one in-flight sample"
    assert all("engine" in " ".join(g["infra_notes"]) for g in retried)
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["samples"]["infra_excluded"] == 0 and s["headline"]["pass@1"] == 1.0


# ------------------------------------------------------------------------------------------
# orphans, Ctrl-C, operator kills (on the main engine, by label)
# ------------------------------------------------------------------------------------------

def process_state(pid: int) -> str:
    """The state letter of a process (``Z`` for a zombie: exited, not reaped), "" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return ""
    return data[data.rindex(b")") + 2:].split()[0].decode()


def managed(client, run_id: str) -> list[dict]:
    return client.containers(all=True, filters={"label": f"perfgrade.run={run_id}"})


def test_orphans_of_a_killed_grader_are_swept_at_next_start_and_nothing_else(docker_api, sandbox_image, tmp_path):
    from sandbox.engine import LABEL_MANAGED, LABEL_OWNER, LABEL_RUN, owner_tag

    runs = tmp_path / "runs"
    run_id = f"orphan-{uuid.uuid4().hex[:6]}"
    # bystanders: an unlabelled container, and a managed one whose grader (this process) is alive
    bystander = docker_api.create_container(sandbox_image.tag, labels={"someone.else": "1"})["Id"]
    alive_id = f"alive-{uuid.uuid4().hex[:6]}"
    alive = docker_api.create_container(sandbox_image.tag, labels={LABEL_MANAGED: "1", LABEL_RUN: alive_id,
                                                                   LABEL_OWNER: owner_tag()})["Id"]
    try:
        with FakeModelServer(lambda p, b: fenced(slow_solution(60))) as srv:
            proc = eval_proc(["--problem", "f1-conv-layer-accounting", "--model", "fake", "--base-url", srv.base_url,
                              "--api-key-env", "NONE", "--samples", "2", "--workers", "2", "--runs-dir", str(runs),
                              "--name", run_id, "--quiet"])
            wait_for(lambda: len(managed(docker_api, run_id)) >= 2, 60, "two running sandbox containers")
            proc.send_signal(signal.SIGKILL)
            # Not reaped yet: until proc.wait() the killed grader is a zombie whose pid still exists,
            # so a grader starting meanwhile (the other test worker's sweeps orphans at its start)
            # does not take these containers for orphans, and what the kill left is seen as it is.
            wait_for(lambda: process_state(proc.pid) == "Z", 30, "the killed grader to exit")
            left = managed(docker_api, run_id)
            assert len(left) >= 2, "a SIGKILLed grader leaves its containers behind"
            assert {c["Labels"][LABEL_OWNER].rsplit(":", 2)[1] for c in left} == {str(proc.pid)}  # the killed one's
            proc.wait(timeout=30)
        out = subprocess.run([sys.executable, "-m", "grader", "sandbox", "sweep"], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert managed(docker_api, run_id) == []
        ids = {c["Id"] for c in docker_api.containers(all=True)}
        assert bystander in ids and alive in ids
    finally:
        for cid in (bystander, alive):
            docker_api.remove_container(cid, force=True)


def test_ctrl_c_sweeps_the_runs_containers_and_resume_finishes(docker_api, tmp_path):
    runs = tmp_path / "runs"
    run_id = f"ctrlc-{uuid.uuid4().hex[:6]}"
    answers = {"slow": True}

    def answer(p, b):
        return fenced(slow_solution(60 if answers["slow"] else 0))

    with FakeModelServer(answer) as srv:
        proc = eval_proc(["--problem", "f1-conv-layer-accounting", "--model", "fake", "--base-url", srv.base_url,
                          "--api-key-env", "NONE", "--samples", "2", "--workers", "2", "--runs-dir", str(runs),
                          "--name", run_id, "--quiet", "--no-cache"])
        wait_for(lambda: len(managed(docker_api, run_id)) >= 2, 60, "two running sandbox containers")
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert time.monotonic() - t0 < 30
        assert "--resume" in err
        assert managed(docker_api, run_id) == []
        run = runs / run_id
        assert grade_lines(run) == []  # nothing torn down by the interrupt became a verdict
        # the completions are kept; resuming grades them (the slow code still times out)
        st = RunDir(run).state()
        assert len(st.completions) == 2
        proc = subprocess.run([sys.executable, "-m", "grader", "eval", "--resume", str(run), "--quiet"], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    verdicts = [g["grade"]["verdict"] for g in grade_lines(run)]
    assert sorted(verdicts) == ["timeout", "timeout"]


def test_an_operator_killing_the_container_is_infrastructure_not_a_verdict(sandbox, docker_api, run_label):
    from sandbox.errors import InfrastructureError
    from sandbox.models import Case, Job, Limits

    def kill_soon():
        wait_for(lambda: bool(managed(docker_api, run_label)), 30, "the container")
        time.sleep(0.5)
        for c in managed(docker_api, run_label):
            docker_api.kill(c["Id"], signal="SIGTERM")

    t = threading.Thread(target=kill_soon)
    t.start()
    with pytest.raises(InfrastructureError, match="killed through the engine"):
        sandbox.run(Job(id="j", source="import time\ndef f():\n    time.sleep(20)\n", entry_point="f",
                        cases=[Case(id="c0", args=[])]), Limits(case_cpu_s=10))
    t.join()
