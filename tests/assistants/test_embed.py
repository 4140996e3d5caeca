"""The embedded chat (assistants/embed.py) through Django's test clients: the bubble script, the frame's
frame-ancestors and its exact origin check, the stream's Origin and ticket checks, per-visitor conversations."""
from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient, Client
from visitor_helpers import QUESTION, keys_of, post_stream

from assistants import ratelimit, visitors
from assistants.services import assistant_create, assistant_update
from assistants.visitors import ticket_issue
from chat.models import Channel, Conversation
from chat.services import in_thread

pytestmark = pytest.mark.django_db(transaction=True)

LISTED = "https://a.example.com"
NOT_LISTED = ["https://a.example.com.evil.net", "http://a.example.com", "https://a.example.com:8443",
              "https://b.a.example.com", "https://example.com"]


@pytest.fixture(autouse=True)
async def _fresh_windows_and_closed_connections():
    ratelimit.reset_local()
    yield
    await sync_to_async(connections.close_all)()  # the async client's sync-view thread (see test_share.py)


@pytest.fixture
def embeddable(assistant, alice):
    assistant_update(assistant=assistant, user=alice, allowed_origins=[LISTED, "http://localhost:8000"],
                     opening_message="有什么可以帮您？")
    return assistant


def page_config(response) -> dict:
    html = response.content.decode()
    return json.loads(html.split('<script id="vc-config" type="application/json">', 1)[1].split("</script>", 1)[0])


def frame_page(assistant, referer: str | None = None, origin: str | None = None):
    headers = {"Referer": referer} if referer else {}
    query = {"origin": origin} if origin else {}
    return Client().get(f"/embed/{assistant.pk}/chat/", query, headers=headers)


def test_the_script_opens_the_frame_of_an_embeddable_assistant_only(embeddable, alice, docs_kb):
    response = Client().get(f"/embed/{embeddable.pk}.js")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/javascript")
    body = response.content.decode()
    assert f'"chat": "http://testserver/embed/{embeddable.pk}/chat/"' in body and "iframe" in body
    assert "产品助手" not in body  # the script names nothing of the assistant
    plain = assistant_create(owner=alice, name="内部助手", kb_ids=[docs_kb.pk])
    assert Client().get(f"/embed/{plain.pk}.js").status_code == 404  # no listed origin: not embeddable
    assert Client().get("/embed/999999.js").status_code == 404
    assert Client().get(f"/embed/{plain.pk}/chat/", headers={"Referer": LISTED + "/"}).status_code == 404


def test_the_frame_may_be_framed_only_by_the_listed_origins(embeddable, docs_kb):
    response = frame_page(embeddable, referer=LISTED + "/help/faq.html")
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "frame-ancestors http://localhost:8000 https://a.example.com" in csp
    assert "'none'" not in csp.split("frame-ancestors")[1].split(";")[0]
    assert "X-Frame-Options" not in response
    config = page_config(response)
    assert config["embedded"] and config["ticket"] and config["base"] == f"/embed/{embeddable.pk}/"
    assert config["storageKey"] == f"zhiku-embed:{embeddable.pk}:{LISTED}" and config["opening"] == "有什么可以帮您？"
    # Without a Referer (a page whose referrer policy sends none), the bubble's origin parameter.
    assert frame_page(embeddable, origin=LISTED).status_code == 200


@pytest.mark.parametrize("origin", NOT_LISTED)
def test_a_page_of_another_origin_gets_no_chat(embeddable, docs_kb, origin):
    for response in (frame_page(embeddable, referer=origin + "/page"), frame_page(embeddable, origin=origin)):
        assert response.status_code == 403
        html = response.content.decode()
        assert "不允许嵌入此应用" in html and "vc-config" not in html
        # The refusal may be framed anywhere, so the unlisted site's bubble shows why (not a blocked frame).
        assert "frame-ancestors *" in response["Content-Security-Policy"]
    # A Referer wins over a claimed origin: the browser sets it, a script does not.
    assert frame_page(embeddable, referer=origin + "/page", origin=LISTED).status_code == 403


async def ask(assistant, ticket: str | None, *, origin: str = "http://testserver", conversation=None, question=QUESTION):
    headers = {"Origin": origin}
    if ticket is not None:
        headers["X-Zhiku-Ticket"] = ticket
    return await post_stream(AsyncClient(), f"/embed/{assistant.pk}/chat/stream/",
                             {"question": question, "conversation": conversation}, headers=headers)


async def test_the_frame_asks_with_its_ticket_and_gets_a_cited_answer(embeddable, docs_kb):
    ticket = page_config(await in_thread(frame_page)(embeddable, referer=LISTED + "/"))["ticket"]
    response, events = await ask(embeddable, ticket)
    assert response.status_code == 200
    finish = events[-1][1]
    assert events[-1][0] == "finish" and "9800" in finish["answer"] and finish["citations"][0]["title"] == "知库专业版"
    assert not keys_of([data for _, data in events]) & {"chunk_id", "kb_id", "scores", "document", "timings"}
    conversation = await in_thread(Conversation.objects.get)(pk=finish["conversation"])
    assert conversation.channel == Channel.EMBED and conversation.visitor.startswith("v-")


@pytest.mark.parametrize("origin", NOT_LISTED)
async def test_the_stream_refuses_a_page_of_an_origin_not_listed(embeddable, docs_kb, origin):
    ticket = await in_thread(ticket_issue)(assistant_id=embeddable.pk, visitor=visitors.visitor_new(), origin=LISTED)
    response, body = await ask(embeddable, ticket, origin=origin)
    assert response.status_code == 403 and body["error"]["code"] == "origin_not_allowed"
    # A ticket made out to that origin is refused as well.
    forged = await in_thread(ticket_issue)(assistant_id=embeddable.pk, visitor=visitors.visitor_new(), origin=origin)
    response, body = await ask(embeddable, forged)
    assert response.status_code == 403 and body["error"]["code"] == "origin_not_allowed"
    assert await in_thread(Conversation.objects.count)() == 0


async def test_the_stream_needs_a_ticket_the_server_signed_for_this_assistant(embeddable, alice, docs_kb):
    good = page_config(await in_thread(frame_page)(embeddable, referer=LISTED + "/"))["ticket"]
    other = await in_thread(assistant_create)(owner=alice, name="另一个", kb_ids=[docs_kb.pk], allowed_origins=[LISTED])
    not_ours = await in_thread(ticket_issue)(assistant_id=other.pk, visitor=visitors.visitor_new(), origin=LISTED)
    for ticket in (None, "", good[:-2] + "xx", not_ours):
        response, body = await ask(embeddable, ticket)
        assert response.status_code == 403 and body["error"]["code"] == "embed_ticket_invalid"
    assert await in_thread(Conversation.objects.count)() == 0


async def test_an_origin_the_owner_removes_stops_working_at_once(embeddable, alice, docs_kb):
    ticket = page_config(await in_thread(frame_page)(embeddable, referer=LISTED + "/"))["ticket"]
    await in_thread(assistant_update)(assistant=embeddable, user=alice, allowed_origins=["http://localhost:8000"])
    response, body = await ask(embeddable, ticket)
    assert response.status_code == 403 and body["error"]["code"] == "origin_not_allowed"
    await in_thread(assistant_update)(assistant=embeddable, user=alice, allowed_origins=[])
    response, body = await ask(embeddable, ticket)
    assert response.status_code == 404 and body["error"]["code"] == "assistant_not_found"


async def test_embed_visitors_keep_to_their_own_conversations(embeddable, docs_kb):
    first = page_config(await in_thread(frame_page)(embeddable, referer=LISTED + "/"))["ticket"]
    second = page_config(await in_thread(frame_page)(embeddable, referer=LISTED + "/"))["ticket"]
    _, events = await ask(embeddable, first)
    mine = events[0][1]["conversation"]
    client = AsyncClient()
    listed = await client.get(f"/embed/{embeddable.pk}/conversations/", headers={"X-Zhiku-Ticket": first})
    assert [c["id"] for c in listed.json()["results"]] == [mine]
    theirs = await client.get(f"/embed/{embeddable.pk}/conversations/", headers={"X-Zhiku-Ticket": second})
    assert theirs.json()["results"] == []
    refused = await client.get(f"/embed/{embeddable.pk}/conversations/{mine}/", headers={"X-Zhiku-Ticket": second})
    assert refused.status_code == 404
    response, body = await ask(embeddable, second, conversation=mine, question="那安装呢？")
    assert response.status_code == 404 and body["error"]["code"] == "conversation_not_found"
    rated = await client.post(f"/embed/{embeddable.pk}/feedback/", {"message": events[-1][1]["message"], "rating": "up"},
                              content_type="application/json", headers={"X-Zhiku-Ticket": first, "Origin": "http://testserver"})
    assert rated.status_code == 200


@pytest.mark.parametrize("sent", ["null", "file://", "junk"])
def test_an_opaque_origin_is_refused_like_an_unlisted_one(embeddable, docs_kb, sent):
    ticket = page_config(frame_page(embeddable, referer=LISTED + "/"))["ticket"]
    client = Client()
    fine = client.get(f"/embed/{embeddable.pk}/conversations/", headers={"X-Zhiku-Ticket": ticket, "Origin": LISTED})
    assert fine.status_code == 200
    # A sandboxed frame or a file: page sends "Origin: null": an origin, and not a listed one.
    refused = client.get(f"/embed/{embeddable.pk}/conversations/", headers={"X-Zhiku-Ticket": ticket, "Origin": sent})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "origin_not_allowed"
