"""Each recorded action reads as itself in both languages: its own Chinese words, never another message's that shares
its English id (the audit log's filter named auth.sign_in 「授权时间」, the MCP grants' column, before)."""
from __future__ import annotations

from django.utils import translation

from core.audit.actions import Action, Origin


def labels(language: str, choices) -> dict[str, str]:
    with translation.override(language):
        return {value: str(label) for value, label in choices.choices}


def test_every_action_has_its_own_words_in_chinese_and_english():
    chinese, english = labels("zh-hans", Action), labels("en", Action)
    assert chinese["auth.sign_in"] == "登录" and english["auth.sign_in"] == "Signed in"
    assert chinese["auth.sign_out"] == "退出登录" and chinese["bot_channel.delete"] == "移除机器人渠道"
    assert [value for value in chinese if chinese[value] == english[value]] == []  # every one translated
    assert len(set(chinese.values())) == len(chinese) and len(set(english.values())) == len(english)  # none shared
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in label) for label in chinese.values())


def test_every_origin_is_translated():
    chinese, english = labels("zh-hans", Origin), labels("en", Origin)
    assert chinese == {"web": "网页或 API", "cli": "命令行", "system": "系统"} and english["web"] == "web or API"
