"""Reads with permissions applied (the rule itself is ``knowledge.access``): KBs, documents, chunks, labelled questions."""
from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import Group
from django.db.models import Count, DateTimeField, IntegerField, Max, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from core.errors import fail
from knowledge.access import (
    caller_role,
    documents_readable_q,
    has_role,
    kb_role,
    kbs_with_caller_access,
    role_at_least,
    scope_of_annotated,
    with_caller_role,
)
from knowledge.errors import KnowledgeError
from knowledge.models import Chunk, Document, DocumentAlias, DocumentStatus, EvalQuestion, KnowledgeBase, Role, document_labels
from knowledge.retrieval.protocols import AccessScope


def kb_get_for_user(*, user, kb_id, min_role: Role = Role.VIEWER) -> KnowledgeBase:
    """Return the KB if the user holds at least ``min_role``.

    A KB the user cannot read raises NotFound (its existence is not revealed);
    one they can read but not change raises PermissionDenied.
    """
    try:
        kb = KnowledgeBase.objects.get(pk=int(kb_id))
    except (KnowledgeBase.DoesNotExist, TypeError, ValueError):
        raise fail(KnowledgeError.KB_NOT_FOUND) from None
    role = kb_role(user=user, kb=kb)
    if role is None:
        raise fail(KnowledgeError.KB_NOT_FOUND)
    if not role_at_least(role, min_role):
        raise fail(KnowledgeError.ROLE_REQUIRED, role=min_role.label)
    return kb


def kbs_get_for_user(*, user, kb_ids, min_role: Role = Role.VIEWER) -> tuple[list[KnowledgeBase], AccessScope]:
    """``kb_get_for_user`` of each id, in the order given, and the ``AccessScope`` of a search of them, in one query.

    The first id that fails, in the order given, raises what ``kb_get_for_user`` raises for it.
    """
    ids = [int(k) for k in kb_ids]
    if not ids or not user.is_authenticated:
        if ids:
            raise fail(KnowledgeError.KB_NOT_FOUND)
        return [], scope_of_annotated(user=user, kbs=[])
    found = {kb.pk: kb for kb in kbs_with_caller_access(user=user, kb_ids=ids)}
    kbs: list[KnowledgeBase] = []
    for kb_id in dict.fromkeys(ids):
        kb = found.get(kb_id)
        role = caller_role(kb, user=user) if kb is not None else None
        if kb is None or role is None:
            raise fail(KnowledgeError.KB_NOT_FOUND)
        if not role_at_least(role, min_role):
            raise fail(KnowledgeError.ROLE_REQUIRED, role=min_role.label)
        kbs.append(kb)
    return kbs, scope_of_annotated(user=user, kbs=kbs)


def kbs_with_caller_info(qs: QuerySet[KnowledgeBase], *, user) -> QuerySet[KnowledgeBase]:
    """Annotate document/chunk counts, the newest document change and the caller's best membership rank, in one query.

    Counts hold only what the caller may read: a viewer outside a document's groups doesn't learn it exists.
    Read the role back with ``set_caller_role`` (or ``knowledge.access.caller_role``).
    """
    readable = Document.objects.filter(documents_readable_q(user=user), kb=OuterRef("pk")).order_by().values("kb")
    docs = readable.annotate(n=Count("pk")).values("n")
    last = readable.annotate(t=Max("updated_at")).values("t")
    chunks = (Chunk.objects.filter(documents_readable_q(user=user, prefix="document__"), kb=OuterRef("pk"))
              .order_by().values("kb").annotate(n=Count("pk")).values("n"))
    return with_caller_role(qs, user=user).select_related("owner").annotate(
        document_count=Coalesce(Subquery(docs, output_field=IntegerField()), 0),
        chunk_count=Coalesce(Subquery(chunks, output_field=IntegerField()), 0),
        last_document_at=Subquery(last, output_field=DateTimeField()),
    )


def set_caller_role(kbs, *, user) -> None:
    """Set ``caller_role`` on KBs annotated by ``kbs_with_caller_info``."""
    for kb in kbs:
        kb.caller_role = caller_role(kb, user=user)


def document_list(*, user, kb: KnowledgeBase) -> QuerySet[Document]:
    return Document.objects.filter(documents_readable_q(user=user), kb=kb).order_by("-id")


def document_moved_to(*, user, kb: KnowledgeBase, document_id: int) -> int | None:
    """The document an old id of the KB now belongs to (knowledge/version_models.py, ``DocumentAlias``), when no row
    has that id and ``user`` may read the document it moved to; else None. The API's 308 and the page's redirect
    both ask here, so an old id never names a document its reader may not see."""
    if Document.objects.filter(pk=document_id).exists():
        return None
    new_id = DocumentAlias.objects.filter(old_id=document_id, document__kb_id=kb.pk).values_list("document_id", flat=True).first()
    if new_id is None or not document_list(user=user, kb=kb).filter(pk=new_id).exists():
        return None
    return new_id


def chunk_list(*, user, kb: KnowledgeBase) -> QuerySet[Chunk]:
    """Chunks of the KB's serving (ready) documents that the user may read."""
    return (
        Chunk.objects.filter(documents_readable_q(user=user, prefix="document__"), kb=kb, document__status=DocumentStatus.READY)
        .select_related("document")
        .order_by("document_id", "ordinal")
    )


def chunks_cited_now(*, user, kb: KnowledgeBase, cited: Iterable[tuple[int, int | None, str]]) -> dict[int, Chunk | None]:
    """Where each passage an earlier answer cited — (its chunk id, its document id, its text or the text's start, cut
    with a trailing 「…」 or not) — is now, for ``user``: the chunk itself while it serves; after a new version of its
    document, which replaces every chunk (knowledge/ingestion/versions.py), the document's first serving chunk (the
    document's id, or the one its old id is now an alias of) whose text starts with the cited text; None when no
    current chunk holds it. Three queries whatever the number of passages."""
    cited = [(int(c), d, (t or "").removesuffix("…").rstrip()) for c, d, t in cited]
    serving = chunk_list(user=user, kb=kb).defer("embedding", "question_embedding", "tokens", "enriched")
    found: dict[int, Chunk | None] = {c.pk: c for c in serving.filter(pk__in={c for c, _, _ in cited})}
    gone = [(c, d, t) for c, d, t in cited if c not in found and d is not None and t]
    if gone:
        moved = dict(DocumentAlias.objects.filter(old_id__in={d for _, d, _ in gone}, document__kb_id=kb.pk)
                     .values_list("old_id", "document_id"))
        gone = [(c, moved.get(d, d), t) for c, d, t in gone]
        match = Q()
        for _, document_id, start in gone:
            match |= Q(document_id=document_id, content__startswith=start)
        now = list(serving.filter(match))
        for chunk_id, document_id, start in gone:
            found[chunk_id] = next((c for c in now if c.document_id == document_id and c.content.startswith(start)), None)
    return {c: found.get(c) for c, _, _ in cited}


def document_get_for_user(*, user, kb: KnowledgeBase, document_id: int) -> Document:
    """One document of the KB the user may read (its groups prefetched); else 404 ``document_not_found``."""
    document = document_list(user=user, kb=kb).prefetch_related("restricted_to_groups").filter(pk=document_id).first()
    if document is None:
        raise fail(KnowledgeError.DOCUMENT_NOT_FOUND)
    return document


def chunk_get_for_user(*, user, kb: KnowledgeBase, chunk_id: int) -> Chunk:
    """One chunk of the KB the user may read; else 404 ``chunk_not_found``."""
    chunk = chunk_list(user=user, kb=kb).select_related("kb").filter(pk=chunk_id).first()
    if chunk is None:
        raise fail(KnowledgeError.CHUNK_NOT_FOUND)
    return chunk


def groups_by_names(names: Iterable[str]) -> list[Group]:
    """The groups with these names (the API's uploads and the admin's share it); an unknown name is 400 ``unknown_group``."""
    wanted = sorted({n.strip() for n in names if n and n.strip()})
    if any("\x00" in n for n in wanted):
        raise fail(KnowledgeError.UNKNOWN_GROUP, "nul")
    groups = list(Group.objects.filter(name__in=wanted))
    missing = sorted(set(wanted) - {g.name for g in groups})
    if missing:
        raise fail(KnowledgeError.UNKNOWN_GROUP, groups=", ".join(missing), extra={"groups": missing})
    return groups


def eval_question_list(*, user, kb: KnowledgeBase) -> QuerySet[EvalQuestion]:
    """The KB's labelled questions (confirmed: ``evaluated``), less those naming a document the user may not read
    (editors see all).

    A question names its answer's document, and its text is about that
    document's content: showing it would tell a viewer outside the document's
    groups what the restricted document says.
    """
    questions = kb.eval_questions.evaluated().order_by("id")
    if has_role(user=user, kb=kb, min_role=Role.EDITOR):
        return questions
    unreadable = Document.objects.filter(kb=kb).exclude(documents_readable_q(user=user))
    hidden = set().union(*(document_labels(*row) for row in unreadable.values_list("pk", "source_name", "external_id")))
    return questions.exclude(relevant__overlap=sorted(hidden)) if hidden else questions
