"""Create, change and delete knowledge bases and their memberships."""
from __future__ import annotations

from django.utils.translation import gettext
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from knowledge.embeddings import get_embedder
from knowledge.errors import Conflict, EmbeddingError, ValidationFailed
from knowledge.models import KnowledgeBase, Membership, Role
from knowledge.retrieval import defaults

SETTING_FIELDS = (
    "description", "top_k", "candidates", "rrf_k", "vector_weight", "keyword_weight", "fusion",
    "rerank_enabled", "score_threshold", "answer_threshold", "not_found_text", "user_words", "synonyms",
    "answer_mode", "answer_model", "system_prompt", "max_sources", "faq_direct_threshold",
)


def llm_models() -> list[str]:
    """The models a KB may answer with: the site's ``ZHIKU_LLM_MODEL`` first, then ``ZHIKU_LLM_MODELS``.

    Empty when no LLM endpoint is configured (``ZHIKU_LLM_BASE_URL`` and ``ZHIKU_LLM_MODEL``).
    """
    base_url = str(getattr(settings, "ZHIKU_LLM_BASE_URL", "") or "").strip()
    default = str(getattr(settings, "ZHIKU_LLM_MODEL", "") or "").strip()
    if not base_url or not default:
        return []
    extra = getattr(settings, "ZHIKU_LLM_MODELS", []) or []
    if isinstance(extra, str):
        extra = extra.split(",")
    return list(dict.fromkeys([default, *(str(m).strip() for m in extra if str(m).strip())]))


def kb_bump_version(*, kb_id: int) -> None:
    """Bump the KB's content version; call inside the transaction that changed its content."""
    KnowledgeBase.objects.filter(pk=kb_id).update(version=F("version") + 1)


def embedding_model_check(*, model_id: str) -> int:
    """Check ``model_id`` is allowed, load it, and check its dimension fits the vector column; return it."""
    if model_id not in settings.ZHIKU_ALLOWED_EMBEDDING_MODELS:
        raise EmbeddingError(
            gettext("Embedding model %(model)r is not allowed here; allowed: %(allowed)s (ZHIKU_ALLOWED_EMBEDDING_MODELS).")
            % {"model": model_id, "allowed": ", ".join(settings.ZHIKU_ALLOWED_EMBEDDING_MODELS)},
            code="unknown_embedding_model",
        )
    dim = get_embedder(model_id).dim
    if dim != settings.ZHIKU_EMBEDDING_DIM:
        raise EmbeddingError(
            gettext("Model %(model)r produces %(dim)s-dimensional vectors but this installation stores "
                    "%(stored)s (ZHIKU_EMBEDDING_DIM).") % {"model": model_id, "dim": dim, "stored": settings.ZHIKU_EMBEDDING_DIM},
            code="embedding_dimension_mismatch",
        )
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
        raise ValidationFailed(
            gettext("answer_threshold (the confidence line) must be at least score_threshold (the not-found gate)."),
            code="invalid_threshold")


def _validate_settings(values: dict) -> None:
    if "user_words" in values:
        words = values["user_words"]
        if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
            raise ValidationFailed(gettext("user_words must be a list of non-empty strings."), code="invalid_user_words")
    if "synonyms" in values:
        groups = values["synonyms"]
        if not isinstance(groups, list) or not all(
            isinstance(g, list) and len(g) >= 2 and all(isinstance(w, str) and w.strip() for w in g) for g in groups
        ):
            raise ValidationFailed(gettext("synonyms must be a list of groups of at least two strings."), code="invalid_synonyms")
    for key in ("score_threshold", "answer_threshold"):
        if key in values and not 0 <= float(values[key]) <= 1:
            raise ValidationFailed(gettext("%(field)s must be between 0 and 1.") % {"field": key}, code="invalid_threshold")
    if "top_k" in values and not 1 <= int(values["top_k"]) <= 100:
        raise ValidationFailed(gettext("top_k must be between 1 and 100."), code="invalid_top_k")
    for key in ("vector_weight", "keyword_weight"):
        if key in values and float(values[key]) < 0:
            raise ValidationFailed(gettext("%(field)s must not be negative.") % {"field": key}, code="invalid_weight")
    if values.get("answer_model"):
        values["answer_model"] = values["answer_model"].strip()
        allowed = llm_models()
        if values["answer_model"] not in allowed:
            raise ValidationFailed(
                gettext("answer_model must be one of the configured models: %(models)s.")
                % {"models": ", ".join(allowed) or gettext("none (no language model is configured)")},
                code="unknown_answer_model",
            )
    if values.get("max_sources") is not None and not 1 <= int(values["max_sources"]) <= 20:
        raise ValidationFailed(gettext("max_sources must be between 1 and 20."), code="invalid_max_sources")
    if values.get("faq_direct_threshold") is not None and not 0 <= float(values["faq_direct_threshold"]) <= 1:
        raise ValidationFailed(gettext("faq_direct_threshold must be between 0 and 1."), code="invalid_threshold")


@transaction.atomic
def kb_create(*, owner, name: str, embedding_model: str | None = None, **values) -> KnowledgeBase:
    """Create a KB owned by ``owner``; the embedding model must fit the vector column."""
    name = (name or "").strip()
    if not name:
        raise ValidationFailed(gettext("A knowledge base needs a name."), code="name_required")
    unknown = set(values) - set(SETTING_FIELDS)
    if unknown:
        raise ValidationFailed(gettext("Unknown fields: %(fields)s.") % {"fields": ", ".join(sorted(unknown))}, code="unknown_field")
    _validate_settings(values)
    _settle_lines(values, gate=defaults.THRESHOLD, line=defaults.ANSWER_THRESHOLD)
    model_id = embedding_model or settings.ZHIKU_EMBEDDING_MODEL
    dim = embedding_model_check(model_id=model_id)
    try:
        with transaction.atomic():
            return KnowledgeBase.objects.create(owner=owner, name=name, embedding_model=model_id, embedding_dim=dim, **values)
    except IntegrityError:
        raise Conflict(gettext("You already have a knowledge base named %(name)r.") % {"name": name}, code="kb_name_taken") from None


@transaction.atomic
def kb_update(*, kb: KnowledgeBase, **values) -> KnowledgeBase:
    """Change a KB's name or retrieval settings (not its embedding model: see ``kb_reembed``)."""
    allowed = set(SETTING_FIELDS) | {"name"}
    unknown = set(values) - allowed
    if unknown:
        raise ValidationFailed(gettext("These fields cannot be changed here: %(fields)s.") % {"fields": ", ".join(sorted(unknown))},
                               code="unknown_field")
    _validate_settings(values)
    if "name" in values:
        values["name"] = (values["name"] or "").strip()
        if not values["name"]:
            raise ValidationFailed(gettext("A knowledge base needs a name."), code="name_required")
    _settle_lines(values, gate=kb.score_threshold, line=kb.answer_threshold)
    analysis_changed = any(k in values and values[k] != getattr(kb, k) for k in ("user_words", "synonyms"))
    for key, value in values.items():
        setattr(kb, key, value)
    try:
        with transaction.atomic():
            kb.save()
    except IntegrityError:
        raise Conflict(gettext("You already have a knowledge base named %(name)r.") % {"name": kb.name}, code="kb_name_taken") from None
    # Retrieval settings change results too: bump so caches keyed on the version expire.
    kb_bump_version(kb_id=kb.pk)
    if analysis_changed:
        from knowledge.services.documents import kb_retokenize

        kb_retokenize(kb=kb)
    kb.refresh_from_db()
    return kb


def kb_delete(*, kb: KnowledgeBase) -> None:
    with transaction.atomic():
        for document in kb.documents.all():
            if document.file:
                transaction.on_commit(lambda f=document.file: f.storage.delete(f.name))
        kb.delete()


def membership_set(*, kb: KnowledgeBase, role: str, user=None, group=None) -> Membership:
    """Give ``user`` or ``group`` (exactly one) ``role`` on ``kb``, replacing any earlier role."""
    if (user is None) == (group is None):
        raise ValidationFailed(gettext("Give exactly one of user or group."), code="user_xor_group")
    if role not in Role.values:
        raise ValidationFailed(gettext("Unknown role %(role)r; use viewer, editor or owner.") % {"role": role}, code="invalid_role")
    lookup = {"kb": kb, "user": user} if user is not None else {"kb": kb, "group": group}
    membership, _ = Membership.objects.update_or_create(**lookup, defaults={"role": role})
    return membership


def membership_remove(*, membership: Membership) -> None:
    membership.delete()
