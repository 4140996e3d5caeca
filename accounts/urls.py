"""Sign-in routes under /accounts/: the form, sign-out and the OpenID Connect flow."""
from django.contrib.auth import views as auth_views
from django.urls import path

from accounts.sso.oidc import SsoCallbackView, SsoStartView
from accounts.views import SignInView

urlpatterns = [
    # Sign-in for everyone (the admin's login admits staff only).
    path("login/", SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # OpenID Connect: both answer 404 while it is off (accounts/sso/oidc.py).
    path("sso/start/", SsoStartView.as_view(), name="sso_start"),
    path("sso/callback/", SsoCallbackView.as_view(), name="sso_callback"),
]
