"""Input limits and parse budgets: how large a request, upload, websocket message or parse may be (docs/production.md)."""
from __future__ import annotations

import os

from core.env import env_int

ZHIKU_MAX_UPLOAD_BYTES = env_int("ZHIKU_MAX_UPLOAD_BYTES", 50 * 1024 * 1024)
# JSON request bodies and websocket frames: size in bytes (413 body_too_large) and nesting depth (400 json_too_deep).
ZHIKU_MAX_JSON_BYTES = env_int("ZHIKU_MAX_JSON_BYTES", 1024 * 1024)
ZHIKU_MAX_JSON_DEPTH = env_int("ZHIKU_MAX_JSON_DEPTH", 32)
# The largest websocket message daphne reads (config/ws_frames.py): a larger one is answered with an
# error event, code too_large, and the connection is closed with 1009; its payload is never kept.
ZHIKU_WS_MAX_MESSAGE_BYTES = env_int("ZHIKU_WS_MAX_MESSAGE_BYTES", 1024 * 1024)
# Request line and headers (config/request_limits.py): 414 uri_too_long, 431 headers_too_large.
ZHIKU_MAX_URL_BYTES = env_int("ZHIKU_MAX_URL_BYTES", 8 * 1024)
ZHIKU_MAX_HEADER_BYTES = env_int("ZHIKU_MAX_HEADER_BYTES", 12 * 1024)
ZHIKU_MAX_HEADER_COUNT = env_int("ZHIKU_MAX_HEADER_COUNT", 100)
ZHIKU_MAX_FILES_PER_UPLOAD = env_int("ZHIKU_MAX_FILES_PER_UPLOAD", 20)
ZHIKU_MAX_UNZIPPED_BYTES = env_int("ZHIKU_MAX_UNZIPPED_BYTES", 200 * 1024 * 1024)
# What unpacks to more than this many times its packed size, once past 10 MiB, is a bomb (archive_bomb), refused
# before it is kept: an Office file's ZIP, and each compressed stream of a PDF (knowledge/parsers/inflate.py).
ZHIKU_MAX_UNZIP_RATIO = env_int("ZHIKU_MAX_UNZIP_RATIO", 100)
# Budgets of one parse of an uploaded file (knowledge/parsers/worker.py; docs/production.md, "Budgets for
# uploaded files"). Each parse runs in a child process: memory (MiB of heap), processor and wall seconds;
# then what the parser may extract: characters of text, PDF pages or slides, pages read by OCR, MiB inflated
# from a PDF's compressed streams. Over any of them the document fails with resource_limit, naming it.
ZHIKU_PARSE_MEMORY_MB = env_int("ZHIKU_PARSE_MEMORY_MB", 2048)
ZHIKU_PARSE_CPU_SECONDS = env_int("ZHIKU_PARSE_CPU_SECONDS", 3600)
ZHIKU_PARSE_SECONDS = float(os.environ.get("ZHIKU_PARSE_SECONDS", "1800"))
ZHIKU_PARSE_MAX_CHARS = env_int("ZHIKU_PARSE_MAX_CHARS", 5_000_000)
ZHIKU_PARSE_MAX_PAGES = env_int("ZHIKU_PARSE_MAX_PAGES", 2000)
ZHIKU_PARSE_MAX_OCR_PAGES = env_int("ZHIKU_PARSE_MAX_OCR_PAGES", 100)
ZHIKU_PARSE_MAX_INFLATED_MB = env_int("ZHIKU_PARSE_MAX_INFLATED_MB", 256)
# A chunking preview reads only the start of a file, briefly: it stops at these and says it was cut short.
ZHIKU_PREVIEW_SECONDS = float(os.environ.get("ZHIKU_PREVIEW_SECONDS", "30"))
ZHIKU_PREVIEW_MAX_PAGES = env_int("ZHIKU_PREVIEW_MAX_PAGES", 20)
ZHIKU_PREVIEW_MAX_OCR_PAGES = env_int("ZHIKU_PREVIEW_MAX_OCR_PAGES", 3)
ZHIKU_PREVIEW_MAX_CHARS = env_int("ZHIKU_PREVIEW_MAX_CHARS", 300_000)

__all__ = [name for name in dict(globals()) if name.startswith("ZHIKU_")]
