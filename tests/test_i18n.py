"""Chinese by default, English on request: pages, the language switch, the JavaScript catalogue, the message compiler."""
from __future__ import annotations

import gettext
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import compile_messages  # noqa: E402

sys.path.pop(0)


@pytest.mark.django_db
def test_login_page_is_chinese_by_default(client):
    html = client.get("/accounts/login/").content.decode()
    assert '<html lang="zh-CN">' in html
    assert "<h1>登录</h1>" in html and "用户名" in html and "密码" in html
    assert "Username" not in html and "Password" not in html
    # The switch offers the other language.
    assert 'name="language" value="en"' in html and ">English</button>" in html


@pytest.mark.django_db
def test_login_page_follows_accept_language(client):
    html = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9").content.decode()
    assert '<html lang="en">' in html
    assert "<h1>Sign in</h1>" in html and "Username" in html and "Password" in html
    assert "用户名" not in html
    assert 'value="zh-hans"' in html and ">简体中文</button>" in html
    # A wrong password, answered in English.
    html = client.post("/accounts/login/", {"username": "nobody", "password": "x"}, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Wrong username or password." in html


@pytest.mark.django_db
def test_home_page_in_both_languages(client):
    assert "知识库" in client.get("/").content.decode()
    english = client.get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Knowledge bases" in english and "API docs" in english and "接口文档" not in english


@pytest.mark.django_db
def test_language_switch_sets_the_language_over_the_browser(client):
    response = client.post("/i18n/setlang/", {"language": "en", "next": "/accounts/login/"}, HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    html = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "<h1>Sign in</h1>" in html
    client.post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
    assert "<h1>登录</h1>" in client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="en").content.decode()


@pytest.mark.django_db
def test_unknown_language_falls_back_to_chinese(client):
    assert "<h1>登录</h1>" in client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="fr-FR,fr;q=0.9").content.decode()


@pytest.mark.django_db
def test_javascript_catalogue(client):
    response = client.get("/jsi18n/")
    assert response.status_code == 200 and "django.gettext" in response.content.decode()
    assert client.get("/jsi18n/", HTTP_ACCEPT_LANGUAGE="en").status_code == 200


PO = r'''# a comment
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=1; plural=0;\n"

#: somewhere.py:1
msgid "Hello"
msgstr "你好"

msgid "A \"quoted\"\n"
"two-line id"
msgstr "带\"引号\"\n"
"的两行"

#, fuzzy
msgid "Fuzzy"
msgstr "模糊"

msgid "Untranslated"
msgstr ""

msgctxt "verb"
msgid "Open"
msgstr "打开"

msgid "%(n)s file"
msgid_plural "%(n)s files"
msgstr[0] "%(n)s 个文件"
'''


def _catalog(mo: Path) -> dict:
    with mo.open("rb") as handle:
        return gettext.GNUTranslations(handle)._catalog


def test_compiler_reads_what_gettext_reads(tmp_path):
    po = tmp_path / "zh_Hans" / "LC_MESSAGES" / "django.po"
    po.parent.mkdir(parents=True)
    po.write_text(PO, encoding="utf-8")
    assert compile_messages.compile_all(locale_dir=tmp_path, quiet=True) == [po.with_suffix(".mo")]
    with po.with_suffix(".mo").open("rb") as handle:
        translations = gettext.GNUTranslations(handle)
    assert translations.gettext("Hello") == "你好"
    assert translations.gettext('A "quoted"\ntwo-line id') == '带"引号"\n的两行'
    assert translations.gettext("Fuzzy") == "Fuzzy" and translations.gettext("Untranslated") == "Untranslated"
    assert translations.pgettext("verb", "Open") == "打开"
    assert translations.ngettext("%(n)s file", "%(n)s files", 3) == "%(n)s 个文件"
    # Up to date: nothing is rewritten.
    assert compile_messages.compile_all(locale_dir=tmp_path, quiet=True) == []
    if shutil.which("msgfmt"):
        reference = tmp_path / "reference.mo"
        subprocess.run(["msgfmt", "-o", str(reference), str(po)], check=True)
        assert _catalog(reference) == _catalog(po.with_suffix(".mo"))


def test_project_catalogues_compile_like_msgfmt(tmp_path):
    for po in compile_messages.po_files():
        ours = tmp_path / "ours.mo"
        ours.write_bytes(compile_messages.mo_bytes(compile_messages.parse_po(po)))
        assert _catalog(ours)["Sign in"] == "登录"
        if shutil.which("msgfmt"):
            reference = tmp_path / "reference.mo"
            subprocess.run(["msgfmt", "-o", str(reference), str(po)], check=True)
            theirs, mine = _catalog(reference), _catalog(ours)
            theirs.pop(""), mine.pop("")  # msgfmt drops POT-Creation-Date from the header
            assert theirs == mine
