"""Encrypting endpoint keys at rest: Fernet (the ``cryptography`` package), keys from ZHIKU_SECRETS_KEY or SECRET_KEY.

A key read back is the one written or ``InvalidToken`` (Fernet authenticates the whole token). The
``MultiFernet`` ring, first to last: each comma-separated entry of ZHIKU_SECRETS_KEY (a Fernet key, or long
random text derived to one with HKDF-SHA256), then keys derived from SECRET_KEY and SECRET_KEY_FALLBACKS.
The first encrypts, every key decrypts, so a rotated SECRET_KEY (the old one in the fallbacks) or a new
ZHIKU_SECRETS_KEY keeps stored keys readable until ``manage.py endpoint_keys_rotate`` moves them (docs/llm.md).
"""
from __future__ import annotations

import base64
import binascii
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

__all__ = ["InvalidToken", "secret_decrypt", "secret_encrypt", "secret_rotate"]

_HKDF_SALT = b"zhiku.providers.secrets"
_HKDF_INFO = b"model endpoint api keys"


def _fernet_key(text: str) -> bytes:
    """``text`` itself when it is a Fernet key (32 url-safe base64 bytes), else 32 bytes derived from it (HKDF-SHA256)."""
    raw = text.encode()
    try:
        if len(base64.urlsafe_b64decode(raw)) == 32 and len(raw) == 44:
            return raw
    except (binascii.Error, ValueError):
        pass
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=_HKDF_SALT, info=_HKDF_INFO).derive(raw)
    return base64.urlsafe_b64encode(derived)


@lru_cache(maxsize=4)
def _ring(secrets: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(_fernet_key(s)) for s in secrets])


def _secrets() -> tuple[str, ...]:
    configured = [s.strip() for s in str(getattr(settings, "ZHIKU_SECRETS_KEY", "") or "").split(",") if s.strip()]
    django = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return tuple(dict.fromkeys([*configured, *(str(s) for s in django if s)]))


def secret_encrypt(plain: str) -> str:
    """The Fernet token of ``plain`` under the ring's first key ("" stays "": no key)."""
    if not plain:
        return ""
    return _ring(_secrets()).encrypt(plain.encode()).decode()


def secret_decrypt(token: str) -> str:
    """The text of a stored token; raises ``InvalidToken`` when no key of the ring opens it ("" is "")."""
    if not token:
        return ""
    return _ring(_secrets()).decrypt(token.encode()).decode()


def secret_rotate(token: str) -> str:
    """``token`` re-encrypted under the ring's first key; raises ``InvalidToken`` when no key opens it."""
    if not token:
        return ""
    return _ring(_secrets()).rotate(token.encode()).decode()
