"""Source routes under /api/ (ids use <int:> converters, so a malformed id is a 404)."""
from django.urls import path

from sources import api

app_name = "sources-api"

urlpatterns = [
    path("kbs/<int:kb_id>/sources/", api.SourceListView.as_view(), name="source-list"),
    path("sources/<int:source_id>/", api.SourceDetailView.as_view(), name="source-detail"),
    path("sources/<int:source_id>/run/", api.SourceRunNowView.as_view(), name="source-run"),
    path("sources/<int:source_id>/runs/", api.SourceRunListView.as_view(), name="source-runs"),
    path("source-runs/<int:run_id>/", api.RunDetailView.as_view(), name="run-detail"),
    path("source-runs/<int:run_id>/cancel/", api.RunCancelView.as_view(), name="run-cancel"),
    path("source-kinds/", api.SourceKindListView.as_view(), name="kind-list"),
]
