"""An S3 source end to end: manage.py source_add / source_run against moto's S3 server on loopback, then an
overwrite, an addition and a deletion; the counts, the documents' links, and a search that finds the new text
and not the old."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from knowledge.models import Document, DocumentStatus
from tests.helpers import searched
from tests.sources.s3_server import KEYS, client, moto_server

pytestmark = pytest.mark.django_db


def command(*args) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def counts(line: dict) -> dict:
    return {k: line[k] for k in ("status", "added", "updated", "unchanged", "removed", "failed")}


def texts(kb, user, query: str) -> str:
    result = searched(user=user, query=query, kbs=[kb])
    return " ".join(c.content for c in result.candidates) if result.hit else ""


def test_s3_source_through_the_commands(kb, alice, settings, django_capture_on_commit_callbacks):
    settings.ZHIKU_SOURCES_ALLOW_PRIVATE = True
    with moto_server() as endpoint:
        s3 = client(endpoint)
        s3.create_bucket(Bucket="policies")

        def put(key: str, text: str) -> None:
            s3.put_object(Bucket="policies", Key=key, Body=text.encode())

        put("hr/leave.md", "# 请假\n\n年假每年十五天，需提前一周申请。\n")
        put("hr/travel.md", "# 差旅\n\n出差住宿标准是每晚五百元。\n")
        put("hr/old.md", "# 旧制度\n\n这条旧制度已经作废。\n")
        put("hr/", "")
        put("finance/budget.md", "# 预算\n\n不在前缀里。\n")
        added = command("source_add", "--kb", kb.name, "--owner", "alice", "--kind", "s3",
                        "--setting", "bucket=policies", "--setting", "prefix=hr/", "--setting", f"endpoint_url={endpoint}",
                        "--setting", "page_size=2", "--setting", "browse_url=https://files.example.com/policies",
                        "--credential", f"access_key_id={KEYS['access_key_id']}",
                        "--credential", f"secret_access_key={KEYS['secret_access_key']}")
        with django_capture_on_commit_callbacks(execute=True):
            first = command("source_run", str(added["id"]))
        assert counts(first) == {"status": "succeeded", "added": 3, "updated": 0, "unchanged": 0, "removed": 0,
                                 "failed": 0}
        assert "五百元" in texts(kb, alice, "出差住宿标准每晚五百元")

        put("hr/travel.md", "# 差旅\n\n出差住宿标准调整为每晚六百八十元。\n")
        put("hr/remote.md", "# 远程办公\n\n每周可以远程办公两天。\n")
        s3.delete_object(Bucket="policies", Key="hr/old.md")
        with django_capture_on_commit_callbacks(execute=True):
            second = command("source_run", str(added["id"]))
    assert counts(second) == {"status": "succeeded", "added": 1, "updated": 1, "unchanged": 1, "removed": 1,
                              "failed": 0}
    docs = {d.source_name: d for d in Document.objects.filter(kb=kb, status=DocumentStatus.READY)}
    assert set(docs) == {"hr/leave.md", "hr/travel.md", "hr/remote.md"}
    # search results and citations link to the owner's browse_url (an s3:// name would open nowhere)
    assert docs["hr/travel.md"].source_url == "https://files.example.com/policies/hr/travel.md"
    assert "六百八十" in texts(kb, alice, "出差住宿标准每晚六百八十元")
    assert "五百元" not in texts(kb, alice, "出差住宿标准每晚五百元")
    assert "作废" not in texts(kb, alice, "旧制度已经作废")
