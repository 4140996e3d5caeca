"""REST endpoints for documents: upload, preview, list, restrict, retry, re-index and delete."""
from __future__ import annotations

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.fields import unknown_fields
from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.api.parsers import SafeJSONParser
from core.api.schema import errors
from core.errors import CoreError, fail
from core.http.disconnect import client_gone
from knowledge import selectors
from knowledge.api import serializers as s
from knowledge.api.inputs import chunking_from_form, form_files, form_group_names, form_keep_edits
from knowledge.api.versions import Redirecting, document_or_redirect
from knowledge.document_fields import fields_clean
from knowledge.errors import KnowledgeError
from knowledge.ingestion.pinning import KEEP_EDITS
from knowledge.ingestion.queue import attach_places
from knowledge.ingestion.text import Chunking
from knowledge.ingestion.upload import document_preview, documents_upload_restricted, uploaded_files_to_items
from knowledge.models import DocumentStatus, Role
from knowledge.services.documents import document_delete, document_fields_set, document_reindex, document_restrict, document_retry

_UPLOAD_FIELDS = {"files", "restricted_to_groups", "chunk_size", "chunk_overlap", "keep_edits"}
_PREVIEW_FIELDS = {"file", "chunk_size", "chunk_overlap"}
PREVIEW_MAX_CHUNKS = 500


class DocumentListView(PaginatedView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(summary=_("The KB's documents (by status)"),
        responses=s.DocumentOutput(many=True),
        parameters=[OpenApiParameter("status", str, enum=DocumentStatus.values, required=False)],
    )
    def get(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        qs = selectors.document_list(user=request.user, kb=kb).prefetch_related("restricted_to_groups")
        wanted = request.query_params.get("status")
        if wanted is not None:
            if wanted not in DocumentStatus.values:
                raise fail(CoreError.INVALID_FILTER, values=", ".join(DocumentStatus.values))
            qs = qs.filter(status=wanted)
        return self.paginated(qs, s.DocumentOutput, prepare=attach_places)  # the waiting ones' places, one pass

    @extend_schema(
        request={"multipart/form-data": s.DocumentUploadInput},
        responses={202: s.UploadOutput},
        summary=_("Upload one or more files (editor); ingestion runs in the background"),
    )
    def post(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        unknown = sorted(set(request.data.keys()) - _UPLOAD_FIELDS)
        if unknown:
            raise unknown_fields(unknown)
        groups = selectors.groups_by_names(form_group_names(request.data))
        chunking = chunking_from_form(request.data)
        keep_edits = form_keep_edits(request.data)
        items = uploaded_files_to_items(form_files(request, "files"))
        if not keep_edits:  # read by the commit that replaces the serving version (knowledge/ingestion/pinning.py)
            for item in items:
                item.metadata[KEEP_EDITS] = False
        outcomes = documents_upload_restricted(kb=kb, items=items, user=request.user, groups=groups, chunking=chunking)
        body = {"documents": [
            {"id": o.document.pk, "document": o.document.replaces_id or o.document.pk, "source_name": o.document.source_name,
             "status": o.document.status,
             "version": o.document.version, "unchanged": o.unchanged}
            for o in outcomes
        ]}
        return Response(s.UploadOutput(body).data, status=status.HTTP_202_ACCEPTED)


class DocumentPreviewView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": s.DocumentPreviewInput},
        responses={200: s.ChunkPreviewOutput, **errors(413, 415)},
        summary=_("Preview how a file would be split into chunks (editor); nothing is stored"),
        description="The file is parsed and chunked exactly as an upload with the same `chunk_size` and "
        "`chunk_overlap` would be. The checks are the upload's (413 `file_too_large`, 415 `unsupported_type`, "
        "400 `empty_file`); a file that cannot be parsed is 400 with the parse error's code (`corrupt_file`, "
        "`undecodable_text`, `archive_bomb`, `type_mismatch`, `resource_limit`); chunking out of range is 400 "
        "`invalid_chunking`. The file is parsed within the preview's budgets (ZHIKU_PREVIEW_*: the first pages, "
        "a few scanned pages, a short time): `cut_short` then says which budget stopped it and how far it read. "
        f"At most {PREVIEW_MAX_CHUNKS} chunks are listed; `count` is the total.",
    )
    def post(self, request, kb_id: int):
        selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        unknown = sorted(set(request.data.keys()) - _PREVIEW_FIELDS)
        if unknown:
            raise unknown_fields(unknown)
        chunking = chunking_from_form(request.data) or Chunking()
        files = form_files(request, "file")
        if len(files) != 1:
            raise fail(KnowledgeError.NO_FILES, "one")
        preview = document_preview(item=uploaded_files_to_items(files)[0], chunking=chunking,
                                   cancelled=client_gone(request))
        drafts = preview.drafts
        cut = preview.cut_short
        body = {
            "source_name": preview.source_name, "title": preview.title, "chunk_size": preview.chunk_size,
            "chunk_overlap": preview.chunk_overlap, "count": len(drafts), "total_chars": preview.total_chars,
            "longest": preview.longest, "truncated": len(drafts) > PREVIEW_MAX_CHUNKS,
            "cut_short": None if cut is None else {"budget": cut["budget"], "limit": cut["limit"],
                                                   "pages_read": cut.get("pages_read"), "message": cut_short_message(cut)},
            "chunks": [{"ordinal": d.ordinal, "chunk_type": d.chunk_type, "content": d.content, "chars": len(d.content),
                        "section_path": list(d.section_path), "page_start": d.page_start, "page_end": d.page_end}
                       for d in drafts[:PREVIEW_MAX_CHUNKS]],
        }
        return Response(s.ChunkPreviewOutput(body).data)


class DocumentDetailView(Redirecting, APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(summary=_("A document (an old id answers 308 with the current one)"), responses={200: s.DocumentOutput, 308: None},
                   description="An id the document used to have (an older version's, or the row a new version was "
                               "ingested on) answers 308 to the document's own URL.")
    def get(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        return Response(s.DocumentOutput(document_or_redirect(request, kb, document_id)).data)

    @extend_schema(request=s.DocumentUpdateInput, responses=s.DocumentOutput,
                   summary=_("Change which groups may read the document (an empty list lifts the restriction) and its "
                           "own fields (editor)"))
    def patch(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        document = selectors.document_get_for_user(user=request.user, kb=kb, document_id=document_id)
        data = parse(s.DocumentUpdateInput, request.data)
        if "fields" in data:
            fields_clean(data["fields"])  # checked before anything changes
        if "restricted_to_groups" in data:
            groups = selectors.groups_by_names(data["restricted_to_groups"])
            document = document_restrict(document=document, groups=groups)
        if "fields" in data:
            document = document_fields_set(document=document, fields=data["fields"])
        return Response(s.DocumentOutput(selectors.document_get_for_user(user=request.user, kb=kb, document_id=document.pk)).data)

    @extend_schema(responses={204: None}, summary=_("Delete a document version and its chunks (editor)"))
    def delete(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        document_delete(document=selectors.document_get_for_user(user=request.user, kb=kb, document_id=document_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentRetryView(APIView):
    @extend_schema(request=None, responses={202: s.DocumentOutput, **errors(409)}, summary=_("Queue a failed document again (editor)"))
    def post(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        document = document_retry(document=selectors.document_get_for_user(user=request.user, kb=kb, document_id=document_id))
        return Response(s.DocumentOutput(document).data, status=status.HTTP_202_ACCEPTED)


class DocumentReindexView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(request=s.ReindexInput, responses={202: s.DocumentOutput, **errors(409)},
                   summary=_("Parse and embed the stored file again (editor); a ready document gets a new version"),
                   description="Chunks edited or added by hand whose text the new chunks no longer hold are kept, "
                               "pinned after them, and reported in the document's `metadata.edits`; "
                               "`{\"keep_edits\": false}` drops them. The body is optional.")
    def post(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        data = parse(s.ReindexInput, request.data)  # no body: {}; a JSON null is not the optional object
        document = document_reindex(document=selectors.document_get_for_user(user=request.user, kb=kb, document_id=document_id),
                                    keep_edits=data["keep_edits"])
        return Response(s.DocumentOutput(document).data, status=status.HTTP_202_ACCEPTED)


# Why a preview shows only the start of a file (``ChunkPreview.cut_short``).
CUT_SHORT_MESSAGES = {
    "pages": _("The preview read only the first %(limit)s pages; the upload reads the whole file."),
    "ocr_pages": _("The preview recognised only the first %(limit)s scanned pages; the upload reads the whole file."),
    "time": _("The preview stopped after about %(limit)s seconds and shows the pages read by then; the upload reads the whole file."),
    "characters": _("The preview shows only the first %(limit)s characters; the upload reads the whole file."),
}


def cut_short_message(cut: dict | None) -> str:
    """Why a preview stopped reading, in the active language; "" when it read the whole file."""
    if not cut:
        return ""
    message = CUT_SHORT_MESSAGES.get(cut.get("budget", ""))
    if message is None:
        return gettext("The preview shows only the start of the file; the upload reads the whole file.")
    return str(message) % {"limit": cut.get("limit", "")}
