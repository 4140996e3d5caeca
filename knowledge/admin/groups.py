"""Django's group admin, refusing to delete the last reader groups of a restricted document."""
from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin
from django.contrib.auth.models import Group
from django.db.models import Count, F, Q
from django.utils.translation import gettext_lazy as _

from knowledge.models import Document


class RestrictingGroupAdmin(GroupAdmin):
    """Django's group admin, refusing to delete the last reader groups of a restricted document.

    Deleting the group would delete its restriction rows and leave such a document
    readable by every viewer of its KB: access would widen without anyone choosing
    it. The confirmation page lists those documents as protected (as Django does for
    protected foreign keys), so the owner first re-restricts or deletes them.
    """

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        groups = [g.pk for g in objs]
        # Documents all of whose reader groups are among those deleted (one annotate: the counts share a join).
        sole = (Document.objects.annotate(
                    readers=Count("restricted_to_groups", distinct=True),
                    leaving=Count("restricted_to_groups", filter=Q(restricted_to_groups__in=groups), distinct=True))
                .filter(leaving__gt=0, leaving=F("readers")).select_related("kb").order_by("pk"))
        protected = list(protected) + [
            _("Document %(name)s in %(kb)s: no reader group would be left") % {"name": d.source_name, "kb": d.kb.name}
            for d in sole]
        return deleted, counts, perms_needed, protected


admin.site.unregister(Group)
admin.site.register(Group, RestrictingGroupAdmin)
