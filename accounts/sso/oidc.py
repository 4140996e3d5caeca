"""Sign-in through an OpenID provider: mozilla-django-oidc's authorization code flow with PKCE (S256).

Beyond the library's state, nonce, PKCE and signature checks (docs/sso.md): the ID token's issuer and audience
are checked, and userinfo must be about its subject; the account is found by ``sub`` through its link
(``SsoIdentity``), never by e-mail, so a provider user cannot take over a local account sharing an address; a
new user gets the username, e-mail and name claims; groups and staff come from the groups claim at each sign-in;
the provider's failures end on the sign-in page with a message. The redirect URL is ``ZHIKU_OIDC_REDIRECT_URL``.
"""
from __future__ import annotations

import logging

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import Http404
from django.views.generic import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from accounts.models import SsoIdentity
from accounts.sso.claims import groups_sync, identity_link, identity_user

log = logging.getLogger(__name__)
SOURCE = SsoIdentity.Source.OIDC


def _claim_text(claims: dict, name: str, limit: int | None) -> str:
    value = claims.get(name)
    return value.strip()[:limit] if isinstance(value, str) else ""


def _claim_groups(claims: dict) -> list[str]:
    value = claims.get(settings.ZHIKU_OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


class ProviderBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend: issuer and audience checked, accounts found by ``sub``, claims mapped, no
    session of someone inactive."""

    def get_user(self, user_id):
        # As accounts/sso/ldap.py's: the library's get_user answers a deactivated user too, ModelBackend's does not.
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def authenticate(self, request, **kwargs):
        try:
            return super().authenticate(request, **kwargs)
        except (requests.RequestException, SuspiciousOperation, jwt.PyJWTError, KeyError, ValueError) as exc:
            log.warning("OIDC sign-in failed: %s", exc)
            return None

    def get_token(self, payload):
        if settings.ZHIKU_OIDC_REDIRECT_URL:
            payload = {**payload, "redirect_uri": settings.ZHIKU_OIDC_REDIRECT_URL}
        return super().get_token(payload)

    def verify_token(self, token, **kwargs):
        payload = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if payload.get("iss") != settings.ZHIKU_OIDC_ISSUER or settings.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation(f"ID token of issuer {payload.get('iss')!r} for {audience!r}, not ours")
        return payload

    def get_userinfo(self, access_token, id_token, payload):
        """The userinfo answer over the ID token's claims (some providers put the groups only in the ID token).

        Its ``sub`` must be the ID token's (OpenID Connect Core 1.0, section 5.3.4): else it may be another user's.
        """
        info = super().get_userinfo(access_token, id_token, payload)
        if not isinstance(info, dict) or info.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("the userinfo answer is not about the ID token's subject")
        return {**payload, **info}

    def verify_claims(self, claims):
        return bool(_claim_text(claims, "sub", 255)) and bool(self._username(claims))

    def _username(self, claims: dict) -> str:
        limit = get_user_model()._meta.get_field("username").max_length
        return _claim_text(claims, settings.ZHIKU_OIDC_USERNAME_CLAIM, limit)

    def filter_users_by_claims(self, claims):
        user = identity_user(source=SOURCE, issuer=settings.ZHIKU_OIDC_ISSUER, subject=claims["sub"])
        if user is None and settings.ZHIKU_OIDC_LINK_EXISTING:
            return self.UserModel.objects.filter(username=self._username(claims))
        return self.UserModel.objects.filter(pk=user.pk) if user else self.UserModel.objects.none()

    def create_user(self, claims):
        try:
            with transaction.atomic():
                user = self.UserModel.objects.create_user(self._username(claims), email=_claim_text(claims, "email", 254))
        except IntegrityError:
            raise SuspiciousOperation(
                f"a local account {self._username(claims)!r} exists and is not linked to this provider "
                "(ZHIKU_OIDC_LINK_EXISTING)") from None
        return self.update_user(user, claims)

    def update_user(self, user, claims):
        user.email = _claim_text(claims, "email", 254) or user.email
        user.first_name = _claim_text(claims, "given_name", 150) or user.first_name
        user.last_name = _claim_text(claims, "family_name", 150) or user.last_name
        if not (claims.get("given_name") or claims.get("family_name")) and _claim_text(claims, "name", 150):
            user.first_name = _claim_text(claims, "name", 150)
        groups = _claim_groups(claims)
        if settings.ZHIKU_OIDC_STAFF_GROUP:
            user.is_staff = settings.ZHIKU_OIDC_STAFF_GROUP in groups
        user.save()
        identity_link(user=user, source=SOURCE, issuer=settings.ZHIKU_OIDC_ISSUER, subject=claims["sub"])
        groups_sync(user=user, names=groups, source=SOURCE, group_map=settings.ZHIKU_OIDC_GROUP_MAP,
                    mirror=settings.ZHIKU_OIDC_MIRROR_GROUPS)
        return user


class SsoStartView(OIDCAuthenticationRequestView):
    """GET /accounts/sso/start/?next=…: to the provider's authorization endpoint (state, nonce, PKCE); 404 when off."""

    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)  # the library's reads the provider's settings, absent while OIDC is off

    def get(self, request):
        if not settings.ZHIKU_OIDC_ENABLED:
            raise Http404
        self.OIDC_OP_AUTH_ENDPOINT = settings.OIDC_OP_AUTHORIZATION_ENDPOINT
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)

    def get_extra_params(self, request):
        extra = dict(super().get_extra_params(request))
        if settings.ZHIKU_OIDC_REDIRECT_URL:
            extra["redirect_uri"] = settings.ZHIKU_OIDC_REDIRECT_URL
        return extra


class SsoCallbackView(OIDCAuthenticationCallbackView):
    """GET /accounts/sso/callback/: the provider's answer; signed in, or back on the sign-in page with a message."""

    def get(self, request):
        if not settings.ZHIKU_OIDC_ENABLED:
            raise Http404
        try:
            return super().get(request)
        except SuspiciousOperation as exc:  # a state this session never sent (a replayed or stale link)
            log.warning("OIDC callback refused: %s", exc)
            return self.login_failure()
