"""Chinese by default, English on request: pages, the language switch, the JavaScript catalogue, the message compiler."""
from __future__ import annotations

import gettext
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import compile_messages  # noqa: E402 - importable only once scripts/ is on sys.path (the line above)

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
        if po.name == "django.po" and po.is_relative_to(compile_messages.LOCALE_DIR):
            assert _catalog(ours)["Sign in"] == "登录"
        if shutil.which("msgfmt"):
            reference = tmp_path / "reference.mo"
            subprocess.run(["msgfmt", "-o", str(reference), str(po)], check=True)
            theirs, mine = _catalog(reference), _catalog(ours)
            theirs.pop(""), mine.pop("")  # msgfmt drops POT-Creation-Date from the header
            assert theirs == mine


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_each_of_our_translations_is_the_one_shown(domain):
    """Django merges every catalogue into one (LOCALE_PATHS first, then the INSTALLED_APPS, an earlier app's winning, then
    Django's own): an id two catalogues translate shows one translation everywhere. Each of ours must be the one shown,
    so an id with two meanings carries a context (the audit log's 「Signed in」 read 「授权时间」, the MCP grants'
    column, and a KB member's 「Remove」 read DRF's 「删除」)."""
    from django.utils.translation.trans_real import DjangoTranslation

    shown = DjangoTranslation("zh-hans", domain=domain)
    wrong = {}
    for po in compile_messages.po_files():
        if po.stem != domain:
            continue
        ours = compile_messages.parse_po(po)
        for part in compile_messages.parts_of(po):
            ours = {**compile_messages.parse_po(part), **ours}  # the django.po translation wins, as compiled
        for key, text in ours.items():
            context, _, msgid = key.rpartition("\x04")
            singular, _, plural = msgid.partition("\x00")
            if not msgid:
                continue
            if plural:
                got = shown.ngettext(singular, plural, 1) if not context else shown.npgettext(context, singular, plural, 1)
                text = text.split("\x00")[0]
            else:
                got = shown.pgettext(context, msgid) if context else shown.gettext(msgid)
            if got != text:
                wrong[f"{po.relative_to(compile_messages.ROOT)}: {key!r}"] = (text, got)
    assert wrong == {}


# --- API errors: the code stays, the message follows Accept-Language ---------------------------------


def both(call) -> tuple[dict, dict]:
    """The error body of the same request asked in English and in Chinese (and Chinese when no language is sent)."""
    english = call(HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9").json()["error"]
    chinese = call(HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").json()["error"]
    default = call().json()["error"]
    assert english["code"] == chinese["code"] == default["code"]
    assert chinese["message"] == default["message"] != english["message"]
    return english, chinese


@pytest.mark.django_db
def test_application_errors_follow_accept_language(make_user, client_for):
    client = client_for(make_user("lang"))
    english, chinese = both(lambda **h: client.get("/api/kbs/99999/", **h))
    assert english == {"code": "kb_not_found", "message": "Knowledge base not found."}
    assert chinese == {"code": "kb_not_found", "message": "未找到该知识库。"}
    # A message with a value in it.
    assert client.post("/api/kbs/", {"name": "手册"}, format="json").status_code == 201
    english, chinese = both(lambda **h: client.post("/api/kbs/", {"name": "手册"}, format="json", **h))
    assert english == {"code": "kb_name_taken", "message": "You already have a knowledge base named '手册'."}
    assert chinese == {"code": "kb_name_taken", "message": "您已有同名的知识库 '手册'。"}


@pytest.mark.django_db
def test_drf_and_json_errors_follow_accept_language(make_user, client_for, api_client):
    english, chinese = both(lambda **h: api_client.get("/api/kbs/", **h))
    assert english == {"code": "not_authenticated", "message": "Authentication credentials were not provided."}
    assert chinese["code"] == "not_authenticated" and "身份认证" in chinese["message"]
    client = client_for(make_user("lang"))
    english, chinese = both(lambda **h: client.post("/api/kbs/", "{nope", content_type="application/json", **h))
    assert english["code"] == "parse_error" and english["message"].startswith("The body is not valid JSON")
    assert chinese["message"].startswith("请求体不是有效的 JSON")
    english, chinese = both(lambda **h: client.get("/api/no-such-thing/", **h))
    assert (english, chinese) == ({"code": "not_found", "message": "Not found."}, {"code": "not_found", "message": "未找到。"})


def test_request_limit_messages_follow_the_scope(settings):
    from config.request_limits import check_in_language

    settings.ZHIKU_MAX_URL_BYTES = 10

    def scope(*headers):
        return {"type": "http", "path": "/api/" + "x" * 20, "query_string": b"", "headers": list(headers)}

    english = check_in_language(scope((b"accept-language", b"en")))
    chinese = check_in_language(scope())
    assert english[:2] == chinese[:2] == (414, "uri_too_long")
    assert english[2] == "The URL is longer than 10 bytes." and chinese[2] == "URL 长度超过了 10 字节。"
    # The switch's cookie wins over the browser; an unknown language is Chinese.
    assert check_in_language(scope((b"accept-language", b"zh-CN"), (b"cookie", b"a=b; django_language=en")))[2].startswith("The URL")
    assert check_in_language(scope((b"accept-language", b"fr, de;q=0.5")))[2].startswith("URL 长度")
    assert check_in_language(scope((b"cookie", b"\x00bad;;=")))[2].startswith("URL 长度")


def test_lockout_message_follows_the_language():
    from django.utils import translation

    from core.http.security import LOCKOUT_MESSAGE

    with translation.override("en"):
        assert str(LOCKOUT_MESSAGE) == "Too many failed login attempts; try again later."
    with translation.override("zh-hans"):
        assert str(LOCKOUT_MESSAGE) == "登录失败次数过多，请稍后再试。"


@pytest.mark.django_db
def test_admin_and_model_names_in_both_languages(client, make_user):
    from django.utils import translation

    from knowledge.models import Document, DocumentStatus

    client.force_login(make_user("root", superuser=True))
    chinese = client.get("/admin/").content.decode()
    english = client.get("/admin/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "知识库管理" in chinese and "Knowledge administration" not in chinese
    assert "Knowledge administration" in english and "Knowledge bases" in english and "知识库管理" not in english
    with translation.override("en"):
        assert str(Document._meta.verbose_name_plural) == "documents" and str(DocumentStatus.READY.label) == "ready"
    with translation.override("zh-hans"):
        assert str(Document._meta.verbose_name_plural) == "文档" and str(DocumentStatus.READY.label) == "已就绪"
