"""Sign-in and API-token routes (in the "api" namespace: config/api_urls.py)."""
from django.urls import path

from accounts.api import auth, tokens

urlpatterns = [
    path("auth/token/", auth.TokenView.as_view(), name="token"),
    path("auth/tokens/", tokens.TokenListView.as_view(), name="token-list"),
    path("auth/tokens/<int:token_id>/", tokens.TokenDetailView.as_view(), name="token-detail"),
]
