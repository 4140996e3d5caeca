"""The audit log's console routes."""
from django.urls import path

from audit import views

urlpatterns = [
    path("audit/", views.audit_page, name="audit"),
    path("audit/export.csv", views.audit_export, name="audit-export"),
]
