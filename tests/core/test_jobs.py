"""The thread worker's two queues (core/jobs.py): a person's jobs first come, first served; background jobs behind
them, a running one pausing at its checkpoints while a person's job runs or waits."""
from __future__ import annotations

import threading
import time

from core import jobs


def test_a_persons_jobs_overtake_the_background_queue_and_each_queue_keeps_its_order():
    """Issue 47: lanes took turns, so a person's 4 files each waited behind a demo file (and the demo KB's
    recalibration in between); now every job of a person's runs before the next background one starts."""
    ran: list[str] = []
    gate = threading.Event()
    jobs.submit_in_thread(gate.wait, 30, what="a background job holding its worker", background=True)
    for i in range(4):
        jobs.submit_in_thread(ran.append, f"demo-{i}", what="demo", background=True)
    jobs.submit_in_thread(ran.append, "mine-0", what="mine")
    jobs.submit_in_thread(ran.append, "mine-1", what="mine")
    gate.set()
    jobs.wait_for_background_ingestion(timeout=30)
    assert ran == ["mine-0", "mine-1", "demo-0", "demo-1", "demo-2", "demo-3"]


def test_a_persons_job_starts_while_a_background_one_runs_which_waits_at_its_next_checkpoint():
    steps: list[str] = []
    waited: list[float] = []
    started, release, mine_started = threading.Event(), threading.Event(), threading.Event()

    def demo() -> None:
        started.set()
        release.wait(30)
        steps.append("demo: batch 1")
        waited.append(jobs.checkpoint())  # a person's job is running: waits here until it ends
        steps.append("demo: batch 2")

    def mine() -> None:
        mine_started.set()
        time.sleep(0.3)
        waited.append(jobs.checkpoint())  # a person's job never waits
        steps.append("mine")

    jobs.submit_in_thread(demo, what="a demo ingestion", background=True)
    assert started.wait(10)
    jobs.submit_in_thread(mine, what="a person's upload")
    assert mine_started.wait(5), "a person's job waited for the background one"
    release.set()
    jobs.wait_for_background_ingestion(timeout=30)
    assert steps == ["demo: batch 1", "mine", "demo: batch 2"]
    # The pause is reported, so that a background ingestion's embedding time leaves it out (its pace).
    assert waited[0] == 0.0 and waited[1] > 0


def test_every_job_runs_once_even_when_one_crashes(caplog):
    ran: list[int] = []

    def boom() -> None:
        raise RuntimeError("broken")

    jobs.submit_in_thread(boom, what="a crashing job")
    for i in range(3):
        jobs.submit_in_thread(ran.append, i, what="after it")
    jobs.wait_for_background_ingestion(timeout=30)
    assert ran == [0, 1, 2]
    assert "background a crashing job crashed" in caplog.text


def test_a_job_of_its_own_pool_never_waits_behind_the_shared_worker():
    gate, done = threading.Event(), threading.Event()
    jobs.submit_in_thread(gate.wait, 30, what="a long ingestion holding the worker")
    names: list[str] = []

    def reply() -> None:
        names.append(threading.current_thread().name)
        done.set()

    jobs.submit_in_thread(reply, what="a chat-bot reply", pool="test-replies")
    assert done.wait(10), "the pool's job waited for the shared worker"
    assert names[0].startswith("zhiku-test-replies")
    gate.set()
    jobs.wait_for_background_ingestion(timeout=30)


def test_stopping_drops_the_queue_refuses_new_jobs_and_tells_the_running_one(monkeypatch, caplog):
    """Issue 45: at exit the worker ran its whole queue first, then failed the jobs those queued (a RuntimeError)."""
    # A process of its own, as far as the module's state goes: the rest of this test process keeps running jobs.
    monkeypatch.setattr(jobs, "_stopping", threading.Event())
    monkeypatch.setattr(jobs, "_executors", {})
    monkeypatch.setattr(jobs, "_pools", {})
    monkeypatch.setattr(jobs, "_people", threading.Condition())
    monkeypatch.setattr(jobs, "_people_open", 0)
    ran: list[str] = []
    started, release = threading.Event(), threading.Event()

    def long_job() -> None:
        started.set()
        while not release.wait(0.01):
            jobs.raise_if_stopping()            # a long job checks between its steps

    jobs.submit_in_thread(long_job, what="the running job")
    for i in range(3):
        jobs.submit_in_thread(ran.append, f"queued-{i}", what="a queued job")
    jobs.submit_in_thread(ran.append, "bulk", what="a queued background job", background=True)
    assert started.wait(10)
    jobs.stop()
    jobs.submit_in_thread(ran.append, "late", what="a job queued after the stop")
    jobs.submit_in_thread(ran.append, "late", what="a pool's job queued after the stop", pool="bots")
    jobs.wait_for_background_ingestion(timeout=10)
    assert ran == [] and jobs.stopping()
    assert "background the running job stopped: the process is shutting down" in caplog.text
    assert "a job queued after the stop not started" in caplog.text and "crashed" not in caplog.text
