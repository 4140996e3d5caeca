"""Legacy Office, RTF, OpenDocument and WPS files: converted to DOCX/XLSX/PPTX by LibreOffice headless, then parsed
by the parsers of those formats (``knowledge.parsers.docx``, ``tabular``, ``pptx``).

The conversion runs in the parse child (``knowledge.parsers.worker``), so its memory and processor-time budgets
(rlimits, inherited by LibreOffice) hold; its time is capped by the parse's own wall-clock budget
(``ParseOptions.wall_deadline``, or a preview's soft deadline). Each conversion gets a private LibreOffice
profile (``-env:UserInstallation``) in its own temporary folder, so concurrent conversions do not share or lock
one profile, and LibreOffice runs in its own process group: on timeout the whole group is killed (``soffice``
is a shell script that starts ``oosplash``, which starts ``soffice.bin``). The import filter is named
(``--infilter``) so that a damaged file fails instead of being opened as plain text, which LibreOffice does
with files it does not recognise. WPS Office's ``.wps``/``.et``/``.dps`` are the Word/Excel/PowerPoint 97
binary formats under other names, read with the same filters.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from knowledge.parsers.budget import ResourceLimit
from knowledge.parsers.types import ParsedDocument, ParseError, ParseOptions

# doc type -> (LibreOffice import filter, the modern twin it is converted to)
FORMATS: dict[str, tuple[str, str]] = {
    "doc": ("MS Word 97", "docx"),
    "wps": ("MS Word 97", "docx"),
    "rtf": ("Rich Text Format", "docx"),
    "odt": ("writer8", "docx"),
    "xls": ("MS Excel 97", "xlsx"),
    "et": ("MS Excel 97", "xlsx"),
    "ods": ("calc8", "xlsx"),
    "ppt": ("MS PowerPoint 97", "pptx"),
    "dps": ("MS PowerPoint 97", "pptx"),
    "odp": ("impress8", "pptx"),
}
# Export filters: without one LibreOffice picks its default for the target extension, which is the same, but
# naming them keeps a LibreOffice upgrade from silently changing the output format.
_EXPORT = {"docx": "docx:MS Word 2007 XML", "xlsx": "xlsx:Calc MS Excel 2007 XML",
           "pptx": "pptx:Impress MS PowerPoint 2007 XML"}
MAX_SECONDS = 300.0  # one conversion at most this long, whatever the parse's wall-clock budget
_MIN_SECONDS = 5.0  # below this much time left there is no point starting LibreOffice

# Process groups of the conversions running in this process, for the worker's watchdog to kill on its way out.
_running: set[int] = set()
_running_lock = threading.Lock()


def soffice_path() -> str | None:
    """LibreOffice's launcher (``ZHIKU_SOFFICE`` or ``soffice``/``libreoffice`` on the PATH), or None."""
    configured = os.environ.get("ZHIKU_SOFFICE")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("soffice") or shutil.which("libreoffice")


def parse(data: bytes, *, stem: str, options: ParseOptions, doc_type: str) -> ParsedDocument:
    """Convert ``data`` (a ``doc_type`` file, already sniffed by ``base._sniff``) and parse the result."""
    from knowledge.parsers.base import parse_nested

    target = FORMATS[doc_type][1]
    started = time.monotonic()
    converted = convert(data, doc_type, options)
    seconds = time.monotonic() - started
    document = parse_nested(f"{stem}.{target}", converted, options)
    metadata = {**document.metadata, "converted_from": doc_type, "converted_to": target,
                "conversion_seconds": round(seconds, 2)}
    return dataclasses.replace(document, doc_type=doc_type, metadata=metadata)


def convert(data: bytes, doc_type: str, options: ParseOptions) -> bytes:
    """The bytes of the ``doc_type`` file converted to its modern twin by LibreOffice.

    Raises ``ParseError``: ``converter_missing`` (no LibreOffice here), ``conversion_failed`` (LibreOffice could
    not open the file), or ``resource_limit`` (time) when the conversion outlives its time.
    """
    soffice = soffice_path()
    if soffice is None:
        raise ParseError("converter_missing", f"reading .{doc_type} files needs LibreOffice, which is not installed"
                                              " here (scripts/ensure_libreoffice.sh installs it)")
    in_filter, target = FORMATS[doc_type]
    timeout = _time_left(options)
    with tempfile.TemporaryDirectory(prefix="zhiku-lo-") as folder:
        source = Path(folder) / f"source.{doc_type}"
        source.write_bytes(data)
        out = Path(folder) / "out"
        command = [*_program(soffice), "--headless", "--invisible", "--norestore", "--nolockcheck", "--nodefault",
                   "--nologo", f"-env:UserInstallation={Path(folder, 'profile').as_uri()}",
                   f"--infilter={in_filter}", "--convert-to", _EXPORT[target], "--outdir", str(out), str(source)]
        status = _run(command, timeout, folder)
        result = out / f"source.{target}"
        if not result.is_file() or result.stat().st_size == 0:
            raise ParseError("conversion_failed", f"LibreOffice could not open the .{doc_type} file; it may be"
                                                  f" damaged, protected by a password, or of another format (exit"
                                                  f" status {status})")
        if result.stat().st_size > options.max_unzipped_bytes:
            raise ParseError("archive_bomb", f"the converted file is {result.stat().st_size} bytes, over the limit"
                                             f" of {options.max_unzipped_bytes}")
        return result.read_bytes()


def _time_left(options: ParseOptions) -> float:
    deadlines = [d for d in (options.deadline, options.wall_deadline) if d is not None]
    left = min([MAX_SECONDS] + [d - time.monotonic() for d in deadlines])
    if left < _MIN_SECONDS:
        raise ResourceLimit("time", int(max(left, 0)), "no time was left to convert the file with LibreOffice")
    return left


def _program(soffice: str) -> list[str]:
    """The command that starts LibreOffice's office process itself, tied to this process's life.

    ``soffice`` is a shell script that starts ``oosplash``, which starts ``soffice.bin``; a killed parse child
    would leave ``soffice.bin`` running. So ``soffice.bin`` is started directly, under ``setpriv --pdeathsig``
    (util-linux), which has the kernel kill it when the process that started it dies, however it dies.
    """
    office = Path(os.path.realpath(soffice)).with_name("soffice.bin")
    if not office.is_file():
        return [soffice]
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", str(office)] if setpriv else [str(office)]


_RESTART = 81  # soffice.bin's exit status after it created a fresh profile: start it again (oosplash would)


def _run(command: list[str], timeout: float, folder: str) -> int:
    """Run LibreOffice in its own process group (session), killing the whole group when it outlives ``timeout``;
    its exit status (negative: the signal that ended it, e.g. for memory over the parse's budget)."""
    env = {**os.environ, "HOME": folder, "TMPDIR": folder, "SAL_USE_VCLPLUGIN": "svp", "OOO_DISABLE_RECOVERY": "1",
           "SAL_DISABLE_WATCHDOG": "1"}
    deadline = time.monotonic() + timeout
    for _ in range(3):
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, env=env, cwd=folder, start_new_session=True)
        with _running_lock:
            _running.add(process.pid)
        try:
            status = process.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)  # not reaped yet, so the group id is still this one's
            process.wait()
            raise ResourceLimit("time", int(timeout),
                                f"converting the file with LibreOffice took over {timeout:.0f} s") from None
        finally:
            with _running_lock:
                _running.discard(process.pid)
        if status != _RESTART:
            return status
    return status


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_running() -> None:
    """Kill the conversions still running in this process (the parse child's watchdog, before it exits)."""
    with _running_lock:
        groups = list(_running)
    for pgid in groups:
        _kill_group(pgid)
