"""Sign-in against an LDAP directory or Active Directory: django-auth-ldap's backend, with zhiku's links and groups.

django-auth-ldap searches the user (``ZHIKU_LDAP_USER_SEARCH_BASE``, ``ZHIKU_LDAP_USER_FILTER``), binds as them,
copies e-mail and name and sets the staff flag (accounts/sso/config.py builds its settings). Here, in addition:
an existing account never signed in through the directory is refused (unless ``ZHIKU_LDAP_LINK_EXISTING``), so
a directory user named like a local administrator does not become them; and the user's directory groups are
mapped to zhiku groups at every sign-in (accounts/sso/claims.py).
"""
from __future__ import annotations

import logging

from django.conf import settings
from django_auth_ldap.backend import LDAPBackend

from accounts.models import SsoIdentity
from accounts.sso.claims import groups_sync, identity_link, identity_linked

log = logging.getLogger(__name__)
SOURCE = SsoIdentity.Source.LDAP


class DirectoryBackend(LDAPBackend):
    """django-auth-ldap's LDAPBackend: linked accounts only, groups mapped at each sign-in, no session of someone
    inactive."""

    def get_user(self, user_id):
        # A session remembers the backend that signed it in, and Django asks that backend for its user at every
        # request; django-auth-ldap's answers even a deactivated one, Django's ModelBackend does not.
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def get_or_build_user(self, username, ldap_user):
        user, built = super().get_or_build_user(username, ldap_user)
        if not built and not settings.ZHIKU_LDAP_LINK_EXISTING and not identity_linked(user=user, source=SOURCE):
            log.warning("LDAP sign-in of %r refused: a local account of that name exists and is not linked "
                        "to the directory (ZHIKU_LDAP_LINK_EXISTING)", username)
            raise ldap_user.AuthenticationFailed("local account not linked to the directory")
        return user, built

    def authenticate_ldap_user(self, ldap_user, password):
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is None:
            return None
        identity_link(user=user, source=SOURCE, subject=user.get_username().lower())
        names = ldap_user.group_names if getattr(settings, "AUTH_LDAP_GROUP_SEARCH", None) else set()
        groups_sync(user=user, names=names, source=SOURCE, group_map=settings.ZHIKU_LDAP_GROUP_MAP,
                    mirror=settings.ZHIKU_LDAP_MIRROR_GROUPS)
        return user
