"""Channels: ``manage.py channel_create`` and the REST API under an assistant (credentials write-only, the owner's
only, audited without secrets), the self-test through the real callback path, the body limit, and what a reply may
contain: never a passage of a KB the assistant does not bind, an apology when no answer can be produced."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEntry
from bots.formatting import Reply, as_markdown, tables_as_rows
from bots.models import BotChannel, BotEvent
from core.audit import Action
from tests.bots.conftest import FEISHU_KEY, FEISHU_TOKEN, SECRET_DOC
from tests.bots.platforms import FEISHU_APP, feishu_message

pytestmark = pytest.mark.django_db(transaction=True)


def feishu_body(text: str, n: int) -> str:
    return json.dumps(feishu_message(text, token=FEISHU_TOKEN, event_id=f"ev-{n}", message_id=f"om_{n}"),
                      ensure_ascii=False)


def test_channel_create_prints_the_json_line_and_its_url_answers_the_platform(client, assistant, platforms):
    out = StringIO()
    call_command("channel_create", "--assistant", str(assistant.pk), "--kind", "feishu", "--name", "飞书",
                 "--setting", f"app_id={FEISHU_APP[0]}", "--credential", f"app_secret={FEISHU_APP[1]}",
                 "--credential", f"verification_token={FEISHU_TOKEN}", stdout=out)
    made = json.loads(out.getvalue().strip())
    channel = BotChannel.objects.get(pk=made["id"])
    assert made["callback_url"] == f"/bots/feishu/{channel.callback_id}/" and len(channel.callback_id) >= 32
    assert FEISHU_APP[1] not in channel.credentials and channel.credential_names == ["app_secret", "verification_token"]
    answer = client.post(made["callback_url"], {"type": "url_verification", "challenge": "c1", "token": FEISHU_TOKEN},
                         content_type="application/json")
    assert answer.json() == {"challenge": "c1"}
    with pytest.raises(CommandError, match="bot_channel_invalid"):
        call_command("channel_create", "--assistant", str(assistant.pk), "--kind", "feishu",
                     "--setting", "app_id=cli_x", stdout=StringIO())
    with pytest.raises(CommandError, match="no assistant"):
        call_command("channel_create", "--assistant", "999999", "--kind", "wecom", stdout=StringIO())
    with pytest.raises(CommandError, match="name=value"):
        call_command("channel_create", "--assistant", str(assistant.pk), "--kind", "dingtalk", "--credential", "oops",
                     stdout=StringIO())


def test_the_rest_api_keeps_credentials_write_only_and_audits_without_secrets(assistant, alice, bob, client_for, platforms):
    api = client_for(alice)
    base = f"/api/assistants/{assistant.pk}/channels/"
    body = {"kind": "feishu", "name": "飞书群", "settings": {"app_id": FEISHU_APP[0]},
            "credentials": {"app_secret": FEISHU_APP[1], "verification_token": FEISHU_TOKEN}}
    created = api.post(base, body, format="json")
    assert created.status_code == 201, created.content
    made = created.json()
    assert made["callback_url"].startswith("/bots/feishu/") and made["credential_names"] == ["app_secret", "verification_token"]
    assert FEISHU_APP[1] not in created.content.decode() and "credentials" not in made
    assert api.get(base).json()["results"][0]["id"] == made["id"]
    detail = f"{base}{made['id']}/"
    changed = api.patch(detail, {"credentials": {"encrypt_key": FEISHU_KEY}, "enabled": False}, format="json")
    assert changed.status_code == 200 and changed.json()["credential_names"] == ["app_secret", "encrypt_key",
                                                                                 "verification_token"]
    assert api.post(f"{detail}test/").json()["ok"] is False  # turned off
    api.patch(detail, {"enabled": True}, format="json")
    report = api.post(f"{detail}test/").json()
    assert (report["ok"], report["callback"]["ok"], report["callback"]["status"], report["token"]["ok"]) == (True, True, 200, True)
    assert report["callback"]["detail"] == report["token"]["detail"] == ""  # what each showed: test_channel_selftest.py
    api.patch(detail, {"credentials": {"app_secret": "wrong"}}, format="json")
    failed = api.post(f"{detail}test/").json()
    assert failed["ok"] is False and failed["callback"]["ok"] is True and "10014" in failed["token"]["detail"]
    assert api.get(f"{detail}events/").json() == []
    # Bad input: registered codes; another owner's assistant: 404.
    missing = api.post(base, {"kind": "wecom", "name": "企业微信", "settings": {"corp_id": "ww1"}}, format="json")
    assert missing.status_code == 400 and missing.json()["error"]["code"] == "bot_channel_invalid"
    unknown = api.post(base, {**body, "name": "x", "settings": {"nope": "1"}}, format="json")
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "bot_channel_invalid"
    assert api.post(base, body, format="json").json()["error"]["code"] == "bot_channel_name_taken"
    assert client_for(bob).get(base).status_code == 404 and client_for(bob).get(detail).status_code == 404
    assert client_for(bob).delete(detail).status_code == 404
    assert api.delete(detail).status_code == 204 and not BotChannel.objects.exists()
    entries = AuditEntry.objects.filter(action__startswith="bot_channel.").order_by("id")
    assert [e.action for e in entries] == [Action.BOT_CHANNEL_CREATE] + [Action.BOT_CHANNEL_UPDATE] * 3 + [
        Action.BOT_CHANNEL_DELETE]
    logged = json.dumps([e.changes for e in entries], ensure_ascii=False)
    assert FEISHU_APP[1] not in logged and FEISHU_KEY not in logged and FEISHU_TOKEN not in logged
    assert entries[0].actor == alice
    kinds = api.get("/api/bot-kinds/").json()
    assert {k["kind"] for k in kinds} == {"feishu", "dingtalk", "wecom"}


def test_a_reply_never_holds_a_passage_of_a_kb_the_assistant_does_not_bind(client, channel, platforms, alice, make_kb,
                                                                        ingest):
    ingest(make_kb(alice, "财务制度"), {"reimburse.md": SECRET_DOC})  # alice's, not the assistant's
    feishu = channel("feishu")
    client.post(feishu.callback_url, feishu_body("差旅报销要在多少天内提交？", 1), content_type="application/json")
    [reply] = platforms.replies
    text = json.dumps(reply["card"], ensure_ascii=False)
    assert "30 天" not in text and "逾期" not in text and "报销制度" not in text


def test_a_question_that_cannot_be_answered_gets_a_short_apology(client, channel, platforms):
    feishu = channel("feishu")
    client.post(feishu.callback_url, feishu_body("价格" * 3000, 1), content_type="application/json")
    [reply] = platforms.replies
    text = json.dumps(reply["card"], ensure_ascii=False)
    assert "抱歉" in text and "9800" not in text and BotEvent.objects.get().status == "replied"


def test_old_events_are_pruned_after_the_dedup_retention(client, channel, platforms, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.ZHIKU_BOTS_DEDUP_DAYS = 7
    feishu = channel("feishu")
    client.post(feishu.callback_url, feishu_body("知库专业版多少钱？", 1), content_type="application/json")
    BotEvent.objects.update(created_at=timezone.now() - timedelta(days=8))
    client.post(feishu.callback_url, feishu_body("知库专业版多少钱？", 2), content_type="application/json")
    assert list(BotEvent.objects.values_list("event_id", flat=True)) == ["ev-2"]


def test_a_body_over_the_limit_is_refused(client, channel, platforms):
    feishu = channel("feishu")
    answer = client.post(feishu.callback_url, b"{" + b" " * (70 * 1024) + b"}", content_type="application/json")
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "body_too_large"
    assert client.post("/bots/feishu/not-a-channel/", b"{}", content_type="application/json").status_code == 404


def test_tables_become_rows_the_platforms_can_show():
    answer = "价格如下：\n\n| 版本 | 年费 |\n|---|---:|\n| 专业版 | 9800 元 |\n| 旗舰版 | 19800 元 |\n\n以上。"
    rows = tables_as_rows(answer)
    assert "|" not in rows and "- 版本：专业版；年费：9800 元" in rows and "- 版本：旗舰版；年费：19800 元" in rows
    assert rows.startswith("价格如下：") and rows.endswith("以上。")
    markdown = as_markdown(Reply(answer, "answered"))
    assert "|" not in markdown and "已从知识库中找到答案" in markdown
