"""Create, change and delete knowledge bases and their memberships; KB-wide re-tokenizing and re-embedding."""
from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from core.audit import Action, diff, record, snapshot
from core.errors import CoreError, fail
from knowledge import answer_models
from knowledge.embeddings import get_embedder
from knowledge.errors import KnowledgeError
from knowledge.files import delete_after_commit
from knowledge.ingestion.text import analyzer_for, faq_question, keyword_text
from knowledge.ingestion.vectors import content_hash, embed_in_batches, embed_questions
from knowledge.locks import lock_kb
from knowledge.models import Chunk, KnowledgeBase, Membership, Role
from knowledge.retrieval import defaults
from knowledge.services.labels import labels_reembed
from knowledge.titles import text_title

SETTING_FIELDS = (
    "description", "top_k", "candidates", "rrf_k", "vector_weight", "keyword_weight", "fusion",
    "rerank_enabled", "score_threshold", "answer_threshold", "not_found_text", "not_found_text_en", "user_words", "synonyms",
    "answer_mode", "answer_model", "system_prompt", "max_sources", "faq_direct_threshold", "learn_from_feedback",
)


def llm_models() -> list[str]:
    """The model choices a KB may answer with (knowledge/answer_models.py, offered by providers/): the environment's ``ZHIKU_LLM_MODEL`` and
    ``ZHIKU_LLM_MODELS`` first, then the models of the endpoints enabled in the console.

    Empty when no LLM is configured either way.
    """
    return [c.choice for c in answer_models.offered()]


def kb_bump_version(*, kb_id: int) -> None:
    """Bump the KB's content version; call inside the transaction that changed its content."""
    KnowledgeBase.objects.filter(pk=kb_id).update(version=F("version") + 1)


def embedding_model_check(*, model_id: str) -> int:
    """Check ``model_id`` is allowed, load it, and check its dimension fits the vector column; return it."""
    if model_id not in settings.ZHIKU_ALLOWED_EMBEDDING_MODELS:
        raise fail(KnowledgeError.UNKNOWN_EMBEDDING_MODEL, "not_allowed", model=model_id,
                   allowed=", ".join(settings.ZHIKU_ALLOWED_EMBEDDING_MODELS))
    dim = get_embedder(model_id).dim
    if dim != settings.ZHIKU_EMBEDDING_DIM:
        raise fail(KnowledgeError.EMBEDDING_DIMENSION_MISMATCH, model=model_id, dim=dim, stored=settings.ZHIKU_EMBEDDING_DIM)
    return dim


def _settle_lines(values: dict, *, gate: float, line: float) -> None:
    """The confidence line is never under the not-found gate (answered ⊂ not turned away).

    A gate raised above the line without a line of its own takes the line with it (a client that knows the one
    line there used to be keeps its meaning: below it nothing is answered); both given out of order is an error.
    """
    gate = float(values.get("score_threshold", gate))
    if "answer_threshold" not in values:
        if gate > float(line):
            values["answer_threshold"] = gate
        return
    if float(values["answer_threshold"]) < gate:
        raise fail(KnowledgeError.INVALID_THRESHOLD, "below_gate")


def _validate_settings(values: dict) -> None:
    if "user_words" in values:
        words = values["user_words"]
        if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
            raise fail(KnowledgeError.INVALID_USER_WORDS)
    if "synonyms" in values:
        groups = values["synonyms"]
        if not isinstance(groups, list) or not all(
            isinstance(g, list) and len(g) >= 2 and all(isinstance(w, str) and w.strip() for w in g) for g in groups
        ):
            raise fail(KnowledgeError.INVALID_SYNONYMS)
    for key in ("score_threshold", "answer_threshold"):
        if key in values and not 0 <= float(values[key]) <= 1:
            raise fail(KnowledgeError.INVALID_THRESHOLD, field=key)
    if "top_k" in values and not 1 <= int(values["top_k"]) <= 100:
        raise fail(KnowledgeError.INVALID_TOP_K, limit=100)
    for key in ("vector_weight", "keyword_weight"):
        if key in values and float(values[key]) < 0:
            raise fail(KnowledgeError.INVALID_WEIGHT, field=key)
    if values.get("answer_model"):
        values["answer_model"] = values["answer_model"].strip()
        found = answer_models.find(values["answer_model"])
        if found is None:
            allowed = llm_models()
            raise fail(KnowledgeError.UNKNOWN_ANSWER_MODEL, models=", ".join(allowed) or gettext("none (no language model is configured)"))
        values["answer_model"] = found.choice  # "<endpoint>/<model>" of an endpoint listed bare is stored as listed
    if values.get("max_sources") is not None and not 1 <= int(values["max_sources"]) <= 20:
        raise fail(KnowledgeError.INVALID_MAX_SOURCES, limit=20)
    if values.get("faq_direct_threshold") is not None and not 0 <= float(values["faq_direct_threshold"]) <= 1:
        raise fail(KnowledgeError.INVALID_THRESHOLD, field="faq_direct_threshold")


@transaction.atomic
def kb_create(*, owner, name: str, embedding_model: str | None = None, **values) -> KnowledgeBase:
    """Create a KB owned by ``owner``; the embedding model must fit the vector column."""
    name = (name or "").strip()
    if not name:
        raise fail(KnowledgeError.NAME_REQUIRED)
    unknown = set(values) - set(SETTING_FIELDS)
    if unknown:
        raise fail(CoreError.UNKNOWN_FIELD, fields=", ".join(sorted(unknown)))
    _validate_settings(values)
    _settle_lines(values, gate=defaults.THRESHOLD, line=defaults.ANSWER_THRESHOLD)
    model_id = embedding_model or settings.ZHIKU_EMBEDDING_MODEL
    dim = embedding_model_check(model_id=model_id)
    try:
        with transaction.atomic():
            kb = KnowledgeBase.objects.create(owner=owner, name=name, embedding_model=model_id, embedding_dim=dim, **values)
    except IntegrityError:
        raise fail(KnowledgeError.KB_NAME_TAKEN, name=name) from None
    record(Action.KB_CREATE, obj=kb, changes={"name": name, "owner": owner.get_username(), "embedding_model": model_id, **values})
    return kb


@transaction.atomic
def kb_update(*, kb: KnowledgeBase, **values) -> KnowledgeBase:
    """Change a KB's name or retrieval settings (not its embedding model: see ``kb_reembed``)."""
    allowed = set(SETTING_FIELDS) | {"name"}
    unknown = set(values) - allowed
    if unknown:
        raise fail(CoreError.UNKNOWN_FIELD, "fixed", fields=", ".join(sorted(unknown)))
    _validate_settings(values)
    if "name" in values:
        values["name"] = (values["name"] or "").strip()
        if not values["name"]:
            raise fail(KnowledgeError.NAME_REQUIRED)
    _settle_lines(values, gate=kb.score_threshold, line=kb.answer_threshold)
    analysis_changed = any(k in values and values[k] != getattr(kb, k) for k in ("user_words", "synonyms"))
    before = snapshot(kb, values)
    for key, value in values.items():
        setattr(kb, key, value)
    try:
        with transaction.atomic():
            kb.save()
    except IntegrityError:
        raise fail(KnowledgeError.KB_NAME_TAKEN, name=kb.name) from None
    changed = diff(before, snapshot(kb, values))
    if changed:
        record(Action.KB_UPDATE, obj=kb, changes=changed)
    # Retrieval settings change results too: bump so caches keyed on the version expire.
    kb_bump_version(kb_id=kb.pk)
    if analysis_changed:
        kb_retokenize(kb=kb)
    kb.refresh_from_db()
    return kb


def kb_delete(*, kb: KnowledgeBase) -> None:
    with transaction.atomic():
        record(Action.KB_DELETE, obj=kb, changes={"name": kb.name, "documents": kb.documents.count()})
        for document in kb.documents.all():
            if document.file:
                delete_after_commit(document.file)
        kb.delete()


def membership_set(*, kb: KnowledgeBase, role: str, user=None, group=None) -> Membership:
    """Give ``user`` or ``group`` (exactly one) ``role`` on ``kb``, replacing any earlier role."""
    if (user is None) == (group is None):
        raise fail(KnowledgeError.USER_XOR_GROUP)
    if role not in Role.values:
        raise fail(KnowledgeError.INVALID_ROLE, role=role)
    lookup = {"kb": kb, "user": user} if user is not None else {"kb": kb, "group": group}
    membership, _ = Membership.objects.update_or_create(**lookup, defaults={"role": role})
    return membership


def membership_remove(*, membership: Membership) -> None:
    membership.delete()


def kb_retokenize(*, kb: KnowledgeBase) -> int:
    """Re-tokenize every chunk of ``kb`` after its dictionary or synonyms changed; returns the count."""
    analyzer = analyzer_for(kb)
    changed = 0
    now = timezone.now()
    with transaction.atomic():
        chunks = list(Chunk.objects.filter(kb=kb).select_related("document").only(
            "id", "content", "section_path", "metadata", "document__title", "document__source_name"))
        for c in chunks:
            title = text_title(c.document.title, c.document.source_name)
            c.tokens = analyzer.tokenize(keyword_text(title=title, section_path=c.section_path, content=c.content,
                                                      metadata=c.metadata))
            c.tokens_fingerprint = analyzer.fingerprint
            c.updated_at = now  # bulk_update skips auto_now; the BM25 store diffs on it
            changed += 1
        Chunk.objects.bulk_update(chunks, ["tokens", "tokens_fingerprint", "updated_at"], batch_size=500)
        kb_bump_version(kb_id=kb.pk)
    return changed


def kb_reembed(*, kb: KnowledgeBase, model_id: str, progress=None) -> int:
    """Re-embed every chunk of ``kb`` with ``model_id`` and switch the KB to it in one transaction.

    Vectors are computed before anything is written, so searches keep using the
    old vectors (and model) until the switch commits; a failure changes nothing.
    """
    dim = embedding_model_check(model_id=model_id)
    rows = list(Chunk.objects.filter(kb=kb).values_list("id", "enriched", "chunk_type", "metadata__question", "content_hash"))
    vectors = embed_in_batches([text for _, text, _, _, _ in rows], model_id=model_id, on_progress=progress)
    # FAQ chunks' question vectors follow the model too (null for every other chunk).
    question_vectors = embed_questions([faq_question(t, {"question": q}) for _, _, t, q, _ in rows], model_id=model_id)
    with transaction.atomic():
        lock_kb(kb.pk)
        chunks = [Chunk(id=cid, embedding=vec, question_embedding=qvec, content_hash=content_hash(text, model_id))
                  for (cid, text, _, _, _), vec, qvec in zip(rows, vectors, question_vectors, strict=True)]
        Chunk.objects.bulk_update(chunks, ["embedding", "question_embedding", "content_hash"], batch_size=500)
        # The labels name passages by content hash, which names the model: they follow (knowledge/services/labels.py).
        labels_reembed(kb=kb, model_id=model_id, hashes={old: c.content_hash for (*_, old), c in zip(rows, chunks, strict=True)})
        KnowledgeBase.objects.filter(pk=kb.pk).update(embedding_model=model_id, embedding_dim=dim)
        if model_id != kb.embedding_model:
            record(Action.KB_UPDATE, obj=kb, changes={"embedding_model": [kb.embedding_model, model_id]})
        kb_bump_version(kb_id=kb.pk)
    kb.refresh_from_db()
    return len(rows)
