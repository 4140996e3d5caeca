"""The people pages in headless Chromium, in Chinese and in English: staff create an account and a group and add
the account with the picker; an owner adds a member to a KB with the picker; an invitee accepts a link."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]

WORDS = {
    "zh-hans": {"created": "已创建", "member_added": "已保存", "invited": "邀请", "accept": "创建账号并接受邀请",
                "added": "已添加"},
    "en": {"created": "Created", "member_added": "Saved.", "invited": "invites you", "accept": "Create the account and accept",
           "added": "Added"},
}


def shot(browser, tmp_path, name: str) -> None:
    folder = Path(os.environ.get("ZHIKU_SCREENSHOT_DIR") or tmp_path)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(max(height, 900), 2400))
    browser.save_screenshot(str(folder / name))
    browser.set_window_size(1280, 900)


def server_checks(user, password: str) -> bool:
    """The server hashed with its own default (PBKDF2), which the test settings' fast hasher list leaves out."""
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    return PBKDF2PasswordHasher().verify(password, user.password)


def in_language(browser, server: str, language: str) -> None:
    if language == "en":
        browser.get(server + "/static/zhiku/console.css")
        browser.add_cookie({"name": "django_language", "value": "en", "path": "/"})


def pick(browser, field_id: str, text: str, kind: str = "user") -> None:
    """Type into a picker and choose the first match of ``kind``."""
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    browser.find_element(By.ID, field_id).send_keys(text)
    selector = f"#{field_id}-list .picker-option[data-kind={kind}]"
    Wait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, selector))
    browser.find_element(By.CSS_SELECTOR, selector).click()


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_staff_create_an_account_and_a_group_and_add_the_account(server, browser, make_user, tmp_path, language):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    from tests.browser import Wait

    staff = make_user("root", superuser=True)
    in_language(browser, server, language)
    open_as(browser, server, staff, "/people/")
    wait = Wait(browser, 20, ignored_exceptions=(StaleElementReferenceException,))  # lists are re-rendered
    browser.find_element(By.ID, "id_username").send_keys("carol")
    browser.find_element(By.ID, "id_first_name").send_keys("王小红")
    browser.find_element(By.ID, "id_email").send_keys("carol@example.com")
    browser.find_element(By.ID, "id_password").send_keys("carol-pass-2026")
    browser.find_element(By.ID, "user-create-submit").click()
    wait.until(lambda d: d.find_elements(By.ID, "person-manage"))
    assert WORDS[language]["created"] in browser.find_element(By.ID, "messages").text
    carol = get_user_model().objects.get(username="carol")
    assert server_checks(carol, "carol-pass-2026") and carol.email == "carol@example.com"

    browser.get(server + "/people/groups/")
    browser.find_element(By.ID, "group-name").send_keys("售后组")
    browser.find_element(By.ID, "group-create").click()
    wait.until(lambda d: d.find_elements(By.ID, "group-members"))
    pick(browser, "add-member-q", "王小")
    browser.find_element(By.ID, "add-member-submit").click()
    wait.until(lambda d: "carol" in d.find_element(By.ID, "member-list").text)
    assert list(Group.objects.get(name="售后组").user_set.values_list("username", flat=True)) == ["carol"]
    shot(browser, tmp_path, f"people-group-{language}.png")
    browser.get(server + "/people/?q=carol")
    assert "carol@example.com" in browser.find_element(By.ID, "people-table").text
    shot(browser, tmp_path, f"people-list-{language}.png")


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_an_owner_adds_a_member_with_the_picker(server, browser, alice, make_user, make_kb, tmp_path, language):
    from django.contrib.auth.models import Group
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    from knowledge.models import Membership
    from tests.browser import Wait

    kb = make_kb(alice, "产品库")
    dave = make_user("dave")
    dave.first_name, dave.email = "李大伟", "dave@example.com"
    dave.save()
    team = Group.objects.create(name="市场部")
    in_language(browser, server, language)
    open_as(browser, server, alice, f"/kbs/{kb.pk}/settings/")
    wait = Wait(browser, 20, ignored_exceptions=(StaleElementReferenceException,))  # lists are re-rendered
    pick(browser, "m-name", "dave")          # a username: the picker finds people, not e-mail pieces
    options = browser.find_element(By.ID, "m-name-list").text
    browser.find_element(By.ID, "member-add").click()
    wait.until(lambda d: WORDS[language]["added"] in d.find_element(By.ID, "member-status").text)
    assert Membership.objects.get(kb=kb, user=dave).role == "viewer"
    # The member list names the person, the username beside it (issue 38 item 6).
    wait.until(lambda d: "李大伟 dave" in d.find_element(By.ID, "member-rows").text)
    pick(browser, "m-name", "市场", kind="group")
    browser.find_element(By.ID, "member-add").click()
    wait.until(lambda d: "市场部" in d.find_element(By.ID, "member-rows").text)
    assert Membership.objects.get(kb=kb, group=team).role == "viewer"
    # The picker showed the person by name with a masked address.
    browser.find_element(By.ID, "m-name").send_keys("李")
    wait.until(lambda d: "d***@example.com" in d.find_element(By.ID, "m-name-list").text)
    shot(browser, tmp_path, f"people-picker-{language}.png")
    assert "dave@example.com" not in options


@pytest.mark.parametrize("language", ["zh-hans", "en"])
def test_an_invitee_accepts_a_link(server, browser, alice, make_kb, tmp_path, language):
    from django.contrib.auth import get_user_model
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    from accounts.people.invitations import Grant, invitation_create
    from knowledge.models import Membership
    from tests.browser import Wait

    kb = make_kb(alice, "客服知识库")
    _, token = invitation_create(actor=alice, grants=[Grant(kb=kb, role="editor")], email="erin@example.com")
    in_language(browser, server, language)
    browser.get(server + f"/invite/{token}/")
    wait = Wait(browser, 20, ignored_exceptions=(StaleElementReferenceException,))  # lists are re-rendered
    card = browser.find_element(By.ID, "invitation-card").text
    assert WORDS[language]["invited"] in card and "客服知识库" in card
    assert browser.find_element(By.ID, "id_email").get_attribute("value") == "erin@example.com"
    shot(browser, tmp_path, f"people-invite-{language}.png")
    browser.find_element(By.ID, "id_username").send_keys("erin")
    browser.find_element(By.ID, "id_password").send_keys("erin-pass-2026")
    browser.find_element(By.ID, "id_password2").send_keys("erin-pass-2026")
    assert browser.find_element(By.ID, "accept").text == WORDS[language]["accept"]
    browser.find_element(By.ID, "accept").click()
    wait.until(lambda d: d.find_elements(By.ID, "username"))
    assert browser.find_element(By.ID, "username").text == "erin"
    assert "客服知识库" in browser.find_element(By.TAG_NAME, "main").text
    erin = get_user_model().objects.get(username="erin")
    assert Membership.objects.get(kb=kb, user=erin).role == "editor"
    browser.get(server + f"/invite/{token}/")
    assert browser.find_elements(By.ID, "invitation-error")
