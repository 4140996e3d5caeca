"""Model endpoint routes under /api/ (ids use <int:> converters, so a malformed id is a 404)."""
from django.urls import path

from providers import api

app_name = "providers-api"

urlpatterns = [
    path("model-endpoints/", api.EndpointListView.as_view(), name="endpoint-list"),
    path("model-endpoints/<int:endpoint_id>/", api.EndpointDetailView.as_view(), name="endpoint-detail"),
    path("model-endpoints/<int:endpoint_id>/test/", api.EndpointTestView.as_view(), name="endpoint-test"),
    path("models/", api.ModelListView.as_view(), name="model-list"),
    path("models/default/", api.ModelDefaultView.as_view(), name="model-default"),
]
