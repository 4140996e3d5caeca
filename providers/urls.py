"""The console's model pages (staff); the views are in providers/views.py."""
from django.urls import path

from providers import views

urlpatterns = [
    path("models/", views.endpoint_list, name="model-endpoints"),
    path("models/new/", views.endpoint_new, name="model-endpoint-new"),
    path("models/default/", views.default_set_page, name="model-default"),
    path("models/<int:endpoint_id>/", views.endpoint_edit, name="model-endpoint"),
    path("models/<int:endpoint_id>/test/", views.endpoint_test_page, name="model-endpoint-test"),
    path("models/<int:endpoint_id>/delete/", views.endpoint_delete_page, name="model-endpoint-delete"),
]
