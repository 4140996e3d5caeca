"""Per-KB calibration of the relevance judge: questions, fit, curve, scheduling, the API and the evaluate trade-off."""
from __future__ import annotations

import pytest

from knowledge.models import EvalQuestion, JudgeCalibration, KnowledgeBase
from knowledge.services import calibration
from knowledge.services.kbs import membership_set
from knowledge.stores import keyword_store

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
    pairs = list(zip(values, values[1:]))
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
        both = calibration.fit([1.0] * 20 + [-1.0] * 20, [1] * 20 + [0] * 20, source="labelled")
        assert both.slope > 1.0  # well separated: the slope sharpens

