"""The admin's names of the third-party apps in the reader's language (INSTALLED_APPS names these AppConfigs).

django-axes names its section "Axes", django-oauth-toolkit "Django OAuth Toolkit", in English only, and the toolkit
names its models after their classes ("access tokens"), which no catalogue can translate. Django's way to rename a
third-party app is a subclass of its AppConfig (docs.djangoproject.com, "Applications", "For application users");
the toolkit's model names are set on their ``_meta`` once the app is ready, leaving ``Meta`` (and so its migrations)
as the toolkit wrote it. Their translations are in locale/zh_Hans/LC_MESSAGES/third_party.po.part.
"""
from __future__ import annotations

from axes.apps import AppConfig as AxesAppConfig
from django.utils.translation import gettext_lazy as _
from oauth2_provider.apps import DOTConfig


class AxesConfig(AxesAppConfig):
    """django-axes: failed and successful sign-ins, and the lockouts they lead to (core/http/security.py)."""

    verbose_name = _("Sign-in protection")


class OAuthToolkitConfig(DOTConfig):
    """django-oauth-toolkit: MCP clients' OAuth 2.1 sign-in (assistants/mcp_auth/, docs/integrations.md)."""

    verbose_name = _("MCP clients' OAuth sign-in")

    def ready(self) -> None:
        super().ready()
        names = {
            "Application": (_("OAuth client"), _("OAuth clients")),
            "AccessToken": (_("access token"), _("access tokens")),
            "RefreshToken": (_("refresh token"), _("refresh tokens")),
            "Grant": (_("authorization code"), _("authorization codes")),
            "IDToken": (_("ID token"), _("ID tokens")),
            "DeviceGrant": (_("device grant"), _("device grants")),
        }
        for model in self.get_models():
            if model.__name__ in names:
                model._meta.verbose_name, model._meta.verbose_name_plural = names[model.__name__]
