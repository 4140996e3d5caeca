"""What the platforms' callback cryptography shares: AES-256-CBC with PKCS#7 padding, base64, constant-time compare.

Each platform's own scheme (its key, IV, padding block and signature) is in its module: bots/platforms/feishu.py,
dingtalk.py, wecom.py.
"""
from __future__ import annotations

import base64
import binascii
import hmac

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


class CryptoError(Exception):
    """The ciphertext cannot be opened (bad base64, bad padding, wrong key)."""


def cbc_decrypt(key: bytes, iv: bytes, data: bytes) -> bytes:
    if not data or len(data) % 16:
        raise CryptoError("the ciphertext is not whole AES blocks")
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    return decryptor.update(data) + decryptor.finalize()


def cbc_encrypt(key: bytes, iv: bytes, data: bytes, block: int) -> bytes:
    """``data`` padded (PKCS#7) to whole ``block`` bytes, then encrypted."""
    n = block - len(data) % block
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return encryptor.update(data + bytes([n]) * n) + encryptor.finalize()


def unpad(data: bytes, block: int) -> bytes:
    n = data[-1] if data else 0
    if not 1 <= n <= block or data[-n:] != bytes([n]) * n:
        raise CryptoError("bad padding (wrong key?)")
    return data[:-n]


def b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise CryptoError("not base64") from None


def same(a: str, b: str) -> bool:
    """Constant-time comparison of two signatures or tokens."""
    return hmac.compare_digest(a.encode(), b.encode())
