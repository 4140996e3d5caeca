"""The chat websocket: auth, origin, permissions, events, LLM failures, cancel (it joins no channel layer:
tests/config/test_redis_outage.py)."""
from __future__ import annotations

import asyncio

import pytest
from chat_helpers import ORIGIN, connect, receive_until_end, session_cookie

from chat.models import Conversation, Message
from chat.services import in_thread

pytestmark = [pytest.mark.django_db(transaction=True)]

QUESTION = "知库专业版的价格是多少？"


def types(events: list[dict]) -> list[str]:
    """Event types with runs of ``token`` collapsed to one."""
    out: list[str] = []
    for e in events:
        if not (e["type"] == "token" and out and out[-1] == "token"):
            out.append(e["type"])
    return out


@in_thread
def answer_row(message_id: int) -> Message:
    return Message.objects.get(pk=message_id)


async def ask(communicator, kb_ids, question=QUESTION, conversation=None) -> list[dict]:
    await communicator.send_json_to({"type": "ask", "conversation": conversation, "kb_ids": kb_ids, "question": question})
    return await receive_until_end(communicator)


# --- authentication and origin -------------------------------------------------------

async def test_token_in_query_string_authenticates_and_streams_every_event(chat_kb, alice_token):
    communicator, connected = await connect(f"/ws/chat/?token={alice_token}")
    assert connected
    events = await ask(communicator, [chat_kb.pk])
    await communicator.disconnect()

    assert types(events) == ["start", "rewrite", "sources", "token", "finish"]
    start, rewrite, sources, finish = events[0], events[1], events[2], events[-1]
    assert rewrite == {"type": "rewrite", "query": QUESTION, "original": QUESTION, "method": "none"}
    assert sources["hit"] is True and sources["sources"]
    first = sources["sources"][0]
    assert first["n"] == 1 and first["document"]["source_name"] == "pro.md"
    assert first["section_path"] == ["知库专业版", "价格"] and "pages" in first and "relevance" in first["scores"]
    assert finish["answer"] == "".join(e["text"] for e in events if e["type"] == "token")
    assert "9800" in finish["answer"] and finish["mode"] == "extractive" and finish["hit"] is True
    assert finish["citations"][0]["chunk_id"] == first["chunk_id"]
    assert 0 <= finish["confidence"] <= 1
    assert {"rewrite_ms", "retrieval_ms", "first_token_ms", "generation_ms", "total_ms"} <= set(finish["timings"])

    row = await answer_row(start["message"])
    assert (row.status, row.content, row.hit, row.answer_mode) == ("complete", finish["answer"], True, "extractive")
    assert row.citations == finish["citations"] and row.sources[0]["chunk_id"] == first["chunk_id"]


async def test_session_cookie_authenticates(chat_kb, alice):
    communicator, connected = await connect(headers=[ORIGIN, (b"cookie", await session_cookie(alice))])
    assert connected
    events = await ask(communicator, [chat_kb.pk])
    await communicator.disconnect()
    assert events[-1]["type"] == "finish"


async def test_wrong_origin_is_rejected(alice_token):
    _, connected = await connect(f"/ws/chat/?token={alice_token}", headers=[(b"origin", b"http://evil.example")])
    assert not connected


@pytest.mark.parametrize("path", ["/ws/chat/", "/ws/chat/?token=not-a-token"])
async def test_without_valid_credentials_the_socket_closes_with_an_error(path):
    communicator, connected = await connect(path)
    assert connected
    assert (await communicator.receive_json_from())["code"] == "not_authenticated"
    assert (await communicator.receive_output())["code"] == 4401


async def test_a_wrong_token_does_not_fall_back_to_the_session(alice):
    communicator, _ = await connect("/ws/chat/?token=wrong", headers=[ORIGIN, (b"cookie", await session_cookie(alice))])
    assert (await communicator.receive_json_from())["code"] == "not_authenticated"


# --- permissions ---------------------------------------------------------------------

async def test_another_users_kb_is_an_error_and_nothing_is_searched(chat_kb, bob_kb, alice_token, monkeypatch):
    searched = []
    monkeypatch.setattr("chat.services.search", lambda asked: searched.append(asked))
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [chat_kb.pk, bob_kb.pk])
    await communicator.disconnect()
    assert [e["type"] for e in events] == ["error"]
    assert events[0]["code"] == "kb_not_found"
    assert searched == []
    assert await in_thread(Message.objects.count)() == 0


async def test_another_users_conversation_is_not_found(chat_kb, alice, bob_token):
    alices = await in_thread(Conversation.objects.create)(user=alice, title="mine", kb_ids=[chat_kb.pk])
    communicator, _ = await connect(f"/ws/chat/?token={bob_token}")
    events = await ask(communicator, [], conversation=alices.pk)
    await communicator.disconnect()
    assert [(e["type"], e["code"]) for e in events] == [("error", "conversation_not_found")]


# --- conversation and follow-ups ---------------------------------------------------------

async def test_follow_up_is_rewritten_from_the_conversation_without_an_llm(chat_kb, alice_token):
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    first = await ask(communicator, [chat_kb.pk], "知库专业版有哪些功能？")
    conversation = first[0]["conversation"]
    second = await ask(communicator, [], "那它的价格呢？", conversation=conversation)
    await communicator.disconnect()

    assert second[0]["conversation"] == conversation
    assert second[1] == {"type": "rewrite", "query": "知库专业版 价格", "original": "那它的价格呢？", "method": "rules"}
    assert second[2]["sources"][0]["section_path"] == ["知库专业版", "价格"]
    assert "9800" in second[-1]["answer"]
    question = await in_thread(Message.objects.get)(pk=second[0]["user_message"])
    assert question.rewritten_query == "知库专业版 价格"


async def test_not_found_streams_the_kb_text_and_calls_no_llm(judged_kb, alice_token, llm_on):
    kb = judged_kb
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [kb.pk], "火星的首都是哪座城市？")
    await communicator.disconnect()

    assert types(events) == ["start", "rewrite", "sources", "token", "finish"]
    assert events[2]["hit"] is False and events[2]["sources"] == []
    finish = events[-1]
    assert finish["answer"] == kb.not_found_text and finish["hit"] is False and finish["not_found_by"] == "retrieval"
    assert finish["mode"] == "not_found" and finish["confidence"] == 0.0 and finish["citations"] == []
    assert events[2]["verdict"] == finish["verdict"] == "not_found"
    assert llm_on.requests == []
    row = await answer_row(events[0]["message"])
    assert (row.hit, row.not_found_by, row.content, row.verdict) == (False, "retrieval", kb.not_found_text, "not_found")


async def test_a_greeting_is_not_found_and_calls_no_llm(judged_kb, alice_token, llm_on):
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [judged_kb.pk], "你好")
    await communicator.disconnect()
    finish = events[-1]
    assert (finish["verdict"], finish["not_found_by"], finish["answer"]) == ("not_found", "retrieval", judged_kb.not_found_text)
    assert llm_on.requests == []


# --- the uncertain verdict -----------------------------------------------------------------

@pytest.mark.usefixtures("judge_only")

async def test_an_uncertain_turn_without_an_llm_says_so_before_the_best_evidence(uncertain_kb, alice_token):
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [uncertain_kb.pk])
    await communicator.disconnect()

    assert events[2]["verdict"] == "uncertain" and events[2]["hit"] is True and events[2]["sources"]
    finish = events[-1]
    assert (finish["verdict"], finish["verdict_by"], finish["hit"], finish["mode"]) == ("uncertain", "retrieval", True, "extractive")
    assert finish["answer"].startswith("没有找到确切答案，以下内容可能相关：\n\n")
    assert "9800" in finish["answer"] and finish["citations"]
    row = await answer_row(events[0]["message"])
    assert (row.verdict, row.hit, row.content) == ("uncertain", True, finish["answer"])


@pytest.mark.usefixtures("judge_only")


async def test_the_uncertain_statement_follows_the_handshakes_language(uncertain_kb, alice_token):
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}", headers=(ORIGIN, (b"accept-language", b"en")))
    events = await ask(communicator, [uncertain_kb.pk])
    await communicator.disconnect()
    assert events[-1]["answer"].startswith("No exact answer was found; the following may be relevant:\n\n")


@pytest.mark.usefixtures("judge_only")


async def test_the_llm_reads_an_uncertain_question_and_its_answer_decides(uncertain_kb, alice_token, llm_on):
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [uncertain_kb.pk])
    await communicator.disconnect()

    sent = llm_on.stream_requests[0]["messages"][-1]["content"]
    assert "相关性不确定" in sent and "[1] 来源：" in sent  # told the evidence is weak, given the sources
    finish = events[-1]
    assert (finish["verdict"], finish["verdict_by"], finish["mode"]) == ("answered", "llm", "llm")
    assert finish["answer"] == "".join(llm_on.chunks) and not finish["answer"].startswith("没有找到")
    row = await answer_row(events[0]["message"])
    assert (row.verdict, row.hit) == ("answered", True)


async def test_the_llm_turning_an_uncertain_question_away_makes_it_not_found(uncertain_kb, alice_token, llm_on):
    llm_on.say("[[NOT_FOUND]]", 3)
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [uncertain_kb.pk], "知库专业版在火星上卖多少钱？")
    await communicator.disconnect()

    finish = events[-1]
    assert (finish["verdict"], finish["verdict_by"], finish["not_found_by"], finish["hit"]) == ("not_found", "llm", "llm", False)
    assert finish["answer"] == uncertain_kb.not_found_text
    row = await answer_row(events[0]["message"])
    assert (row.verdict, row.not_found_by) == ("not_found", "llm")


# --- the LLM path -----------------------------------------------------------------------

async def test_llm_answer_streams_and_its_citations_map_to_chunks(chat_kb, alice_token, llm_on):
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [chat_kb.pk])
    await communicator.disconnect()

    tokens = [e["text"] for e in events if e["type"] == "token"]
    assert tokens == llm_on.chunks
    finish = events[-1]
    assert finish["mode"] == "llm" and finish["answer"] == "".join(llm_on.chunks)
    assert finish["hit"] is True and finish["not_found_by"] is None
    assert finish["citations"][0]["n"] == 1
    assert finish["citations"][0]["chunk_id"] == events[2]["sources"][0]["chunk_id"]
    sent = llm_on.stream_requests[0]["messages"]
    assert sent[0]["role"] == "system" and "知识片段" in sent[-1]["content"] and "[1] 来源：" in sent[-1]["content"]
    assert "[[NOT_FOUND]]" in sent[0]["content"]
    assert "相关性不确定" not in sent[-1]["content"]  # answered evidence is not called uncertain
    assert (finish["verdict"], finish["verdict_by"]) == ("answered", "retrieval")
    row = await answer_row(events[0]["message"])
    assert (row.hit, row.not_found_by, row.answer_mode, row.verdict) == (True, None, "llm", "answered")


@pytest.mark.parametrize("reply, size", [
    ("[[NOT_FOUND]]", 100),                                # the whole marker in one chunk
    ("[[NOT_FOUND]]", 2),                                  # split across chunks
    ("\n  [[NOT_FOUND]]。\n", 3),                          # whitespace and punctuation around it
    ("[[NOT_FOUND]] 片段里只有知库的价格，没有火星的信息。", 4),  # starts with the marker
])
async def test_the_llm_saying_not_found_ends_the_turn_as_not_found(chat_kb, alice_token, llm_on, reply, size):
    llm_on.say(reply, size)
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [chat_kb.pk], "知库专业版在火星上卖多少钱？")
    await communicator.disconnect()

    assert types(events) == ["start", "rewrite", "sources", "token", "finish"]
    assert events[2]["hit"] is True and events[2]["sources"]  # retrieval passed; the LLM judged
    tokens = [e["text"] for e in events if e["type"] == "token"]
    assert "".join(tokens) == chat_kb.not_found_text
    assert not any("NOT" in t or "[[" in t for t in tokens)
    finish = events[-1]
    assert (finish["hit"], finish["not_found_by"], finish["mode"]) == (False, "llm", "not_found")
    assert finish["answer"] == chat_kb.not_found_text
    assert finish["citations"] == [] and finish["confidence"] == 0.0
    row = await answer_row(events[0]["message"])
    assert (row.status, row.hit, row.not_found_by, row.answer_mode) == ("complete", False, "llm", "not_found")
    assert row.content == chat_kb.not_found_text and row.citations == []
    assert row.sources == events[2]["sources"]
    assert len(llm_on.stream_requests) == 1


async def test_a_marker_after_real_text_is_dropped_and_the_answer_stands(chat_kb, alice_token, llm_on):
    llm_on.chunks = ["知库专业版的价格是每年 9800 元", "[", "1]。", "[[NOT_", "FOUND", "]]"]
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [chat_kb.pk])
    await communicator.disconnect()

    tokens = [e["text"] for e in events if e["type"] == "token"]
    answer = "知库专业版的价格是每年 9800 元[1]。"
    assert "".join(tokens) == answer and not any("NOT" in t or "[[" in t for t in tokens)
    finish = events[-1]
    assert (finish["answer"], finish["hit"], finish["not_found_by"], finish["mode"]) == (answer, True, None, "llm")
    assert [c["n"] for c in finish["citations"]] == [1]
    row = await answer_row(events[0]["message"])
    assert (row.content, row.hit, row.not_found_by) == (answer, True, None)


async def test_llm_rewrites_a_follow_up_with_a_short_completion(chat_kb, alice_token, llm_on):
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    first = await ask(communicator, [chat_kb.pk], "知库专业版有哪些功能？")
    second = await ask(communicator, [chat_kb.pk], "那它的价格呢？", conversation=first[0]["conversation"])
    await communicator.disconnect()

    assert second[1]["method"] == "llm" and second[1]["query"] == llm_on.rewrite
    rewrite_request = llm_on.completion_requests[0]
    assert "知库专业版有哪些功能？" in rewrite_request["messages"][-1]["content"]
    assert "那它的价格呢？" in rewrite_request["messages"][-1]["content"]
    # What the turn cost counts the rewrite's completion (the fake reports 1 + 1) beside the answer's stream.
    streamed = llm_on.usage_for(llm_on.stream_requests[-1], len(llm_on.chunks))
    row = await answer_row(second[0]["message"])
    assert row.timings["usage"] == {"prompt_tokens": streamed["prompt_tokens"] + 1,
                                    "completion_tokens": streamed["completion_tokens"] + 1}


async def test_llm_failure_mid_stream_keeps_the_partial_answer(chat_kb, alice_token, llm_on):
    llm_on.break_after = 2
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [chat_kb.pk])
    await communicator.disconnect()

    error = events[-1]
    partial = "".join(llm_on.chunks[:2])
    assert error["type"] == "error" and error["code"] == "llm_failed"
    assert error["status"] == "incomplete" and error["partial"] == partial
    row = await answer_row(events[0]["message"])
    assert (row.status, row.content, row.error_code) == ("incomplete", partial, "llm_failed")
    # Its sources are stored with it: reading it later redacts by them (chat/history.py).
    given = next(e for e in events if e["type"] == "sources")["sources"]
    assert given and row.sources == given


async def test_llm_stall_times_out_as_an_error_event(chat_kb, alice_token, llm_on, settings):
    settings.ZHIKU_LLM_TIMEOUT = "0.5"
    llm_on.stall_after = 1
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    events = await ask(communicator, [chat_kb.pk])
    await communicator.disconnect()
    assert (events[-1]["type"], events[-1]["code"], events[-1]["partial"]) == ("error", "llm_timeout", llm_on.chunks[0])


async def until_tokens(communicator, n: int) -> list[dict]:
    events = []
    while sum(e["type"] == "token" for e in events) < n:
        events.append(await communicator.receive_json_from(timeout=10))
    return events


async def test_cancel_stops_the_llm_stream(chat_kb, alice_token, llm_on):
    llm_on.chunks = [f"字{i}" for i in range(200)]
    llm_on.delay = 0.02
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    await communicator.send_json_to({"type": "ask", "conversation": None, "kb_ids": [chat_kb.pk], "question": QUESTION})
    events = await until_tokens(communicator, 3)
    await communicator.send_json_to({"type": "cancel"})
    rest = await receive_until_end(communicator)
    assert rest[-1]["type"] == "error" and rest[-1]["code"] == "cancelled"
    assert await asyncio.to_thread(llm_on.client_gone.wait, 3)
    assert llm_on.streams[0].sent < 200 and not llm_on.streams[0].finished
    row = await answer_row(events[0]["message"])
    assert row.status == "cancelled" and row.content.startswith("字0字1字2")

    # The socket stays usable after a cancel.
    llm_on.chunks, llm_on.delay = ["好[1]"], 0
    assert (await ask(communicator, [chat_kb.pk]))[-1]["type"] == "finish"
    await communicator.disconnect()


async def test_disconnect_stops_the_llm_stream_and_settles_the_answer(chat_kb, alice_token, llm_on):
    llm_on.chunks = [f"字{i}" for i in range(200)]
    llm_on.delay = 0.02
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    await communicator.send_json_to({"type": "ask", "conversation": None, "kb_ids": [chat_kb.pk], "question": QUESTION})
    events = await until_tokens(communicator, 2)
    await communicator.disconnect()
    assert await asyncio.to_thread(llm_on.client_gone.wait, 3)
    assert (await answer_row(events[0]["message"])).status == "cancelled"


# --- protocol errors ---------------------------------------------------------------------

async def test_a_second_ask_while_streaming_is_refused(chat_kb, alice_token, llm_on):
    llm_on.chunks, llm_on.delay = [f"字{i}" for i in range(50)], 0.02
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    await communicator.send_json_to({"type": "ask", "conversation": None, "kb_ids": [chat_kb.pk], "question": QUESTION})
    await until_tokens(communicator, 1)
    await communicator.send_json_to({"type": "ask", "conversation": None, "kb_ids": [chat_kb.pk], "question": QUESTION})
    events = await receive_until_end(communicator)
    assert events[-1]["code"] == "busy"
    await communicator.disconnect()


@pytest.mark.parametrize("frame, code", [
    ("not json", "invalid_json"),
    ('{"type": "hello"}', "unknown_type"),
    ('{"type": "cancel"}', "nothing_to_cancel"),
    ('{"type": "ask", "kb_ids": [1], "question": "  "}', "empty_question"),
    ('{"type": "ask", "kb_ids": "1", "question": "价格"}', "invalid_kb_ids"),
    ('{"type": "ask", "kb_ids": [], "question": "价格"}', "no_kbs"),
])
async def test_malformed_messages_get_error_codes(alice_token, frame, code):
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    await communicator.send_to(text_data=frame)
    assert (await communicator.receive_json_from(timeout=5))["code"] == code
    await communicator.disconnect()


@pytest.mark.parametrize("frame, code", [
    ("[" * 30_000 + "]" * 30_000, "json_too_deep"),
    ('{"type": "ask", "kb_ids": [1], "question": ' + "[" * 5_000 + "]" * 5_000 + "}", "json_too_deep"),
    ('{"type": "ask", "kb_ids": [1], "question": "价\\u0000格"}', "invalid_characters"),
    ('{"type": "ask", "kb_ids": [1], "question": "价\\ud800格"}', "invalid_characters"),
])
async def test_deep_or_unstorable_frames_get_an_error_and_the_socket_stays_usable(alice_token, frame, code):
    communicator, _ = await connect(f"/ws/chat/?token={alice_token}")
    await communicator.send_to(text_data=frame)
    event = await communicator.receive_json_from(timeout=5)
    assert event["type"] == "error" and event["code"] == code and event["message"]
    # Not closed (no 1011): the next frame is answered.
    await communicator.send_json_to({"type": "cancel"})
    assert (await communicator.receive_json_from(timeout=5))["code"] == "nothing_to_cancel"
    await communicator.disconnect()
