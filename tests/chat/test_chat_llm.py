"""The OpenAI-compatible client against a fake server at the wire: streaming, failures, timeouts, retry, cancel."""
from __future__ import annotations

import asyncio
import time

import pytest

from chat.llm import LLMConfig, LLMError, MarkerGuard, judged_stream, llm_complete, llm_stream

MESSAGES = [{"role": "user", "content": "知库专业版的价格？"}]


def config(fake, timeout: float = 2.0) -> LLMConfig:
    return LLMConfig(base_url=fake.url, model="fake-model", api_key="k", timeout=timeout)


async def collect(gen) -> list[str]:
    return [d async for d in gen]


async def test_streams_every_delta_in_order(fake_llm):
    assert await collect(llm_stream(config(fake_llm), MESSAGES)) == fake_llm.chunks
    body = fake_llm.requests[0]
    assert body["model"] == "fake-model" and body["stream"] is True and body["messages"] == MESSAGES


async def test_connection_closed_mid_stream_raises_after_the_partial_answer(fake_llm):
    fake_llm.break_after = 2
    got = []
    with pytest.raises(LLMError) as exc:
        async for delta in llm_stream(config(fake_llm), MESSAGES):
            got.append(delta)
    assert got == fake_llm.chunks[:2]
    assert exc.value.code == "llm_failed"


async def test_stalled_stream_times_out(fake_llm):
    fake_llm.stall_after = 1
    got, started = [], time.perf_counter()
    with pytest.raises(LLMError) as exc:
        async for delta in llm_stream(config(fake_llm, timeout=0.5), MESSAGES):
            got.append(delta)
    assert exc.value.code == "llm_timeout"
    assert got == fake_llm.chunks[:1]
    assert time.perf_counter() - started < 5


async def test_a_request_that_never_answers_is_retried_once_then_times_out(fake_llm):
    fake_llm.stall_headers = True
    with pytest.raises(LLMError) as exc:
        await collect(llm_stream(config(fake_llm, timeout=0.4), MESSAGES))
    assert exc.value.code == "llm_timeout"
    assert len(fake_llm.stream_requests) == 2


async def test_server_error_is_retried_once_then_fails(fake_llm):
    fake_llm.status = 500
    with pytest.raises(LLMError) as exc:
        await collect(llm_stream(config(fake_llm), MESSAGES))
    assert exc.value.code == "llm_failed" and "500" in exc.value.message
    assert len(fake_llm.requests) == 2


async def test_closing_the_generator_closes_the_connection(fake_llm):
    fake_llm.chunks = [f"字{i}" for i in range(100)]
    fake_llm.delay = 0.02
    gen = llm_stream(config(fake_llm), MESSAGES)
    got = [await gen.__anext__(), await gen.__anext__()]
    await gen.aclose()
    assert got == ["字0", "字1"]
    assert await asyncio.to_thread(fake_llm.client_gone.wait, 3)
    assert fake_llm.streams[0].sent < 100 and not fake_llm.streams[0].finished


async def test_short_completion_returns_the_text(fake_llm):
    assert await llm_complete(config(fake_llm), MESSAGES) == fake_llm.rewrite
    assert fake_llm.requests[0]["stream"] is False


async def _deltas(chunks):
    for chunk in chunks:
        yield chunk


@pytest.mark.parametrize("reply, streamed, not_found", [
    ("[[NOT_FOUND]]", "没找到。", True),
    ("**[[NOT_FOUND]]**。", "没找到。", True),
    ("[[NOT_FOUND]]：片段只讲价格。", "没找到。", True),
    ("[[NOT_FOU", "没找到。", True),  # cut off inside the marker: still no answer
    ("价格是 9800 元[1]。", "价格是 9800 元[1]。", False),
    ("价格是 9800 元[1]。[[NOT_FOUND]]", "价格是 9800 元[1]。", False),
    ("[1] 价格 [[N", "[1] 价格 [[N", False),  # a marker's beginning at the end is released
])
async def test_the_marker_is_caught_at_every_split_point(reply, streamed, not_found):
    for cut in range(1, len(reply)):
        for chunks in ([reply[:cut], reply[cut:]], list(reply)):
            guard = MarkerGuard()
            out = [t async for t in judged_stream(_deltas(chunks), guard, "没找到。")]
            assert ("".join(out), guard.not_found) == (streamed, not_found), chunks
