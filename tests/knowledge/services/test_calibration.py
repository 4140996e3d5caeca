"""Per-KB calibration of the relevance judge: questions, fit, curve, scheduling, the API and the evaluate trade-off."""
from __future__ import annotations

from itertools import pairwise

import pytest

from knowledge.keyword_store import keyword_store
from knowledge.models import EvalQuestion, JudgeCalibration, KnowledgeBase
from knowledge.retrieval import defaults
from knowledge.services import calibration
from knowledge.services.kbs import membership_set

DOCS = {
    "price.md": "# 价格\n\n知库专业版的价格是每月一百元，企业版请联系销售。按年付款可以打八折。\n",
    "install.md": "# 安装\n\n安装知库需要 Python 3.11。运行 make run 即可在本机启动，无需单独安装数据库。\n",
    "refund.md": "# 退款\n\n购买后七天内可以无理由退款，退款在三个工作日内原路返回。\n",
    "errors.md": "# 错误码\n\n错误码 ERR_1042 表示上传的文件超过大小上限，请压缩后重试。\n",
    "invoice.md": "# 发票\n\n企业客户可以在控制台申请增值税专用发票，财务会在五个工作日内寄出纸质发票。\n",
}

LABELLED = [
    ("知库专业版多少钱一个月", ["price.md"]), ("怎么安装知库", ["install.md"]), ("买了以后能退款吗", ["refund.md"]),
    ("ERR_1042 是什么错误", ["errors.md"]), ("怎么申请增值税发票", ["invoice.md"]),
    ("明天北京会下雨吗", []), ("红烧肉怎么做", []), ("世界上最高的山是哪座", []),
]

@pytest.fixture
def loaded(kb, ingest):
    ingest(kb, DOCS)
    keyword_store().invalidate_local()
    return kb

def monotone(curve, key, increasing):
    values = [p[key] for p in curve]
    pairs = list(pairwise(values))
    return all(b >= a for a, b in pairs) if increasing else all(b <= a for a, b in pairs)

@pytest.mark.django_db
class TestRecalibration:
    def test_self_calibration_of_a_fresh_kb(self, loaded):
        questions = calibration.self_questions(loaded)
        kinds = {q.kind for q in questions}
        assert {"keyword", "offtopic", "ontopic"} <= kinds
        assert sum(q.answerable for q in questions) == len(DOCS)

        row = calibration.recalibrate_kb(loaded.pk)
        row.refresh_from_db()

        assert row.status == "ready" and row.source == "self", row.error
        assert row.slope == 1.0 and abs(row.offset) <= 1.0
        assert row.answerable == len(DOCS) and row.unanswerable > calibration.OFFTOPIC_SAMPLE
        assert [p["threshold"] for p in row.curve] == list(calibration.THRESHOLDS)
        assert monotone(row.curve, "answerable_kept", increasing=False)
        assert monotone(row.curve, "unanswerable_rejected", increasing=True)
        assert row.curve[-1]["unanswerable_rejected"] > row.curve[0]["unanswerable_rejected"]
        kb = KnowledgeBase.objects.get(pk=loaded.pk)
        assert (kb.calibration_slope, kb.calibration_offset) == (row.slope, row.offset)
        assert kb.version == row.kb_version  # calibrating does not bump the version (caches key on the floats)

    def test_labelled_questions_switch_the_source(self, loaded, alice):
        for text, relevant in LABELLED:
            EvalQuestion.objects.create(kb=loaded, text=text, relevant=relevant, created_by=alice)
        row = calibration.recalibrate_kb(loaded.pk)
        assert row.status == "ready" and row.source == "labelled", row.error
        assert (row.answerable, row.unanswerable) == (5, 3)
        assert -3.0 <= row.offset <= 3.0 and row.slope == 1.0  # too few for a slope

    def test_offset_fit_is_pulled_towards_zero_and_clipped(self):
        z, y = [3.0] * 10 + [2.0] * 10, [1] * 10 + [0] * 10  # unanswerable look answerable: b must go down
        strong = calibration.fit(z, y, source="self")
        mild = calibration.fit(z, y, source="labelled")
        assert -1.0 <= strong.offset < 0 and mild.offset < strong.offset
        # A made-up-question shift under the dead zone is not applied; a labelled one is.
        small_z, small_y = [0.1] * 10 + [-0.1] * 10 + [0.05], [1] * 10 + [0] * 10 + [0]
        assert calibration.fit(small_z, small_y, source="self").offset == 0.0
        assert calibration.fit(small_z, small_y, source="labelled").offset != 0.0
        both = calibration.fit([1.0] * 20 + [-1.0] * 20, [1] * 20 + [0] * 20, source="labelled")
        assert both.slope > 1.0  # well separated: the slope sharpens



@pytest.mark.django_db
class TestScheduling:
    def test_ingestion_schedules_a_recalibration_only_when_auto_is_on(self, kb, ingest, settings, monkeypatch):
        calls = []
        monkeypatch.setattr(calibration, "recalibrate_kb", lambda kb_id, **kw: calls.append(kb_id))
        ingest(kb, {"price.md": DOCS["price.md"]})
        assert calls == [] and not JudgeCalibration.objects.filter(kb=kb).exists()

        settings.ZHIKU_AUTO_CALIBRATE = True
        ingest(kb, {"refund.md": DOCS["refund.md"]})
        assert calls == [kb.pk]
        assert JudgeCalibration.objects.get(kb=kb).status == "pending"

    def test_deleting_a_document_and_adding_questions_schedule_it(self, loaded, alice, client_for, settings,
                                                                   monkeypatch, django_capture_on_commit_callbacks):
        from knowledge.services.documents import document_delete

        calls = []
        monkeypatch.setattr(calibration, "recalibrate_kb", lambda kb_id, **kw: calls.append(kb_id))
        settings.ZHIKU_AUTO_CALIBRATE = True
        with django_capture_on_commit_callbacks(execute=True):
            document_delete(document=loaded.documents.get(source_name="price.md"))
        with django_capture_on_commit_callbacks(execute=True):
            response = client_for(alice).post(f"/api/kbs/{loaded.pk}/eval-questions/", {"text": "退款", "relevant": []},
                                              format="json")
        assert response.status_code == 201
        assert calls == [loaded.pk, loaded.pk]

    def test_a_search_never_runs_or_waits_for_a_calibration(self, loaded, alice, client_for, monkeypatch):
        client = client_for(alice)
        before = client.post("/api/search/", {"query": "知库专业版的价格是多少", "kb_ids": [loaded.pk]}, format="json").json()
        JudgeCalibration.objects.create(kb=loaded, status="running")

        def boom(*args, **kwargs):
            raise AssertionError("a search must not calibrate")

        monkeypatch.setattr(calibration, "recalibrate_kb", boom)
        monkeypatch.setattr(calibration, "schedule_recalibration", boom)
        response = client.post("/api/search/", {"query": "知库专业版的价格是多少", "kb_ids": [loaded.pk]}, format="json")
        assert response.status_code == 200
        after = response.json()
        assert (after["hit"], after["relevance"]) == (before["hit"], before["relevance"])
        # The KB's floats are all a search reads: a shifted offset moves its relevance at once.
        KnowledgeBase.objects.filter(pk=loaded.pk).update(calibration_offset=-2.0)
        shifted = client.post("/api/search/", {"query": "知库专业版的价格是多少", "kb_ids": [loaded.pk]}, format="json").json()
        assert shifted["relevance"] < before["relevance"]


ANSWERABLE = [0.9, 0.8, 0.7, 0.6, 0.3]
UNANSWERABLE = [0.05] * 20 + [0.25] * 10 + [0.45] * 6 + [0.65] * 3 + [0.97]


@pytest.fixture
def calibrated(loaded):
    JudgeCalibration.objects.create(
        kb=loaded, status="ready", source="self", slope=1.0, offset=0.2, answerable=5, unanswerable=40, kb_version=loaded.version,
        curve=calibration.trade_off_curve(ANSWERABLE, UNANSWERABLE),
        relevances={"answerable": ANSWERABLE, "unanswerable": UNANSWERABLE},
    )
    return loaded


@pytest.mark.django_db
class TestCalibrationApi:
    def test_a_kb_never_calibrated_reads_as_none_with_the_identity(self, loaded, alice, client_for):
        body = client_for(alice).get(f"/api/kbs/{loaded.pk}/calibration/").json()
        assert body["status"] == "none" and (body["slope"], body["offset"]) == (1.0, 0.0)
        assert body["threshold"] == loaded.score_threshold and body["curve"] == []

    def test_viewer_reads_but_cannot_change(self, calibrated, alice, bob, client_for):
        membership_set(kb=calibrated, user=bob, role="viewer")
        client = client_for(bob)
        body = client.get(f"/api/kbs/{calibrated.pk}/calibration/").json()
        assert body["status"] == "ready" and body["source"] == "self" and body["offset"] == 0.2
        assert len(body["curve"]) == len(calibration.THRESHOLDS)
        for response in (client.post(f"/api/kbs/{calibrated.pk}/calibration/"),
                         client.patch(f"/api/kbs/{calibrated.pk}/calibration/", {"threshold": 0.4}, format="json")):
            assert response.status_code == 403 and response.json()["error"]["code"] == "role_required"
        assert KnowledgeBase.objects.get(pk=calibrated.pk).score_threshold == defaults.THRESHOLD

    def test_owner_sets_the_threshold_or_a_target_rejection(self, calibrated, alice, client_for):
        client = client_for(alice)
        response = client.patch(f"/api/kbs/{calibrated.pk}/calibration/", {"threshold": 0.4}, format="json")
        assert response.status_code == 200 and response.json()["threshold"] == 0.4
        assert KnowledgeBase.objects.get(pk=calibrated.pk).score_threshold == 0.4
        # 90% of 40 unanswerable = 36 below t: the 0.45s must be rejected too, so the lowest t is 0.5.
        response = client.patch(f"/api/kbs/{calibrated.pk}/calibration/", {"target_rejection": 0.9}, format="json")
        assert response.status_code == 200 and response.json()["threshold"] == 0.5
        response = client.patch(f"/api/kbs/{calibrated.pk}/calibration/", {"target_rejection": 0.6}, format="json")
        assert KnowledgeBase.objects.get(pk=calibrated.pk).score_threshold == 0.3  # 30 of 40 below 0.3

    def test_the_outcomes_at_the_two_lines_are_read_off_each_questions_relevance(self, calibrated, alice, client_for):
        body = client_for(alice).get(f"/api/kbs/{calibrated.pk}/calibration/").json()
        assert (body["threshold"], body["answer_threshold"]) == (defaults.THRESHOLD, defaults.ANSWER_THRESHOLD)
        # Gate 0.12, line 0.7: answerable 0.9/0.8/0.7 answered, 0.6/0.3 uncertain; unanswerable 20 × 0.05 not found,
        # 19 between, the 0.97 answered.
        assert body["outcomes"]["answerable"] == {"answered": 0.6, "uncertain": 0.4, "not_found": 0.0}
        assert body["outcomes"]["unanswerable"] == {"answered": 0.025, "uncertain": 0.475, "not_found": 0.5}
        point = next(p for p in body["curve"] if p["threshold"] == 0.7)
        assert point["unanswerable_answered"] == 0.025 and point["answerable_kept"] == 0.6

    def test_owner_moves_the_confidence_line_and_the_gate_together_or_apart(self, calibrated, alice, client_for):
        client = client_for(alice)
        response = client.patch(f"/api/kbs/{calibrated.pk}/calibration/", {"answer_threshold": 0.6}, format="json")
        assert response.status_code == 200 and response.json()["answer_threshold"] == 0.6
        assert response.json()["outcomes"]["answerable"]["answered"] == 0.8
        # At most 5% of the unanswerable answered: 3 of 40 sit at 0.65, so the line goes above them, to 0.7.
        body = client.patch(f"/api/kbs/{calibrated.pk}/calibration/", {"answer_target_rejection": 0.95}, format="json").json()
        assert body["answer_threshold"] == 0.7
        # Keep every answerable question: the gate goes to the highest grid threshold under 0.3, the lowest of them.
        body = client.patch(f"/api/kbs/{calibrated.pk}/calibration/", {"target_kept": 1.0, "answer_threshold": 0.8},
                            format="json").json()
        assert (body["threshold"], body["answer_threshold"]) == (0.3, 0.8)
        kb = KnowledgeBase.objects.get(pk=calibrated.pk)
        assert (kb.score_threshold, kb.answer_threshold) == (0.3, 0.8)

    def test_a_gate_raised_past_the_line_takes_the_line_with_it(self, calibrated, alice, client_for):
        body = client_for(alice).patch(f"/api/kbs/{calibrated.pk}/calibration/", {"threshold": 0.9}, format="json").json()
        assert (body["threshold"], body["answer_threshold"]) == (0.9, 0.9)

    @pytest.mark.parametrize(("payload", "code"), [
        ({"threshold": 1.5}, "invalid"), ({"threshold": "x"}, "invalid"), ({}, "threshold_or_target"),
        ({"threshold": 0.3, "target_rejection": 0.9}, "threshold_or_target"), ({"slope": 2}, "unknown_field"),
        ({"target_rejection": 1.0}, "target_unreachable"),
        ({"answer_threshold": 0.5, "answer_target_rejection": 0.9}, "threshold_or_target"),
        ({"threshold": 0.6, "answer_threshold": 0.5}, "invalid_threshold"),
    ])
    def test_bad_input_is_400_with_a_code(self, calibrated, alice, client_for, payload, code):
        response = client_for(alice).patch(f"/api/kbs/{calibrated.pk}/calibration/", payload, format="json")
        assert response.status_code == 400 and response.json()["error"]["code"] == code
        assert KnowledgeBase.objects.get(pk=calibrated.pk).score_threshold == defaults.THRESHOLD

    def test_target_rejection_needs_a_ready_calibration(self, loaded, alice, client_for):
        response = client_for(alice).patch(f"/api/kbs/{loaded.pk}/calibration/", {"target_rejection": 0.9}, format="json")
        assert response.status_code == 409 and response.json()["error"]["code"] == "not_calibrated"

    def test_owner_post_recalibrates(self, loaded, alice, client_for, django_capture_on_commit_callbacks):
        with django_capture_on_commit_callbacks(execute=True):
            response = client_for(alice).post(f"/api/kbs/{loaded.pk}/calibration/")
        assert response.status_code == 202 and response.json()["status"] == "pending"
        body = client_for(alice).get(f"/api/kbs/{loaded.pk}/calibration/").json()
        assert body["status"] == "ready" and body["source"] == "self" and len(body["curve"]) == len(calibration.THRESHOLDS)

    def test_evaluate_returns_the_trade_off(self, loaded, alice, client_for):
        for text, relevant in LABELLED:
            EvalQuestion.objects.create(kb=loaded, text=text, relevant=relevant, created_by=alice)
        body = client_for(alice).post(f"/api/kbs/{loaded.pk}/evaluate/", {}, format="json").json()
        curve = body["trade_off"]
        assert [p["threshold"] for p in curve] == list(calibration.THRESHOLDS)
        at_gate = next(p for p in curve if p["threshold"] == loaded.score_threshold)
        # The curve at the KB's gate agrees with the run's own not-found verdicts.
        assert at_gate["unanswerable_rejected"] == body["abstain_rate"]
        assert at_gate["answerable_kept"] == round(1 - body["false_abstain_rate"], 4)
        assert monotone(curve, "answerable_kept", increasing=False)


@pytest.mark.django_db
def test_hit_test_page_shows_the_operating_point_panel(loaded, alice, bob, client):
    membership_set(kb=loaded, user=bob, role="editor")
    client.force_login(alice)
    page = client.get(f"/kbs/{loaded.pk}/hit-test/").content.decode()
    assert 'id="operating-point"' in page and 'data-owner="1"' in page and "calibration.js" in page
    client.force_login(bob)
    page = client.get(f"/kbs/{loaded.pk}/hit-test/").content.decode()
    assert 'id="operating-point"' in page and 'data-owner=""' in page


@pytest.mark.django_db
def test_a_recalibration_that_cannot_be_queued_never_fails_the_ingestion(kb, ingest, settings, monkeypatch):
    """Ingestion schedules a recalibration; when running it fails (broker down, say), the document is still ready."""
    settings.ZHIKU_AUTO_CALIBRATE = True
    settings.ZHIKU_INGEST_MODE = "sync"

    def broken(kb_id):
        raise ConnectionError("broker down")

    monkeypatch.setattr(calibration, "recalibrate_kb", broken)
    (document,) = ingest(kb, {"说明.md": "# 说明\n\n本产品整机保修两年，电池保修一年。\n"})
    assert document.status == "ready" and document.chunks.count() == 1


@pytest.mark.django_db
def test_a_scheduled_recalibration_with_unchanged_inputs_is_not_refitted(loaded, monkeypatch):
    first = calibration.recalibrate_kb(loaded.pk)
    assert first.status == "ready" and first.inputs
    searched = []
    real = calibration.raw_logits
    monkeypatch.setattr(calibration, "raw_logits", lambda kb, qs: searched.append(len(qs)) or real(kb, qs))
    again = calibration.recalibrate_kb(loaded.pk, if_changed=True)
    assert searched == [] and again.status == "ready" and again.offset == first.offset
    # A content change (the KB's version) makes the next scheduled run refit.
    KnowledgeBase.objects.filter(pk=loaded.pk).update(version=loaded.version + 1)
    calibration.recalibrate_kb(loaded.pk, if_changed=True)
    assert len(searched) == 1


@pytest.mark.django_db
def test_too_little_content_is_stored_as_a_code_and_read_in_the_readers_language(kb, alice, client_for):
    """An empty KB cannot be calibrated: the row keeps the code and the numbers, and the API (the hit-test page's
    source) answers the sentence in the reader's language, never the language the fit ran in."""
    import json

    from django.utils import translation

    from knowledge.services.calibration_results import calibration_payload

    with translation.override("en"):
        row = calibration.recalibrate_kb(kb.pk)
    row.refresh_from_db()
    assert row.status == "failed"
    assert json.loads(row.error) == {"code": "not_enough_questions",
                                     "params": {"usable": 0, "needed": calibration.MIN_SELF_ANSWERABLE}}
    with translation.override("zh-hans"):
        chinese = calibration_payload(kb)
    with translation.override("en"):
        english = calibration_payload(kb)
    assert chinese["error_code"] == english["error_code"] == "not_enough_questions"
    assert "校准" in chinese["error"] and str(calibration.MIN_SELF_ANSWERABLE) in chinese["error"]
    assert english["error"] == (f"The KB has 0 usable passages; calibration needs at least "
                                f"{calibration.MIN_SELF_ANSWERABLE}.")
    answer = client_for(alice).get(f"/api/kbs/{kb.pk}/calibration/", HTTP_ACCEPT_LANGUAGE="zh-hans").json()
    assert answer["error"] == chinese["error"] and answer["error_code"] == "not_enough_questions"
