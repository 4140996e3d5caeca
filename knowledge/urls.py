"""Pages people use in the browser (the console); the views are in knowledge/views.py."""
from django.urls import path

from knowledge import views

urlpatterns = [
    path("", views.home, name="home"),
    path("kbs/<int:kb_id>/", views.kb_page, name="kb"),
    path("kbs/<int:kb_id>/documents/<int:document_id>/", views.document_page, name="document"),
    path("kbs/<int:kb_id>/settings/", views.kb_settings_page, name="kb-settings"),
    path("kbs/<int:kb_id>/hit-test/", views.hit_test, name="hit-test"),
    path("kbs/<int:kb_id>/evaluation/", views.evaluation_page, name="kb-evaluation"),
    path("kbs/<int:kb_id>/labels/", views.labels_page, name="kb-labels"),
]
