"""A person's own choices kept server-side (``accounts.models.Preference``): the knowledge bases ticked on the chat page.

The chat page ticks what the person chose last, on whatever browser they chose it; the first time, the knowledge bases
they own (not the first by name: for staff, who read every KB, that would be someone else's). Ids of KBs the person can
no longer read are left out when the choice is read.
"""
from __future__ import annotations

from collections.abc import Sequence

from accounts.models import Preference
from knowledge.access import kbs_for_user

MAX_CHAT_KBS = 200


def chat_kbs_chosen(*, user, readable: Sequence[int]) -> list[int]:
    """The KBs to tick on ``user``'s chat page, among the ``readable`` ids: their last choice, else the KBs they own."""
    preference = Preference.objects.filter(user=user).first()
    if preference is not None and isinstance(preference.chat_kb_ids, list):
        return [kb_id for kb_id in readable if kb_id in set(preference.chat_kb_ids)]
    owned = set(kbs_for_user(user=user).filter(owner=user).values_list("pk", flat=True))
    if owned or user.is_superuser:  # staff read every KB: the first by name would be someone else's
        return [kb_id for kb_id in readable if kb_id in owned]
    return list(readable[:1])  # only KBs shared with them: the first by name, as the page always did


def chat_kbs_choose(*, user, kb_ids: Sequence[int]) -> list[int]:
    """Keep ``user``'s choice of KBs on the chat page (only those they may read, in the order given); the kept ids."""
    wanted = list(dict.fromkeys(int(kb_id) for kb_id in kb_ids))[:MAX_CHAT_KBS]
    readable = set(kbs_for_user(user=user).filter(pk__in=wanted).values_list("pk", flat=True))
    kept = [kb_id for kb_id in wanted if kb_id in readable]
    Preference.objects.update_or_create(user=user, defaults={"chat_kb_ids": kept})
    return kept
