"""Share links (assistants/share.py) through Django's test clients and the real URL routes: public and members-only,
turned off and rotated, per-visitor conversations, CSRF, throttling per visitor and per address, nothing but
the assistant's answer shown."""
from __future__ import annotations

import json
import uuid

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient, Client
from visitor_helpers import QUESTION, keys_of, post_stream

from assistants import ratelimit, visitors
from assistants.services import assistant_update, share_token_rotate
from chat.models import Channel, Conversation, Feedback
from chat.services import in_thread
from knowledge.models import Document
from tests.helpers import redis_available

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_URL = "redis://127.0.0.1:6379/15"
HIDDEN_KEYS = {"chunk_id", "kb_id", "scores", "id", "document", "relevance", "timings", "query"}


@pytest.fixture(autouse=True)
async def _fresh_windows_and_closed_connections():
    ratelimit.reset_local()
    yield
    # The async client runs sync views on asgiref's thread-sensitive thread and, as Django's test clients do,
    # leaves that thread's connection open: closed here, so the test database can be dropped.
    await sync_to_async(connections.close_all)()


@pytest.fixture
def shared(assistant, alice):
    assistant_update(assistant=assistant, user=alice, share_access="public", opening_message="您好，我是产品助手。",
                     suggested_questions=["专业版多少钱？", "怎么安装？"])
    return assistant


def page_config(html: str) -> dict:
    return json.loads(html.split('<script id="vc-config" type="application/json">', 1)[1].split("</script>", 1)[0])


def url(assistant, rest: str = "") -> str:
    return f"/s/{assistant.share_token}/{rest}"


async def page(client, assistant):
    return await client.get(url(assistant))


async def csrf_client() -> AsyncClient:
    return AsyncClient(enforce_csrf_checks=True)


async def ask(client, assistant, question=QUESTION, conversation=None):
    token = client.cookies["csrftoken"].value
    return await post_stream(client, url(assistant, "chat/stream/"), {"question": question, "conversation": conversation},
                             headers={"X-CSRFToken": token})


async def test_a_public_link_opens_the_chat_and_streams_a_cited_answer_that_names_no_ids(shared, docs_kb):
    client = await csrf_client()
    response = await page(client, shared)
    assert response.status_code == 200
    html = response.content.decode()
    config = page_config(html)
    assert "<title>产品助手</title>" in html and config["opening"] == "您好，我是产品助手。"
    assert config["suggested"] == ["专业版多少钱？", "怎么安装？"] and config["base"] == url(shared)
    assert "/api/" not in html and "kb_id" not in html and "/chat/" not in html.replace("chat/stream", "")
    cookie = client.cookies["zhiku_visitor"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and cookie["path"] == "/s/"

    await in_thread(Document.objects.filter(kb=docs_kb).update)(source_url="https://docs.example.com/pro")
    response, events = await ask(client, shared)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/event-stream")
    names = [name for name, _ in events]
    assert names[0] == "start" and names[1] == "sources" and names[-1] == "finish" and "rewrite" not in names
    finish = events[-1][1]
    assert "9800" in finish["answer"] and finish["verdict"] == "answered"
    assert finish["citations"] and finish["citations"][0]["title"] == "知库专业版"
    assert finish["citations"][0]["url"] == "https://docs.example.com/pro"    # the page it came from, a link
    sources = events[1][1]["sources"]
    assert "9800" in "".join(s["content"] for s in sources)
    assert not keys_of([data for _, data in events]) & HIDDEN_KEYS
    conversation = await in_thread(Conversation.objects.get)(pk=finish["conversation"])
    assert conversation.channel == Channel.SHARE and conversation.visitor.startswith("v-")
    assert conversation.assistant_id == shared.pk


async def test_each_visitor_sees_and_continues_only_their_own_conversations(shared, docs_kb):
    first, second = await csrf_client(), await csrf_client()
    await page(first, shared)
    await page(second, shared)
    _, events = await ask(first, shared)
    mine = events[0][1]["conversation"]

    listed = (await first.get(url(shared, "conversations/"))).json()["results"]
    assert [c["id"] for c in listed] == [mine]
    opened = (await first.get(url(shared, f"conversations/{mine}/"))).json()
    assert [m["role"] for m in opened["messages"]] == ["user", "assistant"]
    assert "9800" in opened["messages"][1]["content"] and not keys_of(opened["messages"][1]["sources"]) & HIDDEN_KEYS

    assert (await second.get(url(shared, "conversations/"))).json()["results"] == []
    refused = await second.get(url(shared, f"conversations/{mine}/"))
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "conversation_not_found"
    response, body = await ask(second, shared, "那安装呢？", conversation=mine)
    assert response.status_code == 404 and body["error"]["code"] == "conversation_not_found"

    # The first visitor continues their own.
    response, events = await ask(first, shared, "那安装需要什么？", conversation=mine)
    assert response.status_code == 200 and events[0][1]["conversation"] == mine


async def test_a_visitor_rates_only_their_own_answers(shared, docs_kb):
    first, second = await csrf_client(), await csrf_client()
    await page(first, shared)
    await page(second, shared)
    _, events = await ask(first, shared)
    message = events[-1][1]["message"]
    token = second.cookies["csrftoken"].value
    other = await second.post(url(shared, "feedback/"), {"message": message, "rating": "up"}, content_type="application/json",
                              headers={"X-CSRFToken": token})
    assert other.status_code == 404 and other.json()["error"]["code"] == "message_not_found"
    token = first.cookies["csrftoken"].value
    mine = await first.post(url(shared, "feedback/"), {"message": message, "rating": "down"}, content_type="application/json",
                            headers={"X-CSRFToken": token})
    assert mine.status_code == 200
    assert await in_thread(lambda: list(Feedback.objects.values_list("message_id", "rating")))() == [(message, "down")]


async def test_the_stream_needs_the_pages_csrf_token(shared, docs_kb):
    client = await csrf_client()
    await page(client, shared)
    response, body = await post_stream(client, url(shared, "chat/stream/"), {"question": QUESTION})
    assert response.status_code == 403 and body["error"]["code"] == "permission_denied"
    response, body = await post_stream(client, url(shared, "chat/stream/"), {"question": QUESTION},
                                       headers={"X-CSRFToken": "x" * 32})
    assert response.status_code == 403
    assert await in_thread(Conversation.objects.count)() == 0


def test_a_members_only_link_sends_strangers_to_sign_in_and_gives_members_their_own(assistant, alice, bob, docs_kb):
    assistant_update(assistant=assistant, user=alice, share_access="members")
    anonymous = Client()
    response = anonymous.get(url(assistant))
    assert response.status_code == 302 and response["Location"] == f"/accounts/login/?next=/s/{assistant.share_token}/"
    response = anonymous.post(url(assistant, "chat/stream/"), {"question": QUESTION}, content_type="application/json")
    assert response.status_code == 401 and response.json()["error"]["code"] == "share_members_only"
    assert anonymous.get(url(assistant, "conversations/")).json()["error"]["code"] == "share_members_only"

    member = Client()
    member.force_login(bob)
    response = member.get(url(assistant))
    assert response.status_code == 200 and "产品助手" in response.content.decode()
    assert "zhiku_visitor" not in response.cookies  # a member is known by their account


async def test_a_member_asks_as_themselves(assistant, alice, bob, docs_kb):
    await in_thread(assistant_update)(assistant=assistant, user=alice, share_access="members")
    client = AsyncClient(enforce_csrf_checks=True)
    await in_thread(client.force_login)(bob)
    await page(client, assistant)
    response, events = await ask(client, assistant)
    assert response.status_code == 200 and events[-1][0] == "finish"
    conversation = await in_thread(Conversation.objects.get)()
    assert conversation.visitor == f"user:{bob.pk}" and conversation.user_id == alice.pk  # asked as the owner's assistant


def test_a_link_turned_off_or_rotated_is_gone(shared, alice, docs_kb):
    client = Client()
    old = shared.share_token
    assert client.get(f"/s/{old}/").status_code == 200
    new = share_token_rotate(assistant=shared)
    for path in (f"/s/{old}/", f"/s/{old}/conversations/"):
        response = client.get(path)
        assert response.status_code == 404
    assert client.get(f"/s/{old}/conversations/").json()["error"]["code"] == "share_not_found"
    response = client.post(f"/s/{old}/chat/stream/", {"question": QUESTION}, content_type="application/json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "share_not_found"
    assert client.get(f"/s/{new}/").status_code == 200
    assistant_update(assistant=shared, user=alice, share_access="off")
    response = client.get(f"/s/{new}/")
    assert response.status_code == 404 and "此分享链接不存在或已关闭" in response.content.decode()
    assert client.get("/s/no-such-token/").status_code == 404


@pytest.fixture(params=["redis", "process"])
def counters(request, settings):
    """The throttle's counters in Redis (a prefix of this test's own) or, without Redis, in this process."""
    if request.param == "redis":
        if not redis_available(REDIS_URL):
            pytest.skip("needs Redis at 127.0.0.1:6379 (make test starts one)")
        prefix = f"test-{uuid.uuid4().hex[:12]}"
        settings.REDIS_URL = REDIS_URL
        settings.ZHIKU_REDIS_PREFIX = prefix
        settings.CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL,
                                       "KEY_PREFIX": prefix}}
    return request.param


async def test_questions_are_throttled_per_visitor_and_per_address(shared, settings, monkeypatch, counters):
    # One moment for the whole test: every request counts in the same one-minute window.
    monkeypatch.setattr(visitors.time, "time", lambda: 1_800_000_000.0)
    settings.ZHIKU_VISITOR_RATE_LIMIT = 2
    settings.ZHIKU_VISITOR_IP_RATE_LIMIT = 3
    first, second = await csrf_client(), await csrf_client()
    await page(first, shared)
    await page(second, shared)
    for _ in range(2):  # an empty question is counted, then refused as invalid, without searching anything
        response, body = await ask(first, shared, question="")
        assert response.status_code == 400
    response, body = await ask(first, shared, question="")
    assert response.status_code == 429 and body["error"]["code"] == "visitor_rate_limited"
    assert int(response["Retry-After"]) >= 1
    # Another visitor from the same address: a budget of its own, but the address has one question left.
    response, body = await ask(second, shared, question="")
    assert response.status_code == 400
    response, body = await ask(second, shared, question="")
    assert response.status_code == 429 and body["error"]["code"] == "visitor_rate_limited"
    assert "3" in body["error"]["message"]


def test_manage_py_publishes_a_share_link_and_the_embed_snippets(assistant, alice, docs_kb):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("assistant_publish", owner="alice", name="产品助手", share="public", origin=["https://a.example.com"],
                 site="https://zhiku.example/", stdout=out)
    first = json.loads(out.getvalue())
    assistant.refresh_from_db()
    assert first["share_url"] == f"https://zhiku.example/s/{assistant.share_token}/"
    assert first["embed_script"] == f'<script src="https://zhiku.example/embed/{assistant.pk}.js" defer></script>'
    assert f'src="https://zhiku.example/embed/{assistant.pk}/chat/"' in first["embed_iframe"]
    assert Client().get(f"/s/{assistant.share_token}/").status_code == 200
    out = StringIO()
    call_command("assistant_publish", owner="alice", name="产品助手", rotate=True, origin=[""], stdout=out)
    second = json.loads(out.getvalue())
    assert second["share_url"] != first["share_url"] and "embed_script" not in second
    assert Client().get(first["share_url"].replace("https://zhiku.example", "")).status_code == 404
    assert Client().get(f"/embed/{assistant.pk}.js").status_code == 404


async def test_a_link_whose_owner_lost_the_kb_answers_nothing_from_it(alice, bob, make_kb, ingest):
    from assistants.services import assistant_create
    from knowledge.models import Membership, Role
    from tests.chat.chat_helpers import DOCS

    def setup():
        kb = make_kb(bob, "鲍勃的产品文档")
        ingest(kb, dict(DOCS))
        Membership.objects.create(kb=kb, user=alice, role=Role.VIEWER)
        made = assistant_create(owner=alice, name="借用", kb_ids=[kb.pk], share_access="public")
        return made, kb

    made, kb = await in_thread(setup)()
    client = await csrf_client()
    await page(client, made)
    response, events = await ask(client, made)
    assert response.status_code == 200 and "9800" in events[-1][1]["answer"]
    await in_thread(lambda: Membership.objects.filter(kb=kb, user=alice).delete())()
    response, body = await ask(client, made)
    assert response.status_code == 403 and body["error"]["code"] == "assistant_unavailable"
