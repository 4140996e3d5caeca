"""Helpers of the share-link and embed tests: read an SSE answer through Django's async test client."""
from __future__ import annotations

import json

QUESTION = "知库专业版的价格是多少？"


def frames(body: bytes) -> list[tuple[str, dict]]:
    out = []
    for frame in body.decode().split("\n\n"):
        if frame.strip():
            lines = dict(line.split(": ", 1) for line in frame.split("\n"))
            out.append((lines["event"], json.loads(lines["data"])))
    return out


async def post_stream(client, url: str, body, **headers):
    """(response, frames or the JSON error) of a POST to a visitor's stream."""
    response = await client.post(url, data=json.dumps(body), content_type="application/json", **headers)
    if not response.streaming:
        return response, json.loads(response.content)
    chunks = [chunk async for chunk in response.streaming_content]
    return response, frames(b"".join(chunks))


def keys_of(value) -> set[str]:
    """Every key anywhere in a JSON value."""
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_of(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_of(v)}
    return set()
