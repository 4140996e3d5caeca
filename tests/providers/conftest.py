"""Model endpoint fixtures: no environment LLM unless a test sets one, staff and non-staff users, the fake LLM at the wire."""
from __future__ import annotations

import pytest

from tests.chat.fake_llm import FakeLLM


@pytest.fixture(autouse=True)
def _no_env_llm(settings):
    settings.ZHIKU_LLM_BASE_URL = ""
    settings.ZHIKU_LLM_MODEL = ""
    settings.ZHIKU_LLM_MODELS = []
    settings.ZHIKU_LLM_API_KEY = ""
    settings.ZHIKU_SECRETS_KEY = ""


@pytest.fixture
def staff(make_user):
    user = make_user("staffer")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user


@pytest.fixture
def fake_llm():
    server = FakeLLM(api_key="sk-right-key-123")
    yield server
    server.close()


@pytest.fixture
def closed_url():
    """A loopback URL nothing listens on."""
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"
