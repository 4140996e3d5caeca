"""REST endpoints: each view parses its input, calls one service or selector, and serializes the result."""
from __future__ import annotations

import logging
from typing import Iterable

from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.models import Group
from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from accounts.tokens import token_issue
from config.disconnect import client_gone
from config.security import LOCKOUT_MESSAGE, client_address, lockout_cooloff
from knowledge import access, selectors
from knowledge.api import serializers as s
from knowledge.api.pagination import PaginatedView
from knowledge.api.parsers import SafeJSONParser
from knowledge.api.schema import errors
from knowledge.errors import NotFound, ValidationFailed
from knowledge.ingest_errors import cut_short_message
from knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase, Membership, Role
from knowledge.ingestion.text import Chunking, chunking_check
from knowledge.ingestion.upload import (
    document_preview,
    documents_upload_restricted,
    uploaded_files_to_items,
)
from knowledge.services.chunks import chunk_create, chunk_update
from knowledge.services.documents import document_delete, document_reindex, document_restrict, document_retry
from knowledge.services.kbs import kb_create, kb_delete, kb_update, membership_remove, membership_set

logger = logging.getLogger(__name__)


# --- helpers shared with the admin -------------------------------------------

def groups_by_names(names: Iterable[str]) -> list[Group]:
    """The groups with these names; an unknown name is a 400 ``unknown_group``."""
    wanted = sorted({n.strip() for n in names if n and n.strip()})
    if any("\x00" in n for n in wanted):
        raise ValidationFailed(gettext("Group names cannot contain NUL characters."), code="unknown_group")
    groups = list(Group.objects.filter(name__in=wanted))
    missing = sorted(set(wanted) - {g.name for g in groups})
    if missing:
        raise ValidationFailed(gettext("Unknown groups: %(groups)s.") % {"groups": ", ".join(missing)}, code="unknown_group",
                               extra={"groups": missing})
    return groups


def _form_int(data, name: str) -> int | None:
    """An optional whole number from a form field ("" or absent: None); anything else is 400 ``invalid_chunking``."""
    raw = data.get(name)
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return None
    if not isinstance(raw, str):  # a file part under the field's name
        raise ValidationFailed(gettext("%(field)s must be a whole number of characters.") % {"field": name}, code="invalid_chunking")
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 9:
        raise ValidationFailed(gettext("%(field)s must be a whole number of characters.") % {"field": name}, code="invalid_chunking")
    return int(text)


def _form_text(data, name: str, *, max_length: int) -> str:
    """An optional text field of a multipart form ("" when absent); a file part or a longer value is 400 ``invalid``."""
    raw = data.get(name, "")
    if not isinstance(raw, str) or len(raw) > max_length:
        message = gettext("%(field)s must be text of at most %(limit)s characters.") % {"field": name, "limit": max_length}
        raise ValidationFailed(message, code="invalid", extra={"fields": {name: [message]}})
    return raw


def _form_group_names(data) -> list[str]:
    """The comma-separated ``restricted_to_groups`` of an upload form, at most ``MAX_GROUP_NAMES`` of them."""
    names = [n for n in _form_text(data, "restricted_to_groups", max_length=s.MAX_GROUP_NAMES * 151).split(",") if n.strip()]
    if len(names) > s.MAX_GROUP_NAMES:
        message = gettext("At most %(limit)s group names.") % {"limit": s.MAX_GROUP_NAMES}
        raise ValidationFailed(message, code="invalid", extra={"fields": {"restricted_to_groups": [message]}})
    return names


def _form_files(request, name: str) -> list:
    """The file parts under ``name``; more than ZHIKU_MAX_FILES_PER_UPLOAD is 400 ``too_many_files`` before any is read."""
    files = request.FILES.getlist(name)
    limit = settings.ZHIKU_MAX_FILES_PER_UPLOAD
    if len(files) > limit:
        raise ValidationFailed(gettext("At most %(limit)s files per upload.") % {"limit": limit}, code="too_many_files")
    return files


def chunking_from_form(data) -> Chunking | None:
    """The ``chunk_size`` and ``chunk_overlap`` of a multipart form, checked; None when neither is given."""
    size, overlap = _form_int(data, "chunk_size"), _form_int(data, "chunk_overlap")
    if size is None and overlap is None:
        return None
    return chunking_check(size=size, overlap=overlap)


# --- read helpers -------------------------------------------------------------

def _kb_output(kb: KnowledgeBase, *, user) -> dict:
    annotated = selectors.kbs_with_caller_info(KnowledgeBase.objects.filter(pk=kb.pk), user=user).get()
    selectors.set_caller_role([annotated], user=user)
    return s.KBOutput(annotated).data


def _document_for(*, user, kb: KnowledgeBase, document_id: int) -> Document:
    document = selectors.document_list(user=user, kb=kb).prefetch_related("restricted_to_groups").filter(pk=document_id).first()
    if document is None:
        raise NotFound(gettext("Document not found."), code="document_not_found")
    return document


def _chunk_for(*, user, kb: KnowledgeBase, chunk_id: int) -> Chunk:
    chunk = selectors.chunk_list(user=user, kb=kb).select_related("kb").filter(pk=chunk_id).first()
    if chunk is None:
        raise NotFound(gettext("Chunk not found."), code="chunk_not_found")
    return chunk


def _parse(serializer_class, data, **kwargs) -> dict:
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# --- auth -------------------------------------------------------------------

class TokenThrottle(AnonRateThrottle):
    """Caps requests per client address (``config.security.client_address``), whatever the global throttle settings.

    Password guessing is stopped by django-axes (per account and per address, in the
    database); this rate limit only bounds the work one address can cause. It lives
    in the cache, so when the cache is unreachable it steps aside rather than fail the login.
    """

    scope = "token"

    def get_rate(self):
        return settings.ZHIKU_TOKEN_RATE

    def get_ident(self, request):
        return client_address(request)

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except Exception:  # noqa: BLE001 - any cache failure (Redis down, timeout)
            logger.warning("token throttle: cache unavailable, rate limit skipped", exc_info=True)
            return True


class TooManyAttempts(exceptions.Throttled):
    """A login refused by django-axes: the account or the client address is locked out."""

    default_code = "too_many_attempts"

    def __init__(self):
        exceptions.APIException.__init__(self, LOCKOUT_MESSAGE, self.default_code)
        self.wait = max(1, int(lockout_cooloff().total_seconds()))


class TokenView(APIView):
    """Exchange a username and password for a new API token (hashed at rest, expiring; accounts/tokens.py)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [TokenThrottle]
    parser_classes = [SafeJSONParser, FormParser, MultiPartParser]

    @extend_schema(
        request=s.TokenInput,
        responses={200: s.TokenOutput},
        auth=[],
        description="Each call issues a new token (a user may hold several: one per client); the key is shown "
        "this once and stored only hashed. It expires after ZHIKU_TOKEN_TTL_DAYS (default 30) and is revoked "
        "when the user's password changes or the account is deactivated; a user holds at most "
        "ZHIKU_TOKEN_LIMIT_PER_USER live tokens (the least recently used is revoked for a new one). "
        "Failed attempts are counted per account and per client address; after "
        "ZHIKU_LOGIN_FAILURE_LIMIT of them the account (or address) is refused with 429 "
        "`too_many_attempts`, even with the right password, for ZHIKU_LOGIN_COOLOFF_MINUTES.",
    )
    def post(self, request):
        data = _parse(s.TokenInput, request.data)
        # The plain HttpRequest: django-axes records the attempt on it, as for the login pages.
        http_request = request._request
        user = authenticate(http_request, username=data["username"], password=data["password"])
        if getattr(http_request, "axes_locked_out", False):
            raise TooManyAttempts()
        if user is None or not user.is_active:
            raise ValidationFailed(gettext("Unable to log in with the given username and password."), code="invalid_credentials")
        token, key = token_issue(user=user, name=data.get("name", ""))
        return Response({"token": key, "id": token.pk, "expiry": token.expiry})


# --- knowledge bases --------------------------------------------------------

class KBListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses=s.KBOutput(many=True), summary="Knowledge bases the caller may read")
    def get(self, request):
        qs = selectors.kbs_with_caller_info(access.kbs_for_user(user=request.user), user=request.user).order_by("id")
        return self.paginated(qs, s.KBOutput, prepare=lambda page: selectors.set_caller_role(page, user=request.user))

    @extend_schema(request=s.KBCreateInput, responses={201: s.KBOutput, **errors(409)}, summary="Create a knowledge base (the caller owns it)")
    def post(self, request):
        data = _parse(s.KBCreateInput, request.data)
        kb = kb_create(owner=request.user, **data)
        return Response(_kb_output(kb, user=request.user), status=status.HTTP_201_CREATED)


class KBDetailView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses=s.KBOutput)
    def get(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        return Response(_kb_output(kb, user=request.user))

    def _update(self, request, kb_id: int, *, partial: bool) -> Response:
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        data = _parse(s.KBUpdateInput, request.data, partial=partial)
        if not data:
            raise ValidationFailed(gettext("Nothing to change."), code="nothing_to_update")
        kb = kb_update(kb=kb, **data)
        return Response(_kb_output(kb, user=request.user))

    @extend_schema(request=s.KBUpdateInput, responses={200: s.KBOutput, **errors(409)}, summary="Change the name or settings (owner)")
    def patch(self, request, kb_id: int):
        return self._update(request, kb_id, partial=True)

    @extend_schema(request=s.KBUpdateInput, responses={200: s.KBOutput, **errors(409)}, summary="Change the name and settings (owner)")
    def put(self, request, kb_id: int):
        return self._update(request, kb_id, partial=False)

    @extend_schema(responses={204: None}, summary="Delete the knowledge base and everything in it (owner)")
    def delete(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        kb_delete(kb=kb)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- memberships ------------------------------------------------------------

class MemberListView(PaginatedView):
    """Members are listed and changed by owners only: the list names people and groups."""

    parser_classes = [SafeJSONParser]

    @extend_schema(responses={200: s.MembershipOutput(many=True), **errors(403)})
    def get(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        qs = Membership.objects.filter(kb=kb).select_related("user", "group").order_by("id")
        return self.paginated(qs, s.MembershipOutput)

    @extend_schema(request=s.MembershipCreateInput, responses={201: s.MembershipOutput},
                   summary="Give a user or a group a role (owner)")
    def post(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        data = _parse(s.MembershipCreateInput, request.data)
        user = group = None
        if "username" in data:
            user = get_user_model().objects.filter(username=data["username"]).first()
            if user is None:
                raise ValidationFailed(gettext("Unknown user %(name)r.") % {"name": data["username"]}, code="unknown_user")
        if "group" in data:
            group = Group.objects.filter(name=data["group"]).first()
            if group is None:
                raise ValidationFailed(gettext("Unknown group %(name)r.") % {"name": data["group"]}, code="unknown_group")
        membership = membership_set(kb=kb, role=data["role"], user=user, group=group)
        return Response(s.MembershipOutput(membership).data, status=status.HTTP_201_CREATED)


class MemberDetailView(APIView):
    parser_classes = [SafeJSONParser]

    def _membership(self, request, kb_id: int, membership_id: int) -> tuple[KnowledgeBase, Membership]:
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.OWNER)
        membership = Membership.objects.filter(kb=kb, pk=membership_id).select_related("user", "group").first()
        if membership is None:
            raise NotFound(gettext("Membership not found."), code="membership_not_found")
        return kb, membership

    @extend_schema(request=s.MembershipUpdateInput, responses=s.MembershipOutput, summary="Change a member's role (owner)")
    def patch(self, request, kb_id: int, membership_id: int):
        kb, membership = self._membership(request, kb_id, membership_id)
        data = _parse(s.MembershipUpdateInput, request.data)
        membership = membership_set(kb=kb, role=data["role"], user=membership.user, group=membership.group)
        return Response(s.MembershipOutput(membership).data)

    @extend_schema(responses={204: None}, summary="Remove a member (owner)")
    def delete(self, request, kb_id: int, membership_id: int):
        _, membership = self._membership(request, kb_id, membership_id)
        membership_remove(membership=membership)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- documents --------------------------------------------------------------

_UPLOAD_FIELDS = {"files", "restricted_to_groups", "chunk_size", "chunk_overlap"}
_PREVIEW_FIELDS = {"file", "chunk_size", "chunk_overlap"}
PREVIEW_MAX_CHUNKS = 500


class DocumentListView(PaginatedView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        responses=s.DocumentOutput(many=True),
        parameters=[OpenApiParameter("status", str, enum=DocumentStatus.values, required=False)],
    )
    def get(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        qs = selectors.document_list(user=request.user, kb=kb).prefetch_related("restricted_to_groups")
        wanted = request.query_params.get("status")
        if wanted is not None:
            if wanted not in DocumentStatus.values:
                raise ValidationFailed(gettext("status must be one of %(values)s.") % {"values": ", ".join(DocumentStatus.values)},
                                       code="invalid_filter")
            qs = qs.filter(status=wanted)
        return self.paginated(qs, s.DocumentOutput)

    @extend_schema(
        request={"multipart/form-data": s.DocumentUploadInput},
        responses={202: s.UploadOutput},
        summary="Upload one or more files (editor); ingestion runs in the background",
    )
    def post(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        unknown = sorted(set(request.data.keys()) - _UPLOAD_FIELDS)
        if unknown:
            raise s.unknown_fields(unknown)
        groups = groups_by_names(_form_group_names(request.data))
        chunking = chunking_from_form(request.data)
        items = uploaded_files_to_items(_form_files(request, "files"))
        outcomes = documents_upload_restricted(kb=kb, items=items, user=request.user, groups=groups, chunking=chunking)
        body = {"documents": [
            {"id": o.document.pk, "source_name": o.document.source_name, "status": o.document.status,
             "version": o.document.version, "unchanged": o.unchanged}
            for o in outcomes
        ]}
        return Response(s.UploadOutput(body).data, status=status.HTTP_202_ACCEPTED)


class DocumentPreviewView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        request={"multipart/form-data": s.DocumentPreviewInput},
        responses={200: s.ChunkPreviewOutput, **errors(413, 415)},
        summary="Preview how a file would be split into chunks (editor); nothing is stored",
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
            raise s.unknown_fields(unknown)
        chunking = chunking_from_form(request.data) or Chunking()
        files = _form_files(request, "file")
        if len(files) != 1:
            raise ValidationFailed(gettext("Send exactly one file in the multipart field 'file'."), code="no_files")
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


class DocumentDetailView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses=s.DocumentOutput)
    def get(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        return Response(s.DocumentOutput(_document_for(user=request.user, kb=kb, document_id=document_id)).data)

    @extend_schema(request=s.DocumentUpdateInput, responses=s.DocumentOutput,
                   summary="Change which groups may read the document (editor); an empty list lifts the restriction")
    def patch(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        document = _document_for(user=request.user, kb=kb, document_id=document_id)
        data = _parse(s.DocumentUpdateInput, request.data)
        groups = groups_by_names(data["restricted_to_groups"])
        document = document_restrict(document=document, groups=groups)
        return Response(s.DocumentOutput(_document_for(user=request.user, kb=kb, document_id=document.pk)).data)

    @extend_schema(responses={204: None}, summary="Delete a document version and its chunks (editor)")
    def delete(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        document_delete(document=_document_for(user=request.user, kb=kb, document_id=document_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentRetryView(APIView):
    @extend_schema(request=None, responses={202: s.DocumentOutput, **errors(409)}, summary="Queue a failed document again (editor)")
    def post(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        document = document_retry(document=_document_for(user=request.user, kb=kb, document_id=document_id))
        return Response(s.DocumentOutput(document).data, status=status.HTTP_202_ACCEPTED)


class DocumentReindexView(APIView):
    @extend_schema(request=None, responses={202: s.DocumentOutput, **errors(409)},
                   summary="Parse and embed the stored file again (editor); a ready document gets a new version")
    def post(self, request, kb_id: int, document_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        document = document_reindex(document=_document_for(user=request.user, kb=kb, document_id=document_id))
        return Response(s.DocumentOutput(document).data, status=status.HTTP_202_ACCEPTED)


# --- chunks -----------------------------------------------------------------

class ChunkListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(request=s.ChunkCreateInput, responses={201: s.ChunkOutput, **errors(409)},
                   summary="Add a chunk written by hand to a ready document (editor); it is embedded and indexed at once")
    def post(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        data = _parse(s.ChunkCreateInput, request.data)
        document = _document_for(user=request.user, kb=kb, document_id=data["document"])
        chunk = chunk_create(document=document, content=data["content"], section_path=data.get("section_path", []))
        return Response(s.ChunkOutput(chunk).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=s.ChunkWithTokensOutput(many=True), parameters=[s.ChunkFilterInput])
    def get(self, request, kb_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        # A plain dict: with a QueryDict DRF would read an absent boolean as False.
        filters = s.ChunkFilterInput(data=request.query_params.dict())
        if not filters.is_valid():
            raise ValidationFailed(
                gettext("Invalid filter: %(errors)s") % {"errors": "; ".join(f"{k}: {v[0]}" for k, v in filters.errors.items())},
                code="invalid_filter", extra={"fields": filters.errors},
            )
        params = filters.validated_data
        qs = selectors.chunk_list(user=request.user, kb=kb)
        if "document" in params:
            qs = qs.filter(document_id=params["document"])
        if "type" in params:
            qs = qs.filter(chunk_type=params["type"])
        if "enabled" in params:
            qs = qs.filter(enabled=params["enabled"])
        if params.get("q"):
            qs = qs.filter(content__icontains=params["q"])
        with_tokens = params.get("include") == "tokens"
        # Never load the vectors (or the embedded text) for a list.
        qs = qs.defer("embedding", "question_embedding", "enriched") if with_tokens else qs.defer("embedding", "question_embedding", "enriched", "tokens")
        return self.paginated(qs, s.ChunkWithTokensOutput if with_tokens else s.ChunkOutput)


class ChunkDetailView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(
        responses=s.ChunkWithTokensOutput,
        parameters=[OpenApiParameter("include", str, enum=["tokens"], required=False)],
    )
    def get(self, request, kb_id: int, chunk_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        chunk = _chunk_for(user=request.user, kb=kb, chunk_id=chunk_id)
        output = s.ChunkWithTokensOutput if request.query_params.get("include") == "tokens" else s.ChunkOutput
        return Response(output(chunk).data)

    @extend_schema(request=s.ChunkUpdateInput, responses=s.ChunkOutput,
                   summary="Edit a chunk's text (re-embedded) or switch it on/off (editor)")
    def patch(self, request, kb_id: int, chunk_id: int):
        kb = selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        chunk = _chunk_for(user=request.user, kb=kb, chunk_id=chunk_id)
        data = _parse(s.ChunkUpdateInput, request.data)
        if not data:
            raise ValidationFailed(gettext("Send content or enabled."), code="nothing_to_update")
        chunk = chunk_update(chunk=chunk, content=data.get("content"), enabled=data.get("enabled"))
        return Response(s.ChunkOutput(chunk).data)
