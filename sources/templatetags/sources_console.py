"""``{% kb_sources %}``: the Sources section of a KB's page (templates/knowledge/kb.html)."""
from __future__ import annotations

from django import template

from knowledge.access import kb_role, role_at_least
from knowledge.models import Role
from sources import selectors
from sources.console import RUN_STATUS_CLASSES, kind_forms, kind_label, schedule_text
from sources.models import Schedule

register = template.Library()


@register.inclusion_tag("sources/_kb_sources.html", takes_context=True)
def kb_sources(context, kb):
    """The KB's sources with their last runs; editors also get the actions and the form to add one."""
    user = context["request"].user
    can_edit = role_at_least(kb_role(user=user, kb=kb), Role.EDITOR)
    sources = list(selectors.source_list(kb=kb))
    runs = selectors.last_runs(sources)
    for source in sources:
        source.kind_label = kind_label(source.kind)
        source.schedule_text = schedule_text(source)
        source.last_run = runs.get(source.pk)
        if source.last_run is not None:
            source.last_run.css = RUN_STATUS_CLASSES.get(source.last_run.status, "")
    return {"kb": kb, "sources": sources, "can_edit": can_edit, "kinds": kind_forms() if can_edit else [],
            "schedules": Schedule.choices, "csrf_token": context.get("csrf_token")}
