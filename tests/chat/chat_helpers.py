"""Helpers for the chat tests: the tiny KB's documents and websocket plumbing.

ORM calls from async tests go through ``chat.services.in_thread``, which closes
its connection: channels' test communicator turns off ``database_sync_to_async``'s
clean-up while an application runs, and a leftover connection keeps the test
database from being dropped.
"""
from __future__ import annotations

from django.contrib.auth.models import Group

from chat.services import in_thread
from knowledge.models import Role
from knowledge.services.kbs import membership_set
from tests.helpers import api_token

ORIGIN = (b"origin", b"http://testserver")

DOCS = {
    "pro.md": (
        "# 知库专业版\n\n"
        "## 功能\n\n"
        "知库专业版支持多知识库检索、混合检索和命中测试。专业版还提供审计日志与单点登录。\n\n"
        "## 价格\n\n"
        "知库专业版的价格为每年 9800 元，包含 20 个用户席位。超出的席位每个每年 300 元。\n"
    ),
    "install.md": (
        "# 安装指南\n\n"
        "## 系统要求\n\n"
        "需要 Python 3.11 和 PostgreSQL 16，内存至少 4 GB。\n\n"
        "## 安装步骤\n\n"
        "运行 make run 即可启动。首次启动会创建管理员账户，密码保存在 var/admin-password.txt。\n"
    ),
}


HOST = (b"host", b"testserver")


async def connect(path: str = "/ws/chat/", *, headers=(ORIGIN,)):
    """A connected ``WebsocketCommunicator`` on the real ASGI application (origin check and auth included).

    The handshake names its ``Host`` (testserver) as a browser's does, unless ``headers`` name one:
    the origin check compares the Origin with it.
    """
    from channels.testing import WebsocketCommunicator

    from config.asgi import application

    headers = list(headers)
    if not any(name == b"host" for name, _ in headers):
        headers.insert(0, HOST)
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect(timeout=10)
    return communicator, connected


async def receive_until_end(communicator, *, timeout: float = 15) -> list[dict]:
    """Events up to and including ``finish`` or ``error``."""
    events = []
    while True:
        event = await communicator.receive_json_from(timeout=timeout)
        events.append(event)
        if event["type"] in ("finish", "error"):
            return events


async def session_cookie(user) -> bytes:
    from django.test import Client

    def login():
        client = Client()
        client.force_login(user)
        return client.cookies["sessionid"].value

    return f"sessionid={await in_thread(login)()}".encode()


# The HR KB of the saved-conversation tests (the ``hr_kb`` fixture, tests/chat/conftest.py).
HANDBOOK = "# 员工手册\n\n## 年假\n\n入职满一年的员工每年享有十天带薪年假，可分次休完。\n"
SALARY = "# 薪资制度\n\n## 年终奖\n\n年终奖为三点五倍月薪，按全年绩效考核结果在次年一月发放。\n"
SECRET = "三点五倍月薪"  # in the restricted document only
LEAVE = "十天带薪年假"  # in the unrestricted one


def hr_member(user, kb):
    user.groups.add(Group.objects.get(name="hr"))
    membership_set(kb=kb, role=Role.VIEWER, user=user)
    return api_token(user)
