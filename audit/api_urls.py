"""Audit log routes under /api/."""
from django.urls import path

from audit import api

app_name = "audit-api"

urlpatterns = [
    path("audit/", api.AuditListView.as_view(), name="audit-list"),
]
