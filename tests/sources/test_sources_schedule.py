"""Scheduled runs: once across two workers, next times from the schedule, dead runs failed so their source runs again."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.utils import timezone

from sources.models import RunStatus, Source, SourceRun, Trigger
from sources.schedule import recover_stalled, tick
from sources.timing import next_run_at


@pytest.mark.django_db(transaction=True)
def test_two_schedulers_at_once_start_exactly_one_run_per_due_source(alice, make_kb, make_site, make_source):
    kb = make_kb(alice, "scheduled")
    due = [make_source(kb, make_site(items={"a": (f"s{i}.md", f"# S{i}\n\ntext {i}")})[1], alice, name=f"due{i}",
                       schedule="hourly") for i in range(6)]
    later = make_source(kb, make_site()[1], alice, name="later", schedule="daily")
    paused = make_source(kb, make_site()[1], alice, name="paused", schedule="hourly", paused=True)
    past = timezone.now() - timedelta(minutes=5)
    Source.objects.filter(pk__in=[s.pk for s in due]).update(next_run_at=past)
    Source.objects.filter(pk=paused.pk).update(next_run_at=past)  # paused: never due, whatever the date says
    barrier = threading.Barrier(2)
    reports, failures = [], []

    def scheduler() -> None:
        try:
            barrier.wait(timeout=30)
            reports.append(tick())  # each thread has its own database connection
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=scheduler) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not failures and len(reports) == 2
    for source in due:
        runs = list(SourceRun.objects.filter(source=source))
        assert len(runs) == 1 and runs[0].trigger == Trigger.SCHEDULE and runs[0].status == RunStatus.SUCCEEDED
        source.refresh_from_db()
        assert source.next_run_at > timezone.now() + timedelta(minutes=55)
    assert sorted(r for report in reports for r in report.started) == sorted(
        SourceRun.objects.filter(source__in=due).values_list("pk", flat=True))
    assert not SourceRun.objects.filter(source__in=[later, paused]).exists()
    # The next slot is in the database: another tick (another process, after a restart) starts nothing now.
    assert tick().started == []


@pytest.mark.django_db
def test_next_run_times_follow_the_schedule(kb, alice, site, make_source, settings):
    settings.TIME_ZONE = "Asia/Shanghai"
    _, name = site
    now = datetime(2026, 3, 1, 2, 30, tzinfo=ZoneInfo("Asia/Shanghai"))
    cron = make_source(kb, name, alice, name="cron", schedule="cron", cron="0 3 * * 1-5")
    assert next_run_at(cron, now) == datetime(2026, 3, 2, 3, 0, tzinfo=ZoneInfo("Asia/Shanghai"))  # Monday 03:00
    hourly = make_source(kb, name, alice, name="hourly", schedule="hourly")
    assert next_run_at(hourly, now) == now + timedelta(hours=1)
    manual = make_source(kb, name, alice, name="manual")
    assert manual.next_run_at is None and next_run_at(manual, now) is None


@pytest.mark.django_db
def test_a_run_whose_worker_died_is_failed_and_its_source_runs_again(kb, alice, site, make_source, run_source, settings):
    settings.ZHIKU_SOURCES_STALL_SECONDS = 60
    memory, name = site
    memory.items = {"a": ("a.md", "# A\n\nalpha")}
    source = make_source(kb, name, alice)
    now = timezone.now()
    dead = SourceRun.objects.create(source=source, status=RunStatus.RUNNING, started_at=now - timedelta(minutes=10),
                                    heartbeat_at=now - timedelta(minutes=2))
    alive = SourceRun.objects.create(source=make_source(kb, name, alice, name="other"), status=RunStatus.RUNNING,
                                     started_at=now - timedelta(minutes=10), heartbeat_at=now - timedelta(seconds=5))
    report = recover_stalled(now)
    assert report.stalled == [dead.pk]
    dead.refresh_from_db(), alive.refresh_from_db()
    assert dead.status == RunStatus.FAILED and dead.error_code == "source_run_stalled" and dead.finished_at
    assert alive.status == RunStatus.RUNNING
    assert run_source(source).status == RunStatus.SUCCEEDED  # the source is free again


@pytest.mark.django_db
def test_a_queued_run_whose_task_was_lost_is_sent_again_and_runs_once(kb, alice, site, make_source, settings,
                                                                     django_capture_on_commit_callbacks):
    settings.ZHIKU_SOURCES_STALL_SECONDS = 60
    memory, name = site
    memory.items = {"a": ("a.md", "# A\n\nalpha")}
    source = make_source(kb, name, alice)
    lost = SourceRun.objects.create(source=source)
    SourceRun.objects.filter(pk=lost.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    with django_capture_on_commit_callbacks(execute=True):
        assert recover_stalled().requeued == [lost.pk]
    lost.refresh_from_db()
    assert lost.status == RunStatus.SUCCEEDED and lost.added == 1 and len(memory.scans) == 1


@pytest.mark.django_db
def test_a_running_run_keeps_its_heartbeat(kb, alice, site, make_source, settings, monkeypatch):
    from sources.run import execute_run
    from sources.services.runs import run_create

    settings.ZHIKU_SOURCES_HEARTBEAT_SECONDS = 0
    memory, name = site
    memory.items = {k: (f"{k}.md", f"# {k}\n\n{k} text") for k in "ab"}
    source = make_source(kb, name, alice)
    run = run_create(source=source)
    beats = []
    memory.on_item = lambda n: beats.append(SourceRun.objects.get(pk=run.pk).heartbeat_at)
    execute_run(run.pk)
    assert len(beats) == 2 and beats[0] is not None and beats[1] > beats[0]  # written again during the scan


@pytest.mark.django_db
def test_a_slow_run_failed_as_stalled_loses_its_claim_and_stops_without_removing(kb, alice, site, make_source,
                                                                                run_source, settings):
    from sources.run import execute_run
    from sources.services.runs import run_create

    settings.ZHIKU_SOURCES_HEARTBEAT_SECONDS = 0
    memory, name = site
    memory.items = {k: (f"{k}.md", f"# {k}\n\n{k} text") for k in "abc"}
    source = make_source(kb, name, alice)
    run_source(source)
    del memory.items["c"]
    run = run_create(source=source)

    def stalled_meanwhile(n: int) -> None:
        if n == 0:  # what the scheduler does to a run whose heartbeat it thinks stopped
            SourceRun.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, error_code="source_run_stalled")

    memory.on_item = stalled_meanwhile
    finished = execute_run(run.pk)
    assert finished.status == RunStatus.FAILED and finished.error_code == "source_run_stalled"
    assert finished.removed == 0 and source.items.filter(key="c").exists()
