"""Pages people use in the browser (the console): the KB list, a KB, a document, a KB's settings, hit testing.

Every page asks ``knowledge.access`` (through ``knowledge.selectors``) what the caller may see: a KB they
hold no role on is a 404, one they hold too weak a role on is a 403. The pages render what they read and
leave changes to the REST API, which the page scripts call with the session cookie and the CSRF token.
"""
from __future__ import annotations

from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_http_methods

from core.errors import ApplicationError, NotFound
from core.errors import PermissionDenied as AppPermissionDenied
from knowledge import answer_models, selectors
from knowledge.access import kb_role, kbs_for_user, role_at_least
from knowledge.errors import document_failure_text
from knowledge.ingestion.text import CHUNK_OVERLAP_MAX, CHUNK_SIZE_MAX, CHUNK_SIZE_MIN
from knowledge.models import AnswerMode, ChunkRevision, Document, KnowledgeBase, Role
from knowledge.parsers import SUPPORTED_EXTENSIONS
from knowledge.services.kbs import kb_create
from knowledge.services.versions import version_list

# Visible words, in one place (translated: locale/, docs/i18n.md).
ROLE_LABELS: dict[Role | None, str | Promise] = {Role.OWNER: _("owner"), Role.EDITOR: _("editor"), Role.VIEWER: _("viewer")}
STATUS_LABELS = {"pending": _("pending"), "processing": _("processing"), "ready": _("ready"), "failed": _("failed")}
CHUNK_TYPE_LABELS = {"text": _("body text"), "heading": _("heading"), "table": _("table"), "faq": _("FAQ")}
CHUNKS_PER_PAGE = 50


def _kb_for(request: HttpRequest, kb_id: int, min_role: Role = Role.VIEWER) -> KnowledgeBase:
    """The KB if the caller holds ``min_role`` on it; no role at all is a 404 (its existence stays hidden), too weak a role a 403."""
    try:
        return selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=min_role)
    except NotFound:
        raise Http404("Knowledge base not found.") from None
    except AppPermissionDenied as exc:
        raise PermissionDenied(exc.message) from None


def _role_context(request: HttpRequest, kb: KnowledgeBase) -> dict:
    role = kb_role(user=request.user, kb=kb)
    return {
        "role": role, "role_label": ROLE_LABELS.get(role, ""),
        "can_edit": role_at_least(role, Role.EDITOR), "is_owner": role_at_least(role, Role.OWNER),
    }


class KBCreateForm(forms.Form):
    name = forms.CharField(max_length=200, label=_("Name"))
    description = forms.CharField(max_length=20000, required=False, label=_("Description"), widget=forms.Textarea(attrs={"rows": 2}))


@require_http_methods(["GET", "POST"])
def home(request: HttpRequest) -> HttpResponse:
    """The caller's knowledge bases (counts of what they may read, last change, their role) and a form to create one."""
    if not request.user.is_authenticated:
        if request.method == "POST":
            return redirect("/accounts/login/?next=/")
        return render(request, "home.html", {"kbs": []})
    form = KBCreateForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            kb = kb_create(owner=request.user, name=form.cleaned_data["name"], description=form.cleaned_data["description"])
        except ApplicationError as exc:
            form.add_error("name", gettext("You already have a knowledge base with this name.") if exc.code == "kb_name_taken"
                           else exc.message)
        else:
            return redirect("kb", kb_id=kb.pk)
    kbs = list(selectors.kbs_with_caller_info(kbs_for_user(user=request.user), user=request.user).order_by("name", "id")[:200])
    selectors.set_caller_role(kbs, user=request.user)
    for kb in kbs:
        kb.role_label = ROLE_LABELS.get(kb.caller_role, "")
        kb.last_change = max(filter(None, [kb.updated_at, cast(Any, kb).last_document_at]))  # annotated by the selector
    return render(request, "home.html", {"kbs": kbs, "form": form})


@login_required
@ensure_csrf_cookie
def kb_page(request: HttpRequest, kb_id: int) -> HttpResponse:
    """A KB: its documents with live status, upload and document actions (editors), search within it."""
    kb = _kb_for(request, kb_id)
    return render(request, "knowledge/kb.html", {
        "kb": kb, "accept": ",".join(sorted(SUPPORTED_EXTENSIONS)), "accept_words": " ".join(sorted(SUPPORTED_EXTENSIONS)),
        **_role_context(request, kb),
        "chunk_size": settings.ZHIKU_CHUNK_MAX_CHARS, "chunk_overlap": settings.ZHIKU_CHUNK_OVERLAP_CHARS,
        "chunk_size_min": CHUNK_SIZE_MIN, "chunk_size_max": CHUNK_SIZE_MAX, "chunk_overlap_max": CHUNK_OVERLAP_MAX,
    })


@login_required
@ensure_csrf_cookie
def document_page(request: HttpRequest, kb_id: int, document_id: int) -> HttpResponse:
    """A document: its chunks in order with section path and pages; editors edit a chunk's text or switch it on/off."""
    kb = _kb_for(request, kb_id)
    document = selectors.document_list(user=request.user, kb=kb).filter(pk=document_id).first()
    if document is None:
        moved = selectors.document_moved_to(user=request.user, kb=kb, document_id=document_id)  # an id it used to have
        if moved is not None:
            return redirect("document", kb.pk, moved, permanent=True)
        raise Http404("Document not found.")
    chunks = selectors.chunk_list(user=request.user, kb=kb).filter(document=document).defer(
        "embedding", "question_embedding", "enriched", "tokens")
    page = Paginator(chunks, CHUNKS_PER_PAGE).get_page(request.GET.get("page"))
    for chunk in page:
        chunk.type_label = CHUNK_TYPE_LABELS.get(chunk.chunk_type, chunk.chunk_type)
        chunk.ocr = _ocr_reading(chunk.metadata or {})
    newer = Document.objects.filter(replaces=document).values_list("pk", flat=True).first()
    return render(request, "knowledge/document.html", {
        "kb": kb, "document": document, "status_label": STATUS_LABELS.get(document.status, document.status),
        "page": page, "newer_id": newer, **_role_context(request, kb), "versions": version_list(document=document)[:50],
        "revised_ids": set(ChunkRevision.objects.filter(chunk__in=list(page)).values_list("chunk_id", flat=True)),
        "group_names": sorted(document.restricted_to_groups.values_list("name", flat=True)),
        # The failure in the viewer's language, from its code (the stored message is English, as written at ingestion).
        "error_text": document_failure_text(document.error_code, document.error_message) if document.error_code else "",
        "error_detail": document.error_message,
    })


# Below this OCR confidence the page asks to check a chunk against the original (RapidOCR's scores run 0–1; clean
# generated scans read at 0.9 and above, tests/knowledge/parsers/test_ocr.py).
OCR_LOW_CONFIDENCE = 0.8


def _ocr_reading(metadata: dict) -> dict | None:
    """How a chunk was read by OCR, for its badge: ``{"percent", "low"}`` (percent None when unknown); None if it was not."""
    confidence = metadata.get("ocr_confidence")
    if not isinstance(confidence, (int, float)) or isinstance(confidence, bool):
        confidence = None
    if confidence is None and not metadata.get("ocr"):
        return None
    return {"percent": None if confidence is None else round(confidence * 100),
            "low": confidence is not None and confidence < OCR_LOW_CONFIDENCE}


@login_required
@ensure_csrf_cookie
def kb_settings_page(request: HttpRequest, kb_id: int) -> HttpResponse:
    """A KB's settings (owners): name, description, retrieval and answer settings explained, the not-found text, members."""
    kb = _kb_for(request, kb_id, min_role=Role.OWNER)
    return render(request, "knowledge/kb_settings.html", {
        "kb": kb, "role_labels": ROLE_LABELS, **_role_context(request, kb),
        "answer_modes": AnswerMode.choices, **_llm_context(),
        "user_words_text": "\n".join(kb.user_words or []),
        "synonyms_text": "\n".join(" ".join(group) for group in kb.synonyms or []),
    })


def _llm_context() -> dict:
    """The model choices a KB may answer with (knowledge/answer_models.py, offered by providers/), their strings, and the site's default."""
    choices = answer_models.offered()
    return {"llm_choices": choices, "llm_models": [c.choice for c in choices],
            "llm_default": next((c for c in choices if c.is_default), None)}


@login_required
def hit_test(request: HttpRequest, kb_id: int) -> HttpResponse:
    """命中测试: an editor of the KB searches it and sees every stage's ranks and scores."""
    kb = _kb_for(request, kb_id, min_role=Role.EDITOR)
    role = kb_role(user=request.user, kb=kb)
    return render(request, "knowledge/hit_test.html", {"kb": kb, "is_owner": role == Role.OWNER,
                                                       "can_label": role in (Role.EDITOR, Role.OWNER)})


@login_required
@ensure_csrf_cookie
def evaluation_page(request: HttpRequest, kb_id: int) -> HttpResponse:
    """评测 (editors): the KB's labelled questions, adding and deleting them, and a run with its metrics."""
    kb = _kb_for(request, kb_id, min_role=Role.EDITOR)
    return render(request, "knowledge/evaluation.html", {"kb": kb, **_role_context(request, kb)})


@login_required
@ensure_csrf_cookie
def labels_page(request: HttpRequest, kb_id: int) -> HttpResponse:
    """标注审核 (editors): votes on answers waiting for review, confirmed and rejected labels (knowledge/api/labels.py)."""
    kb = _kb_for(request, kb_id, min_role=Role.EDITOR)
    return render(request, "knowledge/labels.html", {"kb": kb, **_role_context(request, kb)})
