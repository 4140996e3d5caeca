"""Admin for knowledge bases, documents and chunks: every write goes through the services, access follows KB roles.

Django's autodiscovery imports this package; each module registers its own pages.
"""
from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from knowledge.admin import chunks, documents, groups, kbs  # noqa: F401 - imported to register the pages

admin.site.site_header = _("Zhiku administration")
admin.site.site_title = _("Zhiku")
admin.site.index_title = _("Knowledge administration")
