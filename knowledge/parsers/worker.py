"""Parse an uploaded file in a child process that cannot outgrow its budgets.

Every parse of an uploaded file (ingestion and preview, every format, OCR included) runs here:
``parse_bounded`` starts a child from the standard library's ``forkserver`` (started once per process,
with the parsers already imported, so a parse costs a fork, about 10 ms, not an interpreter start;
OCR's engine is loaded in the child, since onnxruntime's threads do not survive a fork), and the
child first limits itself with ``resource.setrlimit``:

- memory: ``RLIMIT_DATA`` (heap and private mappings; not the address space, which onnxruntime and
  the thread stacks reserve by the gigabyte without using it); Python raises ``MemoryError``;
- processor time: ``RLIMIT_CPU`` (the kernel ends the child with SIGXCPU);
- no core files.

The parent enforces the wall-clock budget (it kills the child), stops the child when ``cancelled()``
says so (a preview whose client left), and takes the result as JSON through a pipe, at most a bounded
number of bytes: nothing is unpickled from the child and the parent never holds more than the parsed
text. The budgets only the parser can count (characters, pages, OCR pages, inflated PDF bytes) are
in ``knowledge.parsers.budget``. Any budget exceeded is ``ResourceLimit`` (``resource_limit``) naming
it; the child is killed, so nothing it half-built survives. A LibreOffice conversion
(``knowledge.parsers.legacy``) is the child's own child: it inherits the rlimits, ends before the
wall time (``ParseOptions.wall_deadline``) and dies with the child (``setpriv --pdeathsig``).
"""
from __future__ import annotations

import json
import multiprocessing
import multiprocessing.process as mp_process
import os
import resource
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from knowledge.parsers.base import parse_nested
from knowledge.parsers.budget import BUDGETS, ResourceLimit, limit_characters
from knowledge.parsers.types import Block, ParsedDocument, ParseError, ParseOptions, Usage

MIB = 1024 * 1024
# Modules the forkserver imports once, so that each child starts with them loaded.
_PRELOAD = [
    "knowledge.parsers.worker", "knowledge.parsers.pdf", "knowledge.parsers.tabular", "knowledge.parsers.docx",
    "knowledge.parsers.pptx", "knowledge.parsers.html", "knowledge.parsers.markdown", "knowledge.parsers.eml",
    "knowledge.parsers.jsonl", "knowledge.parsers.text", "knowledge.parsers.image", "knowledge.parsers.legacy",
    "pdfplumber", "pypdfium2", "pptx",
]
# A preview stops starting pages once this share of its time budget is spent, so that it can still
# answer with what it read before the parent's hard limit; the rest is for chunking and the answer.
_PREVIEW_SOFT_SHARE = 0.75
_GRACE_SECONDS = 10  # the child ends itself this long after its wall time, should the parent not have
_ORPHANED = 70  # the child's exit status when it ended itself so
_CONVERT_MARGIN = 3  # a LibreOffice conversion ends this long before the wall time, so the child can still answer


@dataclass(frozen=True)
class Limits:
    """The budgets of one parse (config/settings.py: ZHIKU_PARSE_* and ZHIKU_PREVIEW_*; docs/production.md)."""

    memory_mb: int = 2048
    cpu_seconds: int = 3600
    wall_seconds: float = 1800
    max_chars: int = 5_000_000
    max_pages: int = 2000
    max_ocr_pages: int = 100
    max_inflated_mb: int = 256
    max_unzipped_bytes: int = 200 * MIB
    max_zip_ratio: int = 100  # a ZIP or a PDF stream past 10 MiB unpacks to at most this times its size
    preview: bool = False  # stop at the page, OCR-page, character and time budgets with what was read

    @property
    def max_output_bytes(self) -> int:
        """The most JSON the parent reads back: the text budget in UTF-8 (3 bytes a character) with its
        copies in table rows and FAQ fields, plus room for metadata."""
        return 12 * self.max_chars + 16 * MIB


@dataclass
class BoundedParse:
    """A parse's result: the document, and where a preview stopped (``None`` when it read everything)."""

    document: ParsedDocument
    cut_short: dict | None


class ParseCancelled(Exception):
    """``cancelled()`` said stop (the client went away); the child was killed."""


def parse_bounded(filename: str, path: str, limits: Limits, *, on_page: Callable[[int, int], None] | None = None,
                  cancelled: Callable[[], bool] | None = None, poll_seconds: float = 0.1) -> BoundedParse:
    """Parse the file at ``path`` as ``filename`` says, in a child process within ``limits``.

    Raises ``ParseError`` (``resource_limit`` naming the budget, or the parser's own code) or
    ``ParseCancelled``. ``on_page(done, total)`` is called here, in the calling thread, as the child
    reads pages by OCR; an exception from it stops the child and propagates.
    """
    context = _context()
    reader, writer = context.Pipe(duplex=False)
    child = None
    try:
        child = _start_child(context, (filename, path, asdict(limits), writer, os.getpid()))
        writer.close()
        deadline = time.monotonic() + limits.wall_seconds
        while True:
            if cancelled is not None and cancelled():
                raise ParseCancelled()
            left = deadline - time.monotonic()
            if left <= 0:
                raise ResourceLimit("time", limits.wall_seconds, f"reading the file took over {limits.wall_seconds} s")
            if not reader.poll(min(poll_seconds, left)):
                continue
            try:
                raw = reader.recv_bytes(limits.max_output_bytes)
            except EOFError:  # the child ended without answering: killed by the kernel
                break
            except OSError as exc:  # "bad message length": more than the output budget
                raise ResourceLimit("characters", limits.max_chars,
                                    f"the parsed text is over {limits.max_output_bytes} bytes") from exc
            message = json.loads(raw)
            if message["event"] == "page":
                if on_page is not None:
                    on_page(message["done"], message["total"])
                continue
            if message["event"] == "error":
                if message["code"] == "resource_limit" and message.get("budget") in BUDGETS:
                    raise ResourceLimit(message["budget"], message["limit"], message["detail"])
                raise ParseError(message["code"], message["message"])
            return BoundedParse(document=_decode(message["document"]), cut_short=message.get("cut_short"))
        child.join(5)
        raise _death(child.exitcode, limits)
    finally:
        writer.close()
        reader.close()
        if child is not None:  # started: it ends here, whatever happened above
            if child.is_alive():
                child.kill()
            child.join()
            child.close()


def _start_child(context, args: tuple):
    """A started child process running ``_child_main(*args)``, also from a Celery prefork pool child.

    There the current process is billiard's and daemonic: multiprocessing refuses children of a
    daemon (it is killed at its parent's exit without cleaning up) and cannot pickle billiard's
    authentication key. Neither matters here: this child is the forkserver's, not this process's,
    ``parse_bounded`` kills and joins it whatever happens, and it ends at its processor-time budget
    anyway. So it is made and started as from a plain main process.
    """
    current = mp_process.current_process()
    if isinstance(current, mp_process.BaseProcess) and not current.daemon:
        return _started(context, args)
    with _context_lock:
        mp_process._current_process = _PlainMainProcess()  # type: ignore[attr-defined]  # private, not in the stubs
        try:
            return _started(context, args)
        finally:
            mp_process._current_process = current  # type: ignore[attr-defined]  # private, not in the stubs


def _started(context, args: tuple):
    child = context.Process(target=_child_main, args=args, daemon=True, name="zhiku-parse")
    child.start()
    return child


class _PlainMainProcess(mp_process.BaseProcess):
    """What multiprocessing's own main process is (its class is private): no daemon flag, a fresh key."""

    def __init__(self) -> None:
        self._identity = ()
        self._name = "MainProcess"
        self._parent_pid = None
        self._popen = None
        self._closed = False
        authkey = mp_process.AuthenticationString(os.urandom(32))  # type: ignore[attr-defined]  # not in the stubs
        self._config = {"authkey": authkey, "semprefix": "/mp"}


def _death(exitcode: int | None, limits: Limits) -> ParseError:
    """The error for a child that ended without an answer."""
    if exitcode == -signal.SIGXCPU:
        return ResourceLimit("cpu", limits.cpu_seconds, f"reading the file used over {limits.cpu_seconds} s of processor time")
    if exitcode == _ORPHANED:
        return ResourceLimit("time", limits.wall_seconds, f"reading the file took over {limits.wall_seconds} s")
    if exitcode == -signal.SIGKILL:  # not ours (we had not killed it yet): the kernel's out-of-memory killer
        return ResourceLimit("memory", limits.memory_mb, "the parsing process was killed for its memory use")
    return ParseError("corrupt_file", f"the file could not be read: the parsing process stopped (exit code {exitcode})")


# --- the child --------------------------------------------------------------------------------------


def _child_main(filename: str, path: str, limits: dict, conn, requester: int) -> None:
    """Entry point of the child: limit itself, parse, send one JSON message, exit."""
    limit = Limits(**limits)
    started = time.monotonic()
    usage = Usage()
    threading.Thread(target=_watchdog, args=(requester, started + limit.wall_seconds + _GRACE_SECONDS),
                     daemon=True).start()
    try:
        _limit_resources(limit)
        with open(path, "rb") as handle:
            data = handle.read()
        options = ParseOptions(
            max_unzipped_bytes=limit.max_unzipped_bytes, max_zip_ratio=limit.max_zip_ratio, max_chars=limit.max_chars,
            max_pages=limit.max_pages, max_ocr_pages=limit.max_ocr_pages, max_inflated_bytes=limit.max_inflated_mb * MIB,
            preview=limit.preview,
            deadline=started + _PREVIEW_SOFT_SHARE * limit.wall_seconds if limit.preview else None, usage=usage,
            wall_deadline=started + limit.wall_seconds - _CONVERT_MARGIN,
            on_page=lambda done, total: _send(conn, {"event": "page", "done": done, "total": total}),
        )
        try:
            document = limit_characters(parse_nested(filename, data, options), options)
        except ParseError as exc:
            if exc.code == "empty_file" and usage.cut_short is not None:  # a preview that stopped before any text
                raise _over(usage.cut_short, limit) from exc
            raise
        del data
        cut = usage.cut_short
        if cut is not None and cut["budget"] == "time":
            cut["limit"] = round(_PREVIEW_SOFT_SHARE * limit.wall_seconds)
        message = {"event": "result", "document": _encode(document), "cut_short": cut}
        payload = json.dumps(message, ensure_ascii=False, default=str).encode()
        del document, message
    except MemoryError:
        payload = _error(ResourceLimit("memory", limit.memory_mb, f"reading the file needed over {limit.memory_mb} MiB"))
    except ParseError as exc:
        payload = _error(exc)
    except BaseException as exc:  # noqa: BLE001 - the parent must get an answer, never a traceback
        payload = _error(ParseError("corrupt_file", f"the file could not be read ({type(exc).__name__}: {exc})"))
    try:
        conn.send_bytes(payload)
    finally:
        conn.close()


def _watchdog(requester: int, give_up: float) -> None:
    """End the child when the process that asked for the parse is gone, or its time is long past: nobody
    would read the answer, and that process's wall-time kill cannot come any more. (The child's parent
    is the forkserver, which outlives the requester while children hold it open.)"""
    from knowledge.parsers.legacy import kill_running

    while True:
        time.sleep(0.5)
        try:
            os.kill(requester, 0)
            gone = False
        except (ProcessLookupError, PermissionError):  # PermissionError: the pid is another user's process now
            gone = True
        if gone or time.monotonic() > give_up:
            kill_running()  # LibreOffice conversions (they would also die with this process: legacy._program)
            os._exit(_ORPHANED)


def _over(cut: dict, limit: Limits) -> ResourceLimit:
    if cut["budget"] == "time":
        return ResourceLimit("time", limit.wall_seconds, "the preview ran out of time before any text was read")
    return ResourceLimit(cut["budget"], cut["limit"], "the preview's budget ended before any text was read")


def _limit_resources(limit: Limits) -> None:
    memory = limit.memory_mb * MIB
    resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (limit.cpu_seconds, limit.cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _send(conn, message: dict) -> None:
    conn.send_bytes(json.dumps(message).encode())


def _error(exc: ParseError) -> bytes:
    message: dict[str, object] = {"event": "error", "code": exc.code, "message": exc.message}
    if isinstance(exc, ResourceLimit):
        message.update(budget=exc.budget, limit=exc.limit, detail=exc.detail)
    return json.dumps(message, ensure_ascii=False).encode()


# --- the result as JSON ------------------------------------------------------------------------------


def _encode(document: ParsedDocument) -> dict:
    return {
        "title": document.title, "doc_type": document.doc_type, "metadata": document.metadata,
        "blocks": [{"kind": b.kind, "text": b.text, "level": b.level, "page": b.page, "rows": b.rows, "meta": b.meta,
                    "page_end": b.page_end} for b in document.blocks],
    }


def _decode(data: dict) -> ParsedDocument:
    blocks = [
        Block(kind=b["kind"], text=b["text"], level=b["level"], page=b["page"], meta=b["meta"] or {},
              rows=tuple(tuple(row) for row in b["rows"]) if b["rows"] is not None else None, page_end=b["page_end"])
        for b in data["blocks"]
    ]
    return ParsedDocument(title=data["title"], doc_type=data["doc_type"], blocks=blocks, metadata=data["metadata"])


# --- the forkserver ----------------------------------------------------------------------------------

_context_lock = threading.Lock()
_started_context = None


def _context():
    """The forkserver context, its preload set once per process."""
    global _started_context
    with _context_lock:
        if _started_context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(_PRELOAD)
            _started_context = context
        return _started_context


def warm_up() -> None:
    """Start the forkserver now (it imports the parsers once, about a second), so the first parse is quick."""
    from multiprocessing import forkserver

    _context()
    forkserver.ensure_running()


