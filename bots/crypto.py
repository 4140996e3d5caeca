"""The platforms' callback cryptography: AES-256-CBC with PKCS#7 padding, and their signatures.

Feishu (open.feishu.cn, 事件订阅 "配置 Encrypt Key"): key = SHA-256(Encrypt Key), the first 16 bytes of the
decoded body are the IV, padding to AES's 16-byte block; ``X-Lark-Signature`` = hex SHA-256 of timestamp + nonce +
Encrypt Key + body. WeCom (developer.work.weixin.qq.com, 加解密方案说明): key = base64(EncodingAESKey + "="),
IV = key[:16], PKCS#7 padding to 32 bytes; plaintext = 16 random bytes + 4-byte big-endian length + message +
ReceiveId; ``msg_signature`` = hex SHA-1 of the sorted concatenation of token, timestamp, nonce and the ciphertext.
DingTalk (open.dingtalk.com, 机器人 "接收消息"): ``sign`` = base64(HMAC-SHA256(AppSecret, timestamp + "\\n" + AppSecret)).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import struct

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


class CryptoError(Exception):
    """The ciphertext cannot be opened (bad base64, bad padding, wrong key)."""


def _cbc_decrypt(key: bytes, iv: bytes, data: bytes) -> bytes:
    if not data or len(data) % 16:
        raise CryptoError("the ciphertext is not whole AES blocks")
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    return decryptor.update(data) + decryptor.finalize()


def _cbc_encrypt(key: bytes, iv: bytes, data: bytes, block: int) -> bytes:
    n = block - len(data) % block
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return encryptor.update(data + bytes([n]) * n) + encryptor.finalize()


def _unpad(data: bytes, block: int) -> bytes:
    n = data[-1] if data else 0
    if not 1 <= n <= block or data[-n:] != bytes([n]) * n:
        raise CryptoError("bad padding (wrong key?)")
    return data[:-n]


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise CryptoError("not base64") from None


# --- Feishu ---------------------------------------------------------------------------------------------------

def feishu_decrypt(encrypt_key: str, encrypted: str) -> bytes:
    raw = _b64(encrypted)
    if len(raw) < 32:
        raise CryptoError("too short")
    key = hashlib.sha256(encrypt_key.encode()).digest()
    return _unpad(_cbc_decrypt(key, raw[:16], raw[16:]), 16)


def feishu_encrypt(encrypt_key: str, plain: bytes) -> str:
    """What Feishu sends as ``encrypt`` (the self-test's sample event, bots/selftest.py)."""
    iv = os.urandom(16)
    return base64.b64encode(iv + _cbc_encrypt(hashlib.sha256(encrypt_key.encode()).digest(), iv, plain, 16)).decode()


def feishu_signature(timestamp: str, nonce: str, encrypt_key: str, body: bytes) -> str:
    return hashlib.sha256(timestamp.encode() + nonce.encode() + encrypt_key.encode() + body).hexdigest()


# --- DingTalk -------------------------------------------------------------------------------------------------

def dingtalk_sign(timestamp: str, app_secret: str) -> str:
    digest = hmac.new(app_secret.encode(), f"{timestamp}\n{app_secret}".encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


# --- WeCom ----------------------------------------------------------------------------------------------------

def wecom_signature(token: str, timestamp: str, nonce: str, encrypted: str) -> str:
    return hashlib.sha1("".join(sorted([token, timestamp, nonce, encrypted])).encode()).hexdigest()


def wecom_encrypt(encoding_aes_key: str, message: bytes, receive_id: str) -> str:
    """What WeCom sends as ``echostr`` or ``Encrypt`` (the self-test's sample, bots/selftest.py)."""
    key = base64.b64decode(encoding_aes_key + "=")
    plain = os.urandom(16) + struct.pack(">I", len(message)) + message + receive_id.encode()
    return base64.b64encode(_cbc_encrypt(key, key[:16], plain, 32)).decode()


def wecom_decrypt(encoding_aes_key: str, encrypted: str) -> tuple[bytes, str]:
    """(message, ReceiveId) of a WeCom ciphertext."""
    try:
        key = base64.b64decode(encoding_aes_key + "=")
    except (binascii.Error, ValueError):
        raise CryptoError("EncodingAESKey is not base64") from None
    if len(key) != 32:
        raise CryptoError("EncodingAESKey is not 43 characters")
    plain = _unpad(_cbc_decrypt(key, key[:16], _b64(encrypted)), 32)
    if len(plain) < 20:
        raise CryptoError("too short")
    (length,) = struct.unpack(">I", plain[16:20])
    if 20 + length > len(plain):
        raise CryptoError("the length prefix runs past the end")
    try:
        receive_id = plain[20 + length:].decode()
    except UnicodeDecodeError:
        raise CryptoError("the ReceiveId is not text") from None
    return plain[20:20 + length], receive_id


def same(a: str, b: str) -> bool:
    """Constant-time comparison of two signatures or tokens."""
    return hmac.compare_digest(a.encode(), b.encode())
