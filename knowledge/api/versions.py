"""REST endpoints for a document's history: its versions, restoring one; and the redirect from an id it used to have."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.pagination import PaginatedView
from core.api.schema import errors
from knowledge import selectors
from knowledge.api import serializers as s
from knowledge.models import Document, KnowledgeBase, Role
from knowledge.services.versions import version_list, version_restore


class _Moved(Exception):
    def __init__(self, response: Response):
        self.response = response


def document_or_redirect(request: Request, kb: KnowledgeBase, document_id: int) -> Document:
    """The document (404 ``document_not_found``), or, for an id it used to have, a 308 to the same URL under its id
    (raised; ``Redirecting`` views answer it)."""
    new_id = selectors.document_moved_to(user=request.user, kb=kb, document_id=document_id)
    if new_id is not None:
        path = request.get_full_path().replace(f"/documents/{document_id}/", f"/documents/{new_id}/", 1)
        raise _Moved(Response(status=status.HTTP_308_PERMANENT_REDIRECT, headers={"Location": path}))
    return selectors.document_get_for_user(user=request.user, kb=kb, document_id=document_id)


class Redirecting:
    """Answers the 308 ``document_or_redirect`` raised."""

    def handle_exception(self, exc):
        if isinstance(exc, _Moved):
            return exc.response
        return super().handle_exception(exc)  # type: ignore[misc]


class DocumentVersionListView(Redirecting, PaginatedView):
    @extend_schema(responses={200: s.DocumentVersionOutput(many=True), 308: None},
                   summary=_("A document's versions, newest first (an old id of the document answers 308)"))
    def get(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        return self.paginated(version_list(document=document_or_redirect(request, kb, document_id)), s.DocumentVersionOutput)


class DocumentVersionRestoreView(Redirecting, APIView):
    @extend_schema(request=None, responses={202: s.DocumentOutput, **errors(404, 409)},
                   summary=_("Make version n the current one (editor): its kept file is ingested again as a new version"),
                   description="409 `version_current` (it serves already), `version_file_pruned` (its file is no longer "
                               "kept: ZHIKU_DOCUMENT_VERSIONS_KEPT), `busy` (a version is being processed); 404 "
                               "`version_not_found`. The answer is the new version's row, as an upload's.")
    def post(self, request, kb_id: int, document_id: int, number: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        document = document_or_redirect(request, kb, document_id)
        restored = version_restore(document=document, number=number, user=request.user)
        return Response(s.DocumentOutput(restored).data, status=status.HTTP_202_ACCEPTED)
