"""REST endpoints for sources: list and add under a KB, read, change, remove, run now, runs, cancel a run.

Roles (knowledge/access.py): a KB's viewers see its sources (without their settings) and their runs; owners
and editors add, change, run, cancel and remove them. Credentials are write-only.
"""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.inputs import parse
from core.api.pagination import PaginatedView
from core.api.parsers import SafeJSONParser
from core.api.schema import errors
from core.errors import CoreError, fail
from knowledge import selectors as kb_selectors
from knowledge.access import has_role, role_at_least
from knowledge.models import Role
from sources import selectors
from sources.catalog import kinds
from sources.errors import SourcesError
from sources.serializers import RunOutput, SourceCreateInput, SourceInput, SourceKindOutput, SourceOutput
from sources.services.runs import run_cancel, run_request
from sources.services.sources import source_create, source_delete, source_update


def _source_body(source, *, manage: bool) -> dict:
    runs = selectors.last_runs([source]) if hasattr(source, "last_run_id") else {}
    return SourceOutput(source, context={"manage": manage, "last_runs": runs}).data


def _annotated(source):
    return selectors.with_last_run(type(source).objects.filter(pk=source.pk)).select_related("kb").get()


class SourceListView(PaginatedView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses=SourceOutput(many=True), summary=_("A KB's sources (viewer: without their settings)"))
    def get(self, request, kb_id: int):
        kb = kb_selectors.kb_get_for_user(user=request.user, kb_id=kb_id)
        manage = has_role(user=request.user, kb=kb, min_role=Role.EDITOR)
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(selectors.source_list(kb=kb), request, view=self)
        body = SourceOutput(page, many=True, context={"manage": manage, "last_runs": selectors.last_runs(page)}).data
        return paginator.get_paginated_response(body)

    @extend_schema(request=SourceCreateInput, responses={201: SourceOutput, **errors(409)},
                   summary=_("Add a source to a KB (editor); its settings are checked by its kind"))
    def post(self, request, kb_id: int):
        kb = kb_selectors.kb_get_for_user(user=request.user, kb_id=kb_id, min_role=Role.EDITOR)
        data = parse(SourceCreateInput, request.data)
        source = source_create(kb=kb, user=request.user, **data)
        return Response(_source_body(_annotated(source), manage=True), status=status.HTTP_201_CREATED)


class SourceDetailView(APIView):
    parser_classes = [SafeJSONParser]

    @extend_schema(responses=SourceOutput, summary=_("A source (viewer: without its settings)"))
    def get(self, request, source_id: int):
        source = selectors.source_get_for_user(user=request.user, source_id=source_id)
        return Response(_source_body(_annotated(source), manage=role_at_least(source.caller_role, Role.EDITOR)))

    @extend_schema(request=SourceInput(partial=True), responses={200: SourceOutput},
                   summary=_("Change a source (editor); credentials given replace those stored, \"\" removes one"))
    def patch(self, request, source_id: int):
        source = selectors.source_get_for_user(user=request.user, source_id=source_id, min_role=Role.EDITOR)
        data = parse(SourceInput, request.data, partial=True)
        if not data:
            raise fail(CoreError.NOTHING_TO_UPDATE)
        source = source_update(source=source, **data)
        return Response(_source_body(_annotated(source), manage=True))

    @extend_schema(parameters=[OpenApiParameter("keep_documents", bool, required=False,
                                                description="Keep the source's documents in the KB (as uploads).")],
                   responses={204: None}, summary=_("Remove a source (editor), and its documents unless keep_documents"))
    def delete(self, request, source_id: int):
        source = selectors.source_get_for_user(user=request.user, source_id=source_id, min_role=Role.EDITOR)
        keep = request.query_params.get("keep_documents", "false")
        if keep not in ("true", "false"):
            raise fail(SourcesError.SOURCE_INVALID, "keep_documents")
        source_delete(source=source, keep_documents=keep == "true")
        return Response(status=status.HTTP_204_NO_CONTENT)


class SourceRunListView(PaginatedView):
    @extend_schema(responses=RunOutput(many=True), summary=_("A source's runs, newest first, with counts and errors"))
    def get(self, request, source_id: int):
        source = selectors.source_get_for_user(user=request.user, source_id=source_id)
        return self.paginated(selectors.run_list(source=source), RunOutput)


class SourceRunNowView(APIView):
    @extend_schema(request=None, responses={202: RunOutput, **errors(409)},
                   summary=_("Run a source now (editor), in the background; 409 source_run_active while one runs"))
    def post(self, request, source_id: int):
        source = selectors.source_get_for_user(user=request.user, source_id=source_id, min_role=Role.EDITOR)
        run = run_request(source=source, user=request.user)
        run.refresh_from_db()
        return Response(RunOutput(run).data, status=status.HTTP_202_ACCEPTED)


class RunDetailView(APIView):
    @extend_schema(responses=RunOutput, summary=_("One run of a source"))
    def get(self, request, run_id: int):
        return Response(RunOutput(selectors.run_get_for_user(user=request.user, run_id=run_id)).data)


class RunCancelView(APIView):
    @extend_schema(request=None, responses={200: RunOutput, **errors(409)},
                   summary=_("Cancel a run (editor): a queued one ends now, a running one at its next item; removes nothing"))
    def post(self, request, run_id: int):
        run = selectors.run_get_for_user(user=request.user, run_id=run_id, min_role=Role.EDITOR)
        return Response(RunOutput(run_cancel(run=run)).data)


class SourceKindListView(APIView):
    @extend_schema(responses=SourceKindOutput(many=True), summary=_("The kinds of source this installation offers"))
    def get(self, request):
        body = [{"kind": k.kind, "secret_fields": list(k.secret_fields),
                 "fields": [{"name": f.name, "label": str(f.label), "type": f.type, "required": f.required,
                             "help": str(f.help)} for f in k.fields]} for k in kinds()]
        return Response(SourceKindOutput(body, many=True).data)
