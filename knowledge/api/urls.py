"""Knowledge bases' REST routes (in the "api" namespace: config/api_urls.py).

Ids use <int:> converters, so a malformed id is a 404, never a 500."""
from django.urls import path

from knowledge.api import calibration, chunks, documents, kbs, labels, revisions, search, versions

urlpatterns = [
    path("kbs/", kbs.KBListView.as_view(), name="kb-list"),
    path("kbs/<int:kb_id>/", kbs.KBDetailView.as_view(), name="kb-detail"),
    path("kbs/<int:kb_id>/members/", kbs.MemberListView.as_view(), name="member-list"),
    path("kbs/<int:kb_id>/members/<int:membership_id>/", kbs.MemberDetailView.as_view(), name="member-detail"),
    path("kbs/<int:kb_id>/documents/", documents.DocumentListView.as_view(), name="document-list"),
    path("kbs/<int:kb_id>/documents/preview/", documents.DocumentPreviewView.as_view(), name="document-preview"),
    path("kbs/<int:kb_id>/documents/<int:document_id>/", documents.DocumentDetailView.as_view(), name="document-detail"),
    path("kbs/<int:kb_id>/documents/<int:document_id>/retry/", documents.DocumentRetryView.as_view(), name="document-retry"),
    path("kbs/<int:kb_id>/documents/<int:document_id>/reindex/", documents.DocumentReindexView.as_view(), name="document-reindex"),
    path("kbs/<int:kb_id>/documents/<int:document_id>/versions/", versions.DocumentVersionListView.as_view(),
         name="document-versions"),
    path("kbs/<int:kb_id>/documents/<int:document_id>/versions/<int:number>/restore/",
         versions.DocumentVersionRestoreView.as_view(), name="document-version-restore"),
    path("kbs/<int:kb_id>/documents/<int:document_id>/chunks/<int:chunk_id>/revisions/",
         revisions.ChunkRevisionListView.as_view(), name="chunk-revisions"),
    path("kbs/<int:kb_id>/documents/<int:document_id>/chunks/<int:chunk_id>/revisions/<int:number>/revert/",
         revisions.ChunkRevisionRevertView.as_view(), name="chunk-revision-revert"),
    path("kbs/<int:kb_id>/chunks/", chunks.ChunkListView.as_view(), name="chunk-list"),
    path("kbs/<int:kb_id>/chunks/<int:chunk_id>/", chunks.ChunkDetailView.as_view(), name="chunk-detail"),
    path("search/", search.SearchView.as_view(), name="search"),
    path("kbs/<int:kb_id>/calibration/", calibration.CalibrationView.as_view(), name="calibration"),
    path("kbs/<int:kb_id>/labels/", labels.LabelListView.as_view(), name="label-list"),
    path("kbs/<int:kb_id>/labels/<int:label_id>/confirm/", labels.LabelConfirmView.as_view(), name="label-confirm"),
    path("kbs/<int:kb_id>/labels/<int:label_id>/reject/", labels.LabelRejectView.as_view(), name="label-reject"),
]
