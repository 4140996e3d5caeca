"""The console's source pages; the KB page's Sources section is ``{% kb_sources %}`` (sources/templatetags)."""
from django.urls import path

from sources import views

urlpatterns = [
    path("kbs/<int:kb_id>/sources/<int:source_id>/", views.source_page, name="source"),
]
