"""The sign-in page: the password form and, where an OpenID provider is configured, the single sign-on button."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.views import LoginView


class SignInView(LoginView):
    """Django's LoginView on registration/login.html, told which ways of signing in are open."""

    template_name = "registration/login.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        # SSO only: the password form stays for the break-glass accounts and, with LDAP, for directory passwords.
        context.update({
            "sso_enabled": settings.ZHIKU_OIDC_ENABLED,
            "sso_label": settings.ZHIKU_OIDC_BUTTON_LABEL,
            "sso_failed": self.request.GET.get("sso") == "failed",
            "password_hidden": settings.ZHIKU_SSO_ONLY and not settings.ZHIKU_LDAP_ENABLED,
            "directory_enabled": settings.ZHIKU_LDAP_ENABLED,
        })
        return context
