"""Text bytes to text: BOMs, UTF-16 without a BOM, UTF-8, GB18030 when it reads as Chinese, then detection."""
from __future__ import annotations

import codecs
import re

import charset_normalizer

from knowledge.parsers.types import ParseError

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16 LE: its BOM starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes) -> tuple[str, str]:
    """Decode text bytes and return ``(text, encoding)`` with newlines normalised to ``\\n``.

    Tries, strictly and in order: a BOM, UTF-16 without BOM (only when the NUL pattern says so),
    UTF-8, GB18030 (a superset of GBK and GB2312) when the result reads as common Chinese, then
    charset-normalizer with a confidence floor (see ``_detected``). Detection is not tried first
    because it is unreliable on short Chinese text. A file that none of these decodes confidently
    raises ``ParseError("undecodable_text")`` rather than being stored as mojibake.
    """
    encoding = bom_encoding(data) or bomless_utf16(data)
    if encoding is not None:
        try:
            return _normalise_newlines(data.decode(encoding)), encoding
        except UnicodeDecodeError as exc:
            raise ParseError("undecodable_text", f"the text claims {encoding} but is not valid {encoding}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        if (repaired := _mostly_utf8(data)) is not None:
            return _normalise_newlines(repaired), "utf-8 (invalid bytes replaced)"
    else:
        if _looks_clean(text):
            return _normalise_newlines(text), "utf-8"
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError:
        pass
    else:
        # Almost any byte string decodes as GB18030 (Shift-JIS, Latin-1 ...); accept it only when it reads
        # as ordinary Chinese, i.e. nearly all its characters are GB2312 level-1 hanzi or CJK punctuation.
        if _looks_clean(text) and _common_chinese_share(text) >= _GB_COMMON_FLOOR:
            return _normalise_newlines(text), "gb18030"
    detected = _detected(data)
    if detected is not None:
        return _normalise_newlines(detected[0]), detected[1]
    raise ParseError("undecodable_text", "the text encoding could not be recognised confidently (it is not UTF-8"
                     " or GBK/GB18030, and detection was ambiguous); save the file as UTF-8 and retry")


# Share of non-ASCII characters that must be common Chinese for a BOM-less GB18030 reading to stand.
_GB_COMMON_FLOOR = 0.9
# charset-normalizer: the most "mess" (0..1) a reading may have, and the language coherence (0..1) an
# ambiguous reading needs (one whose rival encodings would decode the bytes to a different text).
_DETECT_MAX_CHAOS = 0.1
_DETECT_MIN_COHERENCE = 0.3


def _common_chinese_table() -> dict[int, None]:
    """A ``str.translate`` table deleting ASCII, GB2312 symbol rows (0xA1-0xA9) and level-1 hanzi (0xB0-0xD7)."""
    table: dict[int, None] = dict.fromkeys(range(128))
    for lead in (*range(0xA1, 0xAA), *range(0xB0, 0xD8)):
        for trail in range(0xA1, 0xFF):
            try:
                table[ord(bytes((lead, trail)).decode("gb2312"))] = None
            except UnicodeDecodeError:
                continue
    for char in "\u3000\ufeff\u00b7\u2014\u2026\u201c\u201d\u2018\u2019":
        table[ord(char)] = None
    return table


_COMMON_CHINESE: dict[int, None] | None = None


def _common_chinese_share(text: str, sample: int = 200_000) -> float:
    global _COMMON_CHINESE
    if _COMMON_CHINESE is None:
        _COMMON_CHINESE = _common_chinese_table()
    head = text[:sample]
    non_ascii = len(head) - len(head.encode("ascii", "ignore"))
    if not non_ascii:
        return 1.0
    uncommon = len(head.translate(_COMMON_CHINESE))
    return 1.0 - uncommon / non_ascii


def _detected(data: bytes) -> tuple[str, str] | None:
    """charset-normalizer's reading when it is confident, else None.

    Confident means: little mess (chaos), a clean text, and either no rival encoding that reads the
    bytes differently (e.g. Shift-JIS Japanese, which only cp932 decodes without mess) or a
    recognised language (coherence) — short accented Latin-1 text, which cp1250/cp1252/cp1257 all
    decode "cleanly" but differently, fails here rather than being stored misread.
    """
    matches = charset_normalizer.from_bytes(data)
    best = matches.best()
    if best is None or not best.encoding or best.chaos > _DETECT_MAX_CHAOS:
        return None
    text = str(best)
    if not _looks_clean(text):
        return None
    rivals = [m for m in matches if m is not best and m.chaos <= _DETECT_MAX_CHAOS and str(m) != text]
    if rivals and best.coherence < _DETECT_MIN_COHERENCE:
        return None
    return text, best.encoding


def bom_encoding(data: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    return None


def bomless_utf16(data: bytes) -> str | None:
    """Recognise BOM-less UTF-16 by NULs falling only on odd (LE) or only on even (BE) offsets."""
    if len(data) < 4 or len(data) % 2 or b"\x00" not in data:
        return None
    even_nuls = data[0::2].count(0)
    odd_nuls = data[1::2].count(0)
    half = len(data) // 2
    if odd_nuls and not even_nuls and odd_nuls >= half // 4:
        return "utf-16-le"
    if even_nuls and not odd_nuls and even_nuls >= half // 4:
        return "utf-16-be"
    return None


# C0/C1 controls other than whitespace and ESC, and private-use code points: wrong guesses produce them.
_UNCLEAN = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f\ue000-\uf8ff\U000f0000-\U0010ffff]")


def _looks_clean(text: str) -> bool:
    return _UNCLEAN.search(text) is None


def _mostly_utf8(data: bytes) -> str | None:
    """UTF-8 with a few bad bytes (a truncated upload, one stray byte) rather than another encoding."""
    text = data.decode("utf-8", "replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    multibyte = len(data.translate(None, bytes(range(128))))  # bytes left once ASCII is deleted
    if 0 < bad * 200 <= multibyte:
        return text
    return None


def _normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")
