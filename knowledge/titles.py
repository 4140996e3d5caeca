"""Which titles belong in the text that is embedded and keyword-indexed.

A parsed title (Markdown H1, DOCX core title or first heading, HTML <title>, PDF
metadata title, e-mail subject) is the author's and is kept. When a parser had
none it falls back to the file stem, and stems are often ids or default names
(``IMG_2031``, ``新建文档(3)``, ``atec-7-b``, ``2024-03-01``): put in front of a
short passage they swamp its meaning for the embedding model and add noise
tokens to BM25. Such stems are dropped; meaningful ones (``差旅报销制度``,
``user-guide``) are kept. ``Document.title`` (for display) still shows the stem.

Metadata titles (PDF document information, DOCX and PPTX core properties, HTML ``<title>``) are often
what the authoring tool put there, not the author: ``(anonymous)``, ``Untitled``, 「Microsoft Word -
文档1.docx」, 「PowerPoint 演示文稿」. ``metadata_title`` judges them by the same rule as file stems, after
taking off the tool's prefix and the file extension, so that the parser falls back to the first heading
or the file name.
"""
from __future__ import annotations

import os
import re

# Names given by cameras, scanners, phones, screenshot tools and chat apps; what follows them is a counter or a time.
_DEVICE = re.compile(
    r"^(?:img|image|dsc|dscn|dscf|dcim|pxl|mvimg|vid|video|photo|pic|picture|screenshot|screen shot|"
    r"scan|scanned|capture|wechat image|wx_camera|mmexport|微信图片|截图|屏幕截图|扫描件?|照片|图片)(?=[\s_\-.()（）\d]|$)",
    re.IGNORECASE,
)
# Default names for a new, unnamed or copied file (each may repeat, with numbers between: 新建文档(3), 文档1, Book1).
_DEFAULT_WORD = (
    r"新建|文本|文档|文件|工作簿|工作表|演示文稿|未命名|无标题|副本|拷贝|microsoft|word|excel|powerpoint|"
    r"untitled|document|doc|file|new|noname|book|sheet|presentation|copy|of|draft|test|temp|tmp|download|attachment|upload|"
    r"anonymous|unknown|title|slide|标题|幻灯片|演示|空白"
)
_DEFAULT = re.compile(rf"^(?:{_DEFAULT_WORD})(?:[\s_\-.]*(?:{_DEFAULT_WORD}|[(（\[]?\d+[)）\]]?))*$", re.IGNORECASE)
# A trailing copy marker ("报告 - 副本", "报告 (2)", "report copy"), removed before the rest is judged.
_COPY_SUFFIX = re.compile(r"(?:\s*[-_]?\s*(?:副本|拷贝|copy)|\s*[(（]\d+[)）])+$", re.IGNORECASE)
_DATE = re.compile(
    r"^\D{0,3}(?:19|20)\d{2}[-_.年/]?[01]?\d[-_.月/]?[0-3]?\d日?"
    r"(?:[-_T\s]?[0-2]?\d[-_.:：时]?[0-5]\d(?:[-_.:：分]?[0-5]\d秒?)?)?\D{0,3}$"
)
_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.IGNORECASE)
_HEX = re.compile(r"^(?=.*\d)(?=.*[a-f])[0-9a-f]{8,}$", re.IGNORECASE)
_SEPARATORS = re.compile(r"[\s_\-.·,，()（）\[\]【】#~+=&]+")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LETTERS = re.compile(r"[A-Za-z]+")


def meaningful_title(stem: str) -> str:
    """``stem`` as a title (whitespace-normalised, copy markers removed), or ``""`` for ids and default names.

    Dropped: camera/scanner/screenshot names (IMG_2031, scan_0001, 微信图片_2023…),
    default names (新建文档(3), 未命名, untitled, document, 文档1, 副本, Copy of Book1),
    dates and timestamps, hashes and UUIDs, stems that are mostly digits, and
    ASCII codes mixing letters and digits without a real word (atec-7-b, q17, SOP-HR-007).
    Kept: Chinese names (差旅报销制度, 产品手册v2, 2024年报) and ASCII words (user-guide, manual-v3).
    """
    title = " ".join(str(stem or "").split())
    core = _COPY_SUFFIX.sub("", title).strip(" -_.") or title
    compact = _SEPARATORS.sub("", core)
    if not compact or _DEFAULT.match(core) or _DEFAULT.match(title):
        return ""
    if _DATE.match(core) or _UUID.match(core) or _HEX.match(compact):
        return ""
    device = _DEVICE.match(core)
    if device and not _has_words(core[device.end():]):
        return ""  # IMG_2031, Screenshot 2024-03-01 at 10.22.33; but 扫描件_劳动合同 keeps its words
    cjk = len(_CJK.findall(compact))
    if cjk >= 2:
        return core  # Chinese words carry meaning, digits or not
    digits = sum(ch.isdigit() for ch in compact)
    if digits * 2 >= len(compact):
        return ""  # mostly digits: 0001, 20240301-3, A12345, 12月
    if cjk:
        return core
    runs = _LETTERS.findall(compact if not digits else core)
    if digits:
        # Letters and digits: a code unless it holds a word of 5+ letters (manual-v3, user-guide-2).
        return core if any(len(run) >= 5 for run in runs) else ""
    return core if len(compact) >= 3 else ""  # letters only: faq, user-guide, README; not "ab"


# What authoring tools put before or after a file name in a metadata title.
_TOOL_PREFIX = re.compile(r"^(?:microsoft\s+(?:office\s+)?(?:word|excel|powerpoint)|wps\s*(?:文字|表格|演示)?|"
                          r"powerpoint|word|excel)\s*[-–—:：]\s*", re.IGNORECASE)
_FILE_EXTENSION = re.compile(r"\.(?:docx?|xlsx?|pptx?|pdf|wps|et|dps|rtf|odt|txt|md|html?)$", re.IGNORECASE)


def metadata_title(title: str | None) -> str:
    """A title from a file's metadata, without the tool's prefix and file extension; ``""`` when it is a placeholder
    (``(anonymous)``, ``Untitled``, 「Microsoft Word - 文档1.docx」, 「PowerPoint 演示文稿」, a date, an id)."""
    title = " ".join(str(title or "").split())
    core = _FILE_EXTENSION.sub("", _TOOL_PREFIX.sub("", title)).strip()
    core = core.strip("()（）[]【】<>《》 ") if re.fullmatch(r"[(（\[【<《].*[)）\]】>》]", core) else core
    return meaningful_title(core)


def _has_words(rest: str) -> bool:
    return bool(_CJK.search(rest)) or any(len(run) >= 4 for run in _LETTERS.findall(rest))


def file_stem(source_name: str) -> str:
    """The stem of an uploaded file's name, as the parsers use it for a missing title."""
    name = re.split(r"[\\/]", source_name)[-1]
    stem, _ = os.path.splitext(name)
    return stem or name


def text_title(title: str, source_name: str) -> str:
    """The title to embed and index for a document: ``title`` unless it is just an id-like file stem."""
    title = " ".join((title or "").split())
    if title and title == " ".join(file_stem(source_name).split()):
        return meaningful_title(title)
    return title
