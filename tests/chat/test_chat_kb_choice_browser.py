"""Issue 38 item 6: the chat page ticks the person's own KBs the first time (for staff too, who read every KB), and
remembers their choice server-side: a reload, or another browser session, ticks the same KBs."""
from __future__ import annotations

import pytest

from tests.browser import CHROMEDRIVER, CHROMIUM, open_as, selenium

pytestmark = [
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="chromium and chromium-driver are not installed (run scripts/ensure_chromium.sh)"),
    pytest.mark.skipif(selenium is None, reason="selenium is not installed (pip install -e '.[dev]')"),
    pytest.mark.django_db(transaction=True),
]


def _ticked(browser) -> set[str]:
    from selenium.webdriver.common.by import By

    return {box.find_element(By.XPATH, "..").text.strip()
            for box in browser.find_elements(By.CSS_SELECTOR, '#kb-list input[name="kb"]') if box.is_selected()}


def test_the_chat_page_ticks_your_own_kbs_then_remembers_your_choice(server, browser, alice, make_user, make_kb):
    from selenium.webdriver.common.by import By

    from accounts.models import Preference
    from knowledge.services.kbs import membership_set
    from tests.browser import Wait

    staff = make_user("root", superuser=True)
    make_kb(alice, "A 爱丽丝的库")  # first by name: someone else's for staff
    mine = make_kb(staff, "Z 运维知识库")
    shared = make_kb(alice, "M 共享库")
    membership_set(kb=shared, user=staff, role="viewer")
    open_as(browser, server, staff, "/chat/")
    assert _ticked(browser) == {"Z 运维知识库"}  # the person's own, not the first by name

    for box in browser.find_elements(By.CSS_SELECTOR, '#kb-list input[name="kb"]'):
        if box.get_attribute("value") == str(shared.pk):
            box.click()
    Wait(browser, 10).until(lambda d: d.find_element(By.ID, "kb-list").get_attribute("data-kept") == "1")
    assert Preference.objects.get(user=staff).chat_kb_ids == [shared.pk, mine.pk]  # in the page's order (by name)
    browser.refresh()
    Wait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, '#kb-list input[name="kb"]'))
    assert _ticked(browser) == {"Z 运维知识库", "M 共享库"}
    for box in browser.find_elements(By.CSS_SELECTOR, '#kb-list input[name="kb"]'):
        if box.get_attribute("value") == str(mine.pk):
            box.click()
    Wait(browser, 10).until(lambda d: Preference.objects.get(user=staff).chat_kb_ids == [shared.pk])
    browser.delete_all_cookies()  # another browser: the choice is the server's, not this one's storage
    open_as(browser, server, staff, "/chat/")
    assert _ticked(browser) == {"M 共享库"}
