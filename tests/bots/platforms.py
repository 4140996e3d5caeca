"""Feishu's open API, WeCom's API and DingTalk's sessionWebhook on one loopback server, as each platform's
documentation describes them at the wire; and the callbacks each platform sends, signed and encrypted as it would.

Feishu: ``POST /open-apis/auth/v3/tenant_access_token/internal`` (``{"code", "msg", "tenant_access_token",
"expire"}``) and ``POST /open-apis/im/v1/messages/{message_id}/reply`` (an unknown or expired token: HTTP 400, code
99991663). WeCom: ``GET /cgi-bin/gettoken`` (``{"errcode", "access_token", "expires_in"}``) and ``POST
/cgi-bin/message/send?access_token=`` (an unknown token: errcode 40014, an expired one 42001). DingTalk: ``POST
/robot/sendBySession?session=`` (``{"errcode": 0}``) and ``POST /v1.0/oauth2/accessToken`` (``{"accessToken",
"expireIn"}``; a wrong AppKey or AppSecret: HTTP 400 ``{"code": "invalidClientIdOrSecret", "message"}``). Every reply a
test's answer produced is kept in ``replies``.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import os
import struct
import threading
import time
from collections import Counter
from typing import Any

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

FEISHU_APP = ("cli_zhikutest", "feishu-app-secret")
WECOM_CORP = ("wwzhikucorp", "wecom-app-secret")
DINGTALK_APP = ("dingzhiku", "dingtalk-app-secret")  # the RobotCode (AppKey) and AppSecret


class _Quiet(WSGIRequestHandler):
    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


class Platforms:
    def __init__(self, expire: int = 7200) -> None:
        self.expire = expire
        self.issued: dict[str, tuple[str, float]] = {}   # token → (platform, when)
        self.token_requests: Counter[str] = Counter()
        self.replies: list[dict[str, Any]] = []
        self._numbers = itertools.count(1)
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True, request_handler=_Quiet)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def revoke_tokens(self) -> None:
        self.issued.clear()

    def replies_of(self, platform: str) -> list[dict[str, Any]]:
        return [r for r in self.replies if r["platform"] == platform]

    def _token(self, platform: str) -> str:
        token = f"{platform[0]}-{next(self._numbers)}"
        self.issued[token] = (platform, time.time())
        self.token_requests[platform] += 1
        return token

    def _valid(self, token: str, platform: str) -> str:
        """"ok", "unknown" or "expired"."""
        found = self.issued.get(token)
        if found is None or found[0] != platform:
            return "unknown"
        return "expired" if time.time() - found[1] > self.expire else "ok"

    @staticmethod
    def _json(body: Any, status: int = 200) -> Response:
        return Response(json.dumps(body), status=status, content_type="application/json")

    def _app(self, environ, start_response):
        request = Request(environ)
        return self._route(request)(environ, start_response)

    def _route(self, request: Request) -> Response:
        path = request.path
        if path == "/open-apis/auth/v3/tenant_access_token/internal" and request.method == "POST":
            body = request.get_json(silent=True) or {}
            if (body.get("app_id"), body.get("app_secret")) != FEISHU_APP:
                return self._json({"code": 10014, "msg": "app secret invalid"}, 400)
            return self._json({"code": 0, "msg": "ok", "tenant_access_token": self._token("feishu"), "expire": self.expire})
        if path.startswith("/open-apis/im/v1/messages/") and path.endswith("/reply") and request.method == "POST":
            auth = request.headers.get("Authorization", "")
            if not auth.startswith("Bearer ") or self._valid(auth[7:], "feishu") != "ok":
                return self._json({"code": 99991663, "msg": "Invalid access token for authorization."}, 400)
            body = request.get_json(silent=True) or {}
            self.replies.append({"platform": "feishu", "message_id": path.split("/")[-2], "body": body,
                                 "card": json.loads(body.get("content") or "{}")})
            return self._json({"code": 0, "msg": "success", "data": {"message_id": "om_reply"}})
        if path == "/cgi-bin/gettoken" and request.method == "GET":
            if (request.args.get("corpid"), request.args.get("corpsecret")) != WECOM_CORP:
                return self._json({"errcode": 40001, "errmsg": "invalid credential"})
            return self._json({"errcode": 0, "errmsg": "ok", "access_token": self._token("wecom"),
                               "expires_in": self.expire})
        if path == "/cgi-bin/message/send" and request.method == "POST":
            state = self._valid(request.args.get("access_token", ""), "wecom")
            if state != "ok":
                return self._json({"errcode": 42001 if state == "expired" else 40014, "errmsg": f"{state} access_token"})
            self.replies.append({"platform": "wecom", "body": request.get_json(silent=True) or {}})
            return self._json({"errcode": 0, "errmsg": "ok", "msgid": "msg-1"})
        if path == "/v1.0/oauth2/accessToken" and request.method == "POST":
            body = request.get_json(silent=True) or {}
            if (body.get("appKey"), body.get("appSecret")) != DINGTALK_APP:
                return self._json({"code": "invalidClientIdOrSecret", "message": "无效的clientId或者clientSecret",
                                   "requestid": "req-1"}, 400)
            return self._json({"accessToken": self._token("dingtalk"), "expireIn": self.expire})
        if path == "/robot/sendBySession" and request.method == "POST":
            self.replies.append({"platform": "dingtalk", "session": request.args.get("session"),
                                 "body": request.get_json(silent=True) or {}})
            return self._json({"errcode": 0, "errmsg": "ok"})
        return self._json({"code": 404, "msg": "not found"}, 404)


# --- what each platform sends -------------------------------------------------------------------------------------

def feishu_encrypt(encrypt_key: str, data: bytes) -> str:
    """Feishu's ``encrypt``: AES-256-CBC, key SHA-256(Encrypt Key), a random IV before the ciphertext, base64."""
    padder = padding.PKCS7(128).padder()
    padded = padder.update(data) + padder.finalize()
    iv = os.urandom(16)
    encryptor = Cipher(algorithms.AES(hashlib.sha256(encrypt_key.encode()).digest()), modes.CBC(iv)).encryptor()
    return base64.b64encode(iv + encryptor.update(padded) + encryptor.finalize()).decode()


def feishu_headers(encrypt_key: str, body: bytes, timestamp: str | None = None, nonce: str = "n0nce") -> dict[str, str]:
    """What Feishu sends with every event when an Encrypt Key is set (not with its URL check): the request's
    timestamp (Unix seconds, now unless given), a nonce, and X-Lark-Signature = hex SHA-256 of timestamp + nonce +
    Encrypt Key + the raw body."""
    timestamp = timestamp or str(int(time.time()))
    signature = hashlib.sha256((timestamp + nonce + encrypt_key).encode() + body).hexdigest()
    return {"HTTP_X_LARK_REQUEST_TIMESTAMP": timestamp, "HTTP_X_LARK_REQUEST_NONCE": nonce,
            "HTTP_X_LARK_SIGNATURE": signature}


def feishu_url_check(encrypt_key: str, token: str, challenge: str) -> bytes:
    """The body of Feishu's URL check with an Encrypt Key set: the ``url_verification`` encrypted, and (as Feishu
    sends it) no X-Lark-Signature with it."""
    plain = json.dumps({"challenge": challenge, "token": token, "type": "url_verification"}).encode()
    return json.dumps({"encrypt": feishu_encrypt(encrypt_key, plain)}).encode()


def feishu_message(text: str, *, token: str, event_id: str, message_id: str, chat_type: str = "p2p",
                   chat_id: str = "oc_chat_1", mentions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An ``im.message.receive_v1`` event of schema 2.0."""
    now = str(int(time.time() * 1000))
    return {"schema": "2.0",
            "header": {"event_id": event_id, "event_type": "im.message.receive_v1", "create_time": now,
                       "token": token, "app_id": FEISHU_APP[0], "tenant_key": "tenant_1"},
            "event": {"sender": {"sender_id": {"open_id": "ou_asker", "user_id": "asker"}, "sender_type": "user",
                                 "tenant_key": "tenant_1"},
                      "message": {"message_id": message_id, "root_id": "", "parent_id": "", "create_time": now,
                                  "chat_id": chat_id, "chat_type": chat_type, "message_type": "text",
                                  "content": json.dumps({"text": text}, ensure_ascii=False),
                                  "mentions": mentions or []}}}


def dingtalk_headers(app_secret: str, timestamp: int | None = None) -> dict[str, str]:
    stamp = str(timestamp if timestamp is not None else int(time.time() * 1000))
    digest = hmac.new(app_secret.encode(), f"{stamp}\n{app_secret}".encode(), hashlib.sha256).digest()
    return {"HTTP_TIMESTAMP": stamp, "HTTP_SIGN": base64.b64encode(digest).decode()}


def dingtalk_message(text: str, *, webhook: str, msg_id: str, conversation_type: str = "1") -> dict[str, Any]:
    now = int(time.time() * 1000)
    return {"msgtype": "text", "text": {"content": text}, "msgId": msg_id, "createAt": now,
            "conversationType": conversation_type, "conversationId": "cidZhikuTest==", "senderId": "$:LWCP_v1:$x",
            "senderNick": "张三", "senderStaffId": "staff01", "chatbotUserId": "$:LWCP_v1:$bot",
            "sessionWebhook": webhook, "sessionWebhookExpiredTime": now + 3600_000, "isInAtList": True}


def wecom_encrypt(encoding_aes_key: str, message: bytes, receive_id: str) -> str:
    """WeCom's ciphertext: 16 random bytes, the length (4 bytes, network order), the message, the ReceiveId;
    PKCS#7 to 32 bytes; AES-256-CBC with key base64(EncodingAESKey + "=") and IV its first 16 bytes."""
    key = base64.b64decode(encoding_aes_key + "=")
    plain = os.urandom(16) + struct.pack(">I", len(message)) + message + receive_id.encode()
    padder = padding.PKCS7(256).padder()
    padded = padder.update(plain) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(key[:16])).encryptor()
    return base64.b64encode(encryptor.update(padded) + encryptor.finalize()).decode()


def wecom_query(token: str, encrypted: str, *, echo: bool = False, timestamp: str | None = None,
                nonce: str = "nonce1") -> dict[str, str]:
    """WeCom's query: ``msg_signature`` (SHA-1 of the sorted token, timestamp, nonce and ciphertext), the
    timestamp (Unix seconds, now unless given) and nonce, and for the URL check the ``echostr``."""
    timestamp = timestamp or str(int(time.time()))
    signature = hashlib.sha1("".join(sorted([token, timestamp, nonce, encrypted])).encode()).hexdigest()
    query = {"msg_signature": signature, "timestamp": timestamp, "nonce": nonce}
    if echo:
        query["echostr"] = encrypted
    return query


def wecom_message_xml(content: str, *, user: str, msg_id: str, agent_id: str = "1000002") -> bytes:
    return (f"<xml><ToUserName><![CDATA[{WECOM_CORP[0]}]]></ToUserName><FromUserName><![CDATA[{user}]]></FromUserName>"
            f"<CreateTime>{int(time.time())}</CreateTime><MsgType><![CDATA[text]]></MsgType>"
            f"<Content><![CDATA[{content}]]></Content><MsgId>{msg_id}</MsgId><AgentID>{agent_id}</AgentID></xml>").encode()


def wecom_envelope(encrypted: str, agent_id: str = "1000002") -> bytes:
    return (f"<xml><ToUserName><![CDATA[{WECOM_CORP[0]}]]></ToUserName><AgentID><![CDATA[{agent_id}]]></AgentID>"
            f"<Encrypt><![CDATA[{encrypted}]]></Encrypt></xml>").encode()
