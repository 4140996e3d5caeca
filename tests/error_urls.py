"""The project's URLs plus two views that raise, for the 500 answers (tests/test_error_pages.py sets ROOT_URLCONF here)."""
from django.urls import path

from config.urls import handler400, handler403, handler404, handler500, urlpatterns as project_urls  # noqa: F401


def boom(request):
    raise RuntimeError("a bug in a view")


urlpatterns = [path("boom/", boom), path("api/boom/", boom), *project_urls]
