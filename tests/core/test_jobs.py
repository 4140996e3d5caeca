"""The thread worker's lanes (core/jobs.py): each lane first come, first served; lanes take turns."""
from __future__ import annotations

import threading

from core import jobs


def test_lanes_take_turns_so_a_long_queue_holds_another_lane_back_by_one_job():
    ran: list[str] = []
    demo, mine = object(), object()  # lanes no other test has used (a lane remembers its last turn)
    gate = threading.Event()
    jobs.submit_in_thread(gate.wait, what="a job holding the worker")  # the worker is busy while the rest queue
    for i in range(4):
        jobs.submit_in_thread(ran.append, f"demo-{i}", what="demo", lane=demo)
    jobs.submit_in_thread(ran.append, "mine-0", what="mine", lane=mine)
    jobs.submit_in_thread(ran.append, "mine-1", what="mine", lane=mine)
    gate.set()
    jobs.wait_for_background_ingestion(timeout=30)
    assert ran == ["demo-0", "mine-0", "demo-1", "mine-1", "demo-2", "demo-3"]


def test_every_job_runs_once_even_when_one_crashes(caplog):
    ran: list[int] = []

    def boom() -> None:
        raise RuntimeError("broken")

    lane = object()
    jobs.submit_in_thread(boom, what="a crashing job", lane=lane)
    for i in range(3):
        jobs.submit_in_thread(ran.append, i, what="after it", lane=lane)
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
    monkeypatch.setattr(jobs, "_executor", None)
    monkeypatch.setattr(jobs, "_pools", {})
    monkeypatch.setattr(jobs, "_lanes", {})
    ran: list[str] = []
    started, release = threading.Event(), threading.Event()

    def long_job() -> None:
        started.set()
        while not release.wait(0.01):
            jobs.raise_if_stopping()            # a long job checks between its steps

    jobs.submit_in_thread(long_job, what="the running job")
    for i in range(3):
        jobs.submit_in_thread(ran.append, f"queued-{i}", what="a queued job", lane="a lane")
    assert started.wait(10)
    jobs.stop()
    jobs.submit_in_thread(ran.append, "late", what="a job queued after the stop")
    jobs.submit_in_thread(ran.append, "late", what="a pool's job queued after the stop", pool="bots")
    jobs.wait_for_background_ingestion(timeout=10)
    assert ran == [] and jobs.stopping()
    assert "background the running job stopped: the process is shutting down" in caplog.text
    assert "a job queued after the stop not started" in caplog.text and "crashed" not in caplog.text
