"""A KB whose answer model is a console endpoint's gets its answer from that endpoint (its URL, its key), through the
real websocket and two OpenAI-compatible servers at the wire; the environment's LLM keeps answering the others."""
from __future__ import annotations

import pytest
from chat_helpers import connect, receive_until_end
from fake_llm import FakeLLM

from chat.services import in_thread
from providers.services import default_model_set, endpoint_create, endpoint_update

pytestmark = [pytest.mark.django_db(transaction=True)]

QUESTION = "知库专业版的价格是多少？"
ENDPOINT_KEY = "sk-endpoint-key-789"


@pytest.fixture
def endpoint_llm():
    server = FakeLLM(api_key=ENDPOINT_KEY, chunks=["专业版每年 9800 元", "[1]。"])
    yield server
    server.close()


@pytest.fixture
def qwen(endpoint_llm):
    return endpoint_create(name="阿里云", kind="qwen", base_url=endpoint_llm.url, api_key=ENDPOINT_KEY,
                           model_names=["qwen-plus", "qwen-max"])


async def ask(kb_id: int, token: str) -> list[dict]:
    communicator, connected = await connect(f"/ws/chat/?token={token}")
    assert connected
    await communicator.send_json_to({"type": "ask", "conversation": None, "kb_ids": [kb_id], "question": QUESTION})
    events = await receive_until_end(communicator)
    await communicator.disconnect()
    return events


async def test_a_kb_choosing_an_endpoints_model_is_answered_by_that_endpoint(chat_kb, alice, alice_token, llm_on,
                                                                              endpoint_llm, qwen, client_for):
    chosen = await in_thread(lambda: client_for(alice).patch(f"/api/kbs/{chat_kb.pk}/", {"answer_model": "qwen-plus"},
                                                             format="json"))()
    assert chosen.status_code == 200 and chosen.json()["answer_model"] == "qwen-plus"
    finish = (await ask(chat_kb.pk, alice_token))[-1]

    assert (finish["mode"], finish["model"]) == ("llm", "qwen-plus") and "9800" in finish["answer"]
    sent = endpoint_llm.stream_requests
    assert len(sent) == 1 and sent[0]["model"] == "qwen-plus"
    assert set(endpoint_llm.authorizations) == {f"Bearer {ENDPOINT_KEY}"}
    assert llm_on.stream_requests == []  # the environment's endpoint was not asked


async def test_env_vars_answer_when_no_endpoint_is_configured(chat_kb, alice_token, llm_on):
    finish = (await ask(chat_kb.pk, alice_token))[-1]
    assert (finish["mode"], finish["model"]) == ("llm", "fake-model")
    assert llm_on.stream_requests[0]["model"] == "fake-model" and "Bearer test-key" in llm_on.authorizations


async def test_the_consoles_default_answers_a_kb_that_names_no_model(chat_kb, alice_token, llm_on, endpoint_llm, qwen):
    await in_thread(default_model_set)(choice="qwen-max")
    finish = (await ask(chat_kb.pk, alice_token))[-1]
    assert finish["model"] == "qwen-max" and endpoint_llm.stream_requests[0]["model"] == "qwen-max"
    assert llm_on.stream_requests == []


async def test_a_kb_whose_endpoint_was_disabled_falls_back_to_the_sites_model(chat_kb, alice_token, llm_on, endpoint_llm, qwen):
    await in_thread(lambda: type(chat_kb).objects.filter(pk=chat_kb.pk).update(answer_model="qwen-plus"))()
    await in_thread(endpoint_update)(endpoint=qwen, enabled=False)
    finish = (await ask(chat_kb.pk, alice_token))[-1]
    assert finish["model"] == "fake-model" and endpoint_llm.requests == []


async def test_an_endpoint_only_site_answers_with_it_and_no_environment(chat_kb, alice_token, endpoint_llm, qwen):
    await in_thread(lambda: type(chat_kb).objects.filter(pk=chat_kb.pk).update(answer_model="qwen-max"))()
    finish = (await ask(chat_kb.pk, alice_token))[-1]
    assert (finish["mode"], finish["model"]) == ("llm", "qwen-max") and len(endpoint_llm.stream_requests) == 1
