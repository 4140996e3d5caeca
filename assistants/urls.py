"""The assistants' console pages; the views are in assistants/views.py."""
from django.urls import path

from assistants import views

urlpatterns = [
    path("assistants/", views.assistant_list, name="assistant-list"),
    path("assistants/new/", views.assistant_new, name="assistant-new"),
    path("assistants/<int:assistant_id>/", views.assistant_page, name="assistant"),
    path("assistants/<int:assistant_id>/edit/", views.assistant_edit, name="assistant-edit"),
]
