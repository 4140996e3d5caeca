"""Each kind's own translations (sources/locale/zh_Hans/LC_MESSAGES/<kind>.po.part) join the app's catalogue."""
from __future__ import annotations

import gettext
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import compile_messages  # noqa: E402 - importable only once scripts/ is on sys.path (the line above)

sys.path.pop(0)

HEADER = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n"Plural-Forms: nplurals=1; plural=0;\\n"\n\n'


def test_parts_are_merged_into_the_catalogue_and_the_po_wins(tmp_path):
    folder = tmp_path / "zh_Hans" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    po = folder / "django.po"
    po.write_text(HEADER + 'msgid "Sources"\nmsgstr "数据源"\n\nmsgid "Shared"\nmsgstr "主目录的"\n', encoding="utf-8")
    (folder / "web.po.part").write_text('msgid "Crawl depth"\nmsgstr "抓取深度"\n\nmsgid "Shared"\nmsgstr "片段的"\n',
                                        encoding="utf-8")
    (folder / "git.po.part").write_text('#, python-format\nmsgid "Branch %(name)s not found."\nmsgstr "找不到分支 %(name)s。"\n',
                                        encoding="utf-8")
    assert compile_messages.compile_all(locale_dir=tmp_path, quiet=True) == [po.with_suffix(".mo")]
    with po.with_suffix(".mo").open("rb") as handle:
        catalog = gettext.GNUTranslations(handle)
    assert catalog.gettext("Crawl depth") == "抓取深度"
    assert catalog.gettext("Branch %(name)s not found.") == "找不到分支 %(name)s。"
    assert catalog.gettext("Sources") == "数据源" and catalog.gettext("Shared") == "主目录的"
    assert not compile_messages.stale(po)
    part = folder / "web.po.part"
    part.write_text(part.read_text(encoding="utf-8") + '\nmsgid "Pages"\nmsgstr "页面"\n', encoding="utf-8")
    stamp = po.with_suffix(".mo").stat().st_mtime + 5
    os.utime(part, (stamp, stamp))
    assert compile_messages.stale(po)  # a changed part makes the catalogue stale

