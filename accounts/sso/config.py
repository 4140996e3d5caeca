"""Single sign-on settings read from the environment: LDAP (django-auth-ldap) and OIDC (mozilla-django-oidc).

Imported by config/settings.py (``from accounts.sso.config import *``), so it imports no model and no
Django machinery beyond ``ImproperlyConfigured``. Each source is off while its first variable is unset
(``ZHIKU_LDAP_SERVER_URI``, ``ZHIKU_OIDC_CLIENT_ID``); docs/production.md, "Connect a directory", lists
them all and .env.example gives each one's default.
"""
from __future__ import annotations

import os
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from core.env import env_bool, env_int

PRODUCTION = (os.environ.get("ZHIKU_ENV", "").strip().lower() or "local") == "production"


def group_map_parse(text: str, *, name: str) -> dict[str, str]:
    """``"directory group=zhiku group, other=Other"`` as a dict; a pair without ``=`` is refused by name."""
    mapping: dict[str, str] = {}
    for pair in (p.strip() for p in text.split(",")):
        if not pair:
            continue
        source, sep, target = (part.strip() for part in pair.rpartition("="))
        if not sep or not source or not target:
            raise ImproperlyConfigured(f"{name}: {pair!r} is not 'directory group=zhiku group'.")
        mapping[source] = target
    return mapping


# --- LDAP / Active Directory (django-auth-ldap) ----------------------------------------------
ZHIKU_LDAP_SERVER_URI = os.environ.get("ZHIKU_LDAP_SERVER_URI", "").strip()
ZHIKU_LDAP_ENABLED = bool(ZHIKU_LDAP_SERVER_URI)
# Directory groups (their cn) → zhiku groups; unset: each directory group mirrored under its own name
# (ZHIKU_LDAP_MIRROR_GROUPS=0: none).
ZHIKU_LDAP_GROUP_MAP = group_map_parse(os.environ.get("ZHIKU_LDAP_GROUP_MAP", ""), name="ZHIKU_LDAP_GROUP_MAP")
ZHIKU_LDAP_MIRROR_GROUPS = env_bool("ZHIKU_LDAP_MIRROR_GROUPS", True)
# A local account of the same name as a directory user is refused unless this links them (docs/sso.md).
ZHIKU_LDAP_LINK_EXISTING = env_bool("ZHIKU_LDAP_LINK_EXISTING", False)


def ldap_settings() -> dict:
    """The AUTH_LDAP_* settings django-auth-ldap reads, from the ZHIKU_LDAP_* variables."""
    import ldap
    from django_auth_ldap.config import LDAPSearch

    start_tls = env_bool("ZHIKU_LDAP_START_TLS", False)
    if PRODUCTION and not ZHIKU_LDAP_SERVER_URI.lower().startswith("ldaps://") and not start_tls:
        raise ImproperlyConfigured(
            "ZHIKU_LDAP_SERVER_URI must be ldaps://… or ZHIKU_LDAP_START_TLS=1 when ZHIKU_ENV=production: "
            "directory passwords would cross the network in clear (docs/production.md, 'Connect a directory').")
    user_base = os.environ.get("ZHIKU_LDAP_USER_SEARCH_BASE", "").strip()
    group_base = os.environ.get("ZHIKU_LDAP_GROUP_SEARCH_BASE", "").strip()
    if not user_base:
        raise ImproperlyConfigured("ZHIKU_LDAP_USER_SEARCH_BASE must be set with ZHIKU_LDAP_SERVER_URI.")
    user_filter = os.environ.get("ZHIKU_LDAP_USER_FILTER", "").strip() or "(uid=%(user)s)"
    values = {
        "AUTH_LDAP_SERVER_URI": ZHIKU_LDAP_SERVER_URI,
        "AUTH_LDAP_BIND_DN": os.environ.get("ZHIKU_LDAP_BIND_DN", ""),
        "AUTH_LDAP_BIND_PASSWORD": os.environ.get("ZHIKU_LDAP_BIND_PASSWORD", ""),
        "AUTH_LDAP_START_TLS": start_tls,
        "AUTH_LDAP_USER_SEARCH": LDAPSearch(user_base, ldap.SCOPE_SUBTREE, user_filter),
        "AUTH_LDAP_USER_ATTR_MAP": {
            "email": os.environ.get("ZHIKU_LDAP_ATTR_EMAIL", "mail"),
            "first_name": os.environ.get("ZHIKU_LDAP_ATTR_FIRST_NAME", "givenName"),
            "last_name": os.environ.get("ZHIKU_LDAP_ATTR_LAST_NAME", "sn"),
        },
        # Name, e-mail and groups are read again at every sign-in.
        "AUTH_LDAP_ALWAYS_UPDATE_USER": True,
        "AUTH_LDAP_CACHE_TIMEOUT": 0,
        "AUTH_LDAP_CONNECTION_OPTIONS": {
            ldap.OPT_NETWORK_TIMEOUT: env_int("ZHIKU_LDAP_TIMEOUT", 5),
            ldap.OPT_TIMEOUT: env_int("ZHIKU_LDAP_TIMEOUT", 5),
            ldap.OPT_REFERRALS: 0,  # Active Directory's referrals need a bind of their own: not followed
        },
    }
    if group_base:
        values["AUTH_LDAP_GROUP_SEARCH"] = LDAPSearch(
            group_base, ldap.SCOPE_SUBTREE, os.environ.get("ZHIKU_LDAP_GROUP_FILTER", "").strip() or "(objectClass=*)")
        values["AUTH_LDAP_GROUP_TYPE"] = _group_type(os.environ.get("ZHIKU_LDAP_GROUP_TYPE", "groupOfNames"))
        for flag, variable in (("is_staff", "ZHIKU_LDAP_STAFF_GROUP"), ("is_superuser", "ZHIKU_LDAP_SUPERUSER_GROUP")):
            if os.environ.get(variable, "").strip():
                values.setdefault("AUTH_LDAP_USER_FLAGS_BY_GROUP", {})[flag] = os.environ[variable].strip()
        if os.environ.get("ZHIKU_LDAP_REQUIRE_GROUP", "").strip():
            values["AUTH_LDAP_REQUIRE_GROUP"] = os.environ["ZHIKU_LDAP_REQUIRE_GROUP"].strip()
    return values


def _group_type(name: str):
    from django_auth_ldap import config as ldap_config

    types = {
        "groupOfNames": ldap_config.GroupOfNamesType,
        "nestedGroupOfNames": ldap_config.NestedGroupOfNamesType,
        "groupOfUniqueNames": ldap_config.GroupOfUniqueNamesType,
        "posixGroup": ldap_config.PosixGroupType,
        "activeDirectory": ldap_config.ActiveDirectoryGroupType,
        "nestedActiveDirectory": ldap_config.NestedActiveDirectoryGroupType,
    }
    if name.strip() not in types:
        raise ImproperlyConfigured(f"ZHIKU_LDAP_GROUP_TYPE must be one of {', '.join(types)}, not {name!r}.")
    return types[name.strip()](name_attr="cn")


if ZHIKU_LDAP_ENABLED:
    globals().update(ldap_settings())

# --- OpenID Connect (mozilla-django-oidc; authorization code with PKCE) ---------------------------
ZHIKU_OIDC_CLIENT_ID = os.environ.get("ZHIKU_OIDC_CLIENT_ID", "").strip()
ZHIKU_OIDC_ENABLED = bool(ZHIKU_OIDC_CLIENT_ID)
ZHIKU_OIDC_ISSUER = os.environ.get("ZHIKU_OIDC_ISSUER", "").strip()
# The callback URL registered at the provider (…/accounts/sso/callback/); unset (local mode only): built
# from the request. Production refuses one that is not https.
ZHIKU_OIDC_REDIRECT_URL = os.environ.get("ZHIKU_OIDC_REDIRECT_URL", "").strip()
ZHIKU_OIDC_USERNAME_CLAIM = os.environ.get("ZHIKU_OIDC_USERNAME_CLAIM", "preferred_username").strip()
ZHIKU_OIDC_GROUPS_CLAIM = os.environ.get("ZHIKU_OIDC_GROUPS_CLAIM", "groups").strip()
ZHIKU_OIDC_STAFF_GROUP = os.environ.get("ZHIKU_OIDC_STAFF_GROUP", "").strip()
ZHIKU_OIDC_GROUP_MAP = group_map_parse(os.environ.get("ZHIKU_OIDC_GROUP_MAP", ""), name="ZHIKU_OIDC_GROUP_MAP")
ZHIKU_OIDC_MIRROR_GROUPS = env_bool("ZHIKU_OIDC_MIRROR_GROUPS", True)
ZHIKU_OIDC_LINK_EXISTING = env_bool("ZHIKU_OIDC_LINK_EXISTING", False)
# The sign-in button's label; empty: 「使用企业账号登录」 / "Sign in with SSO".
ZHIKU_OIDC_BUTTON_LABEL = os.environ.get("ZHIKU_OIDC_BUTTON_LABEL", "").strip()


def oidc_settings() -> dict[str, object]:
    """The OIDC_* settings mozilla-django-oidc reads, from the ZHIKU_OIDC_* variables."""
    endpoints = {
        "OIDC_OP_AUTHORIZATION_ENDPOINT": "ZHIKU_OIDC_AUTHORIZATION_ENDPOINT",
        "OIDC_OP_TOKEN_ENDPOINT": "ZHIKU_OIDC_TOKEN_ENDPOINT",
        "OIDC_OP_USER_ENDPOINT": "ZHIKU_OIDC_USERINFO_ENDPOINT",
        "OIDC_OP_JWKS_ENDPOINT": "ZHIKU_OIDC_JWKS_URI",
    }
    values = {setting: os.environ.get(variable, "").strip() for setting, variable in endpoints.items()}
    missing = [endpoints[s] for s, v in values.items() if not v] + ([] if ZHIKU_OIDC_ISSUER else ["ZHIKU_OIDC_ISSUER"])
    if missing:
        raise ImproperlyConfigured(
            f"ZHIKU_OIDC_CLIENT_ID is set, so {', '.join(missing)} must be too "
            "(`manage.py oidc_discover <issuer>` prints them from the provider's discovery document).")
    if PRODUCTION:
        if urlsplit(ZHIKU_OIDC_REDIRECT_URL).scheme != "https":
            raise ImproperlyConfigured(
                "ZHIKU_OIDC_REDIRECT_URL must be an https:// URL when ZHIKU_ENV=production (the authorization "
                f"code would travel in clear), not {ZHIKU_OIDC_REDIRECT_URL or 'unset'!r}.")
        plain = [v for v in (*values.values(), ZHIKU_OIDC_ISSUER) if urlsplit(v).scheme != "https"]
        if plain:
            raise ImproperlyConfigured(f"The OIDC provider's URLs must be https:// in production: {', '.join(plain)}.")
    return {
        **values,
        "OIDC_RP_CLIENT_ID": ZHIKU_OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": os.environ.get("ZHIKU_OIDC_CLIENT_SECRET", ""),
        "OIDC_RP_SIGN_ALGO": os.environ.get("ZHIKU_OIDC_SIGN_ALGO", "RS256").strip(),
        "OIDC_RP_SCOPES": os.environ.get("ZHIKU_OIDC_SCOPES", "openid email profile").strip(),
        "OIDC_USE_PKCE": True,
        "OIDC_PKCE_CODE_CHALLENGE_METHOD": "S256",
        "OIDC_TIMEOUT": env_int("ZHIKU_OIDC_TIMEOUT", 10),
        "OIDC_AUTHENTICATION_CALLBACK_URL": "sso_callback",
        "LOGIN_REDIRECT_URL_FAILURE": "/accounts/login/?sso=failed",
    }


if ZHIKU_OIDC_ENABLED:
    globals().update(oidc_settings())

# --- SSO only: password sign-in off for all but the break-glass accounts ---------------------------
ZHIKU_SSO_ONLY = env_bool("ZHIKU_SSO_ONLY", False)
ZHIKU_SSO_BREAK_GLASS = [u.strip() for u in os.environ.get("ZHIKU_SSO_BREAK_GLASS", "").split(",") if u.strip()]
if ZHIKU_SSO_ONLY and not (ZHIKU_OIDC_ENABLED or ZHIKU_LDAP_ENABLED):
    raise ImproperlyConfigured("ZHIKU_SSO_ONLY=1 needs ZHIKU_OIDC_CLIENT_ID or ZHIKU_LDAP_SERVER_URI: nobody could sign in.")

# Local passwords, then the directory, then OIDC. In SSO-only mode the password backend is
# accounts/sso/password.py's, which refuses all but the break-glass accounts; a session remembers its
# backend, so turning the mode on also ends the password sessions made before it (and upgrading to
# this release ends none).
SSO_AUTHENTICATION_BACKENDS = [
    "accounts.sso.password.PasswordBackend" if ZHIKU_SSO_ONLY else "django.contrib.auth.backends.ModelBackend",
    *(["accounts.sso.ldap.DirectoryBackend"] if ZHIKU_LDAP_ENABLED else []),
    *(["accounts.sso.oidc.ProviderBackend"] if ZHIKU_OIDC_ENABLED else []),
]
