"""The runner (sources/run.py): added / updated / unchanged / removed / failed, atomic replacement, names, cancel."""
from __future__ import annotations

import pytest

from knowledge.models import Document, DocumentStatus
from sources.models import RunStatus, SourceItem, SourceRun
from tests.helpers import searched

pytestmark = pytest.mark.django_db


def counts(run) -> dict:
    return {k: getattr(run, k) for k in ("added", "updated", "unchanged", "removed", "failed")}


def serving(kb) -> dict[str, Document]:
    return {d.source_name: d for d in Document.objects.filter(kb=kb, status=DocumentStatus.READY)}


def found(kb, user, query: str) -> set[str]:
    result = searched(user=user, query=query, kbs=[kb])
    return {c.source_name for c in result.candidates} if result.hit else set()


def test_a_source_syncs_incrementally_with_deletions(kb, alice, site, make_source, run_source):
    memory, name = site
    memory.items = {"a": ("alpha.md", "# Alpha\n\nThe alpha pump runs at 40 bar."),
                    "b": ("beta.md", "# Beta\n\nThe beta valve is blue."),
                    "c": ("gamma.md", "# Gamma\n\nGamma filters are replaced yearly.")}
    source = make_source(kb, name, alice)
    first = run_source(source)
    assert first.status == RunStatus.SUCCEEDED and first.complete
    assert counts(first) == {"added": 3, "updated": 0, "unchanged": 0, "removed": 0, "failed": 0}
    docs = serving(kb)
    assert set(docs) == {"alpha.md", "beta.md", "gamma.md"}
    assert docs["alpha.md"].source_url == "https://memory.example/a"

    memory.items["b"] = ("beta.md", "# Beta\n\nThe beta valve is now painted green.")
    del memory.items["c"]
    memory.items["d"] = ("delta.md", "# Delta\n\nDelta hoses are rated for steam.")
    second = run_source(source)
    assert counts(second) == {"added": 1, "updated": 1, "unchanged": 1, "removed": 1, "failed": 0}
    # The connector was told what the first run kept, so alpha was never downloaded again.
    assert set(memory.scans[-1]["known"]) == {"a", "b", "c"}
    docs = serving(kb)
    assert set(docs) == {"alpha.md", "beta.md", "delta.md"}
    assert docs["beta.md"].version == 2 and not Document.objects.filter(source_name="gamma.md").exists()
    assert set(SourceItem.objects.filter(source=source).values_list("key", flat=True)) == {"a", "b", "d"}


def test_a_search_finds_the_new_text_and_not_the_old_after_an_update(kb, alice, site, make_source, run_source):
    memory, name = site
    memory.items = {"p": ("pricing.md", "# 价格\n\n专业版的年费是一万二千元，包含培训。")}
    source = make_source(kb, name, alice)
    run_source(source)
    assert found(kb, alice, "专业版年费一万二千元") == {"pricing.md"}
    memory.items["p"] = ("pricing.md", "# 价格\n\n旗舰版的月费是九百九十九元，不含培训。")
    assert counts(run_source(source))["updated"] == 1
    result = searched(user=alice, query="旗舰版月费九百九十九元", kbs=[kb])
    assert result.hit and any("九百九十九" in c.content for c in result.candidates)
    old = searched(user=alice, query="专业版年费一万二千元", kbs=[kb])
    assert not any("一万二千" in c.content for c in old.candidates)


def test_a_failed_item_is_counted_the_run_goes_on_and_the_old_version_keeps_serving(kb, alice, site, make_source, run_source):
    memory, name = site
    memory.items = {"a": ("a.md", "# A\n\nfirst text of a"), "b": ("b.md", "# B\n\ntext of b")}
    source = make_source(kb, name, alice)
    run_source(source)
    memory.items["a"] = ("a.md", "# A\n\nsecond text of a")
    memory.failing = {"a": "source_unreachable"}
    memory.items["c"] = ("c.md", "# C\n\ntext of c")
    run = run_source(source)
    assert counts(run) == {"added": 1, "updated": 0, "unchanged": 1, "removed": 0, "failed": 1}
    assert run.status == RunStatus.SUCCEEDED
    assert run.errors == [{"key": "a", "url": "https://memory.example/a", "code": "source_unreachable",
                           "message": run.errors[0]["message"]}] and "cannot read a" in run.errors[0]["message"]
    assert serving(kb)["a.md"].version == 1  # still the old one, and not removed


def test_an_item_the_upload_refuses_is_that_item_s_error(kb, alice, site, make_source, run_source):
    memory, name = site
    memory.items = {"x": ("tool.exe", "MZ binary"), "y": ("empty.md", "   "), "z": ("ok.md", "# OK\n\nfine")}
    run = run_source(make_source(kb, name, alice))
    assert counts(run)["added"] == 1 and counts(run)["failed"] == 2
    assert {e["key"]: e["code"] for e in run.errors} == {"x": "unsupported_type", "y": "empty_file"}


def test_an_incomplete_scan_removes_nothing(kb, alice, site, make_source, run_source):
    memory, name = site
    memory.items = {"a": ("a.md", "# A\n\naaa"), "b": ("b.md", "# B\n\nbbb")}
    source = make_source(kb, name, alice)
    run_source(source)
    del memory.items["b"]
    memory.complete = False
    run = run_source(source)
    assert run.status == RunStatus.SUCCEEDED and not run.complete and run.removed == 0 and run.note == "cut short"
    assert set(serving(kb)) == {"a.md", "b.md"}


def test_a_source_that_fails_midway_keeps_what_it_read_and_removes_nothing(kb, alice, site, make_source, run_source):
    memory, name = site
    memory.items = {"a": ("a.md", "# A\n\naaa"), "b": ("b.md", "# B\n\nbbb")}
    source = make_source(kb, name, alice)
    run_source(source)
    memory.items["a"] = ("a.md", "# A\n\naaa changed")
    memory.raise_after = 1
    run = run_source(source)
    assert run.status == RunStatus.FAILED and run.error_code == "source_unreachable" and "went away" in run.note
    assert run.updated == 1 and run.removed == 0 and set(serving(kb)) == {"a.md", "b.md"}


def test_a_name_held_by_an_upload_or_another_source_is_refused(kb, alice, site, make_site, make_source, run_source,
                                                              ingest):
    ingest(kb, {"manual.md": "# Manual\n\nuploaded by hand"})
    memory, name = site
    memory.items = {"m": ("manual.md", "# Manual\n\noverwritten?"), "s": ("shared.md", "# S\n\nfirst source")}
    run = run_source(make_source(kb, name, alice))
    assert {e["key"]: e["code"] for e in run.errors} == {"m": "source_name_taken"} and run.added == 1
    _, other_name = make_site(items={"s2": ("shared.md", "# S\n\nsecond source")})
    other = run_source(make_source(kb, other_name, alice))
    assert other.failed == 1 and other.errors[0]["code"] == "source_name_taken"
    docs = serving(kb)
    assert "uploaded by hand" in docs["manual.md"].chunks.first().content
    assert "first source" in docs["shared.md"].chunks.first().content


def test_a_cancelled_run_stops_and_removes_nothing(kb, alice, site, make_source, run_source, monkeypatch):
    from sources import run_claims

    monkeypatch.setattr(run_claims, "CANCEL_CHECK_SECONDS", 0.0)
    memory, name = site
    memory.items = {k: (f"{k}.md", f"# {k}\n\ntext {k}") for k in "abcd"}
    source = make_source(kb, name, alice)
    run_source(source)
    del memory.items["d"]

    def cancel_at(n: int) -> None:
        if n == 1:
            SourceRun.objects.filter(source=source, status=RunStatus.RUNNING).update(cancel_requested=True)

    memory.on_item = cancel_at
    run = run_source(source)
    assert run.status == RunStatus.CANCELLED and not run.complete
    assert run.unchanged == 1 and run.removed == 0 and "d.md" in serving(kb)


def test_two_runs_of_one_source_never_overlap(kb, alice, site, make_source):
    from core.errors import ApplicationError
    from sources.services.runs import run_create

    _, name = site
    source = make_source(kb, name, alice)
    run_create(source=source)
    with pytest.raises(ApplicationError) as refused:
        run_create(source=source)
    assert refused.value.code == "source_run_active" and refused.value.status_code == 409
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():  # the database itself refuses it
        SourceRun.objects.create(source=source, status=RunStatus.RUNNING)


def test_a_run_is_claimed_once_however_often_it_is_sent(kb, alice, site, make_source):
    from sources.run import execute_run
    from sources.services.runs import run_create

    memory, name = site
    memory.items = {"a": ("a.md", "# A\n\naaa")}
    run = run_create(source=make_source(kb, name, alice))
    assert execute_run(run.pk).status == RunStatus.SUCCEEDED
    assert execute_run(run.pk) is None and len(memory.scans) == 1
