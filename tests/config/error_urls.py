"""The project's URLs plus two views that raise, for the 500 answers (tests/config/test_error_pages.py sets ROOT_URLCONF here)."""
from django.urls import path

from config.urls import handler400, handler403, handler404, handler500  # noqa: F401 - Django reads them from ROOT_URLCONF
from config.urls import urlpatterns as project_urls


def boom(request):
    raise RuntimeError("a bug in a view")


urlpatterns = [path("boom/", boom), path("api/boom/", boom), *project_urls]
