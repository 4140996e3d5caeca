"""A KB's stored calibration read back: its API payload, what its questions get at the KB's two lines, and the
thresholds picked from its trade-off curve (the fit itself is knowledge.services.calibration)."""
from __future__ import annotations

from collections.abc import Sequence

from core.errors import stored_text
from knowledge.models import JudgeCalibration, KnowledgeBase
from knowledge.retrieval.judge import Judge, verdict_shares


def outcomes_at(relevances: dict, *, gate: float, line: float) -> dict:
    """The share of each verdict among the calibration's answerable and unanswerable questions, at these two lines."""
    out = {}
    for kind in ("answerable", "unanswerable"):
        values = list((relevances or {}).get(kind) or [])
        out[kind] = verdict_shares([Judge.verdict(p, gate, line) for p in values])
    return out


def calibration_payload(kb: KnowledgeBase) -> dict:
    """The API shape: the stored calibration (status "none" and the identity when never calibrated).

    ``threshold`` is the KB's not-found gate and ``answer_threshold`` its confidence line; ``outcomes`` what the
    calibration's questions get at those two lines; ``error`` why the last fit failed, in the reader's language
    (``error_code`` its registered code, "" for an unexpected failure, whose text is technical).
    """
    row = JudgeCalibration.objects.filter(kb=kb).first()
    lines = {"threshold": kb.score_threshold, "answer_threshold": kb.answer_threshold}
    if row is None:
        return {"status": "none", "source": "", "slope": 1.0, "offset": 0.0, **lines,
                "answerable": 0, "unanswerable": 0, "curve": [], "outcomes": outcomes_at({}, gate=0, line=0),
                "kb_version": None, "updated_at": None, "error": "", "error_code": ""}
    code, error = stored_text(row.error)
    return {"status": row.status, "source": row.source, "slope": row.slope, "offset": row.offset, **lines,
            "answerable": row.answerable, "unanswerable": row.unanswerable, "curve": row.curve,
            "outcomes": outcomes_at(row.relevances, gate=kb.score_threshold, line=kb.answer_threshold),
            "kb_version": row.kb_version or None,
            "updated_at": row.updated_at.isoformat() if row.updated_at else None, "error": error, "error_code": code}


def threshold_for_kept(curve: Sequence[dict], target: float) -> float | None:
    """The highest curve threshold that keeps at least ``target`` of the answerable questions (for the gate)."""
    for point in sorted(curve, key=lambda p: -p["threshold"]):
        share = point.get("answerable_kept")
        if share is not None and share >= target - 1e-9:
            return float(point["threshold"])
    return None


def threshold_for_rejection(curve: Sequence[dict], target: float) -> float | None:
    """The lowest curve threshold that rejects at least ``target`` of the unanswerable questions."""
    for point in sorted(curve, key=lambda p: p["threshold"]):
        share = point.get("unanswerable_rejected")
        if share is not None and share >= target - 1e-9:
            return float(point["threshold"])
    return None
