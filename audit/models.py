"""The audit log: one append-only row per security-relevant action (who, when, from where, what, what changed).

Rows are written by ``audit.record`` and never changed or deleted by the application: ``save()`` of an
existing row and ``delete()`` raise here, and the database itself refuses UPDATE, TRUNCATE and any DELETE
but the retention purge's (the triggers of ``audit/migrations/0002_append_only.py``; docs/audit.md).
The KB is kept as its id and name, not a foreign key, so a KB's entries outlive it; the actor is a
foreign key set to NULL when the account is deleted, with the username kept beside it.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core.audit.actions import Action, Origin

__all__ = ["Action", "AuditEntry", "AuditImmutable", "Origin"]


class AuditImmutable(Exception):
    """An attempt to change or delete an audit entry from Python."""


class AuditEntryQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AuditImmutable("audit entries cannot be changed")

    def delete(self):
        raise AuditImmutable("audit entries are removed only by the retention purge (audit.purge)")


class AuditEntry(models.Model):
    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField(_("when"), default=timezone.now)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("who"), on_delete=models.SET_NULL,
                              null=True, blank=True, related_name="+")
    # The username when the entry was written: still there after the account is deleted or renamed.
    actor_name = models.CharField(_("who (username)"), max_length=150, blank=True, default="")
    origin = models.CharField(_("origin"), max_length=8, choices=Origin.choices, default=Origin.SYSTEM)
    action = models.CharField(_("action"), max_length=40, choices=Action.choices)
    object_type = models.CharField(_("object type"), max_length=40, blank=True, default="")
    object_id = models.CharField(_("object id"), max_length=64, blank=True, default="")
    object_repr = models.CharField(_("object"), max_length=200, blank=True, default="")
    # The KB the action concerns, as its id and name: entries outlive the KB (no foreign key to cascade).
    kb_id = models.BigIntegerField(_("knowledge base id"), null=True, blank=True)
    kb_name = models.CharField(_("knowledge base"), max_length=200, blank=True, default="")
    address = models.GenericIPAddressField(_("address"), null=True, blank=True)
    # {"field": [before, after]} for changed settings, or facts of the action; secrets are masked (core/audit/recording.py).
    changes = models.JSONField(_("changes"), default=dict, blank=True)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        verbose_name = _("audit entry")
        verbose_name_plural = _("audit entries")
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["-at", "-id"], name="audit_at"),
            models.Index(fields=["kb_id", "-at"], name="audit_kb_at"),
            models.Index(fields=["actor", "-at"], name="audit_actor_at"),
            models.Index(fields=["action", "-at"], name="audit_action_at"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or '-'} {self.action} {self.object_repr}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise AuditImmutable("audit entries cannot be changed")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditImmutable("audit entries are removed only by the retention purge (audit.purge)")
