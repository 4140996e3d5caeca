"""Which file stems are titles worth embedding and indexing (``knowledge.titles``)."""
from __future__ import annotations

import pytest

from knowledge.titles import meaningful_title, text_title


@pytest.mark.parametrize("stem", [
    # cameras, phones, scanners, screenshots
    "IMG_2031", "DSC00042", "PXL_20240301_123456789", "scan_0001", "Screenshot 2024-03-01 at 10.22.33",
    "微信图片_20230101123456", "mmexport1699999999999",
    # default and copied names
    "新建文档(3)", "新建 Microsoft Word 文档", "新建文本文档 (2)", "未命名", "未命名文档 - 副本", "文档1", "副本",
    "untitled", "Document1", "document", "Copy of Book1", "copy",
    # dates, hashes, uuids, numbers
    "2024-03-01", "2024年03月01日", "20240301", "0001", "123-456-789", "12月",
    "d41d8cd98f00", "6f1ed002-ab59-4bd8-a2b2-5a0f8c3e9a7b",
    # short codes mixing letters and digits
    "atec-7-b", "q17", "faq_0042", "SOP-HR-007", "x9k",
    # nothing to go on
    "", "   ", "ab",
])
def test_ids_and_default_names_are_not_titles(stem):
    assert meaningful_title(stem) == ""


@pytest.mark.parametrize(("stem", "title"), [
    ("差旅报销制度", "差旅报销制度"),
    ("产品手册v2", "产品手册v2"),
    ("user-guide", "user-guide"),
    ("Release  Notes", "Release Notes"),
    ("manual-v3", "manual-v3"),
    ("2024年报", "2024年报"),
    ("会议纪要2024-03-01", "会议纪要2024-03-01"),
    ("第1章 总则", "第1章 总则"),
    ("扫描件_劳动合同", "扫描件_劳动合同"),
    ("photo-guidelines", "photo-guidelines"),
    ("员工手册(2)", "员工手册"),
    ("报告 - 副本", "报告"),
    ("README", "README"),
])
def test_meaningful_stems_are_kept(stem, title):
    assert meaningful_title(stem) == title


@pytest.mark.parametrize(("title", "source_name", "expected"), [
    ("atec-7-b", "atec-7-b.md", ""),  # no heading: the parser fell back to the stem
    ("IMG_2031", "uploads/IMG_2031.pdf", ""),
    ("差旅报销制度", "差旅报销制度.md", "差旅报销制度"),
    ("花呗分期说明", "atec-7-b.md", "花呗分期说明"),  # a parsed title is the author's: kept
    ("Untitled", "report.pdf", "Untitled"),  # not the stem, so not second-guessed here
])
def test_text_title_filters_only_the_file_stem_fallback(title, source_name, expected):
    assert text_title(title, source_name) == expected


def test_pathological_names_are_judged_quickly():
    import time

    started = time.perf_counter()
    for stem in ["文档" + " -" * 3000 + "x", "新建" * 2000 + "!", "a1" * 3000, "IMG" + "_1" * 3000 + "x"]:
        meaningful_title(stem)
    assert time.perf_counter() - started < 1.0
