"""Issue 12: the load test runs. scripts/loadtest/run.py sets up a KB over the API, runs the locustfile
headless against a live server and writes its summary, so the load test cannot rot unnoticed."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chat.models import Conversation
from tests.browser import ROOT, daphne
from tests.helpers import api_token

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def base(django_db_setup, tmp_path_factory):
    """One live server for the module's tests (each test's rows are its own: transactional tests flush after)."""
    folder = tmp_path_factory.mktemp("loadtest")
    with daphne(folder / "daphne.log", ZHIKU_MEDIA_ROOT=str(folder / "media"), ZHIKU_AUTO_CALIBRATE="0") as url:
        yield url


def test_a_short_headless_run_searches_without_failures_and_writes_its_summary(alice, tmp_path, base):
    token = api_token(alice)
    out = tmp_path / "report.json"
    run = subprocess.run(
        [sys.executable, "scripts/loadtest/run.py", "--host", base, "--token", token, "--users", "2",
         "--spawn-rate", "2", "--duration", "10", "--docs", "1", "--no-kills", "--ready-timeout", "20",
         "--out", str(out)],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    searches = report["locust"]["requests"]["search"]
    assert searches["requests"] > 0 and searches["failures"] == 0
    assert report["locust"]["total"]["failures"] == 0, report["locust"]["errors"]
    for field in ("requests", "failures", "rps", "p50_ms", "p95_ms"):
        assert field in searches
    checks = report["checks"]
    for field in ("chats_started", "chats_finished", "docs_uploaded", "docs_ready", "version_mix_violations",
                  "keyword_path_missing"):
        assert field in checks
    # The one MarkerReplacer replaced the document while the searcher ran, and no result list mixed versions.
    assert checks["marker_versions_uploaded"] > 0 and checks["version_mix_violations"] == 0
    assert report["web_kill"] == {"skipped": "--no-kills"} and report["warm_up_s"] > 0
    assert "request kind" in run.stdout  # the table
    assert report["kb_deleted"] is True
    # The run's chats are deleted with its KB: the account's conversation list is as it was.
    assert not [c for c in Conversation.objects.filter(user=alice) if report["kb_id"] in (c.kb_ids or [])]


def test_the_runs_conversations_are_deleted_and_no_others(alice, base):
    """The driver deletes the conversations that searched its KB (over several pages), and keeps the rest."""
    import requests

    sys.path.insert(0, str(ROOT / "scripts" / "loadtest"))
    try:
        import run as driver
    finally:
        sys.path.pop(0)
    ours = [Conversation.objects.create(user=alice, title=f"q{i}", kb_ids=[901, 7]) for i in range(25)]
    other = Conversation.objects.create(user=alice, title="mine", kb_ids=[7])
    session = requests.Session()
    session.headers["Authorization"] = f"Token {api_token(alice)}"
    assert driver.delete_conversations(session, base, 901) == len(ours)
    assert list(Conversation.objects.filter(user=alice)) == [other]
