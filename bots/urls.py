"""The platforms' callback URLs (bots/views.py): any lowercase kind of at most 10 letters routes, and the view
answers only a registered platform's (bots/platforms/), so a platform added to the registry needs nothing here."""
from django.urls import re_path

from bots import views

app_name = "bots"

urlpatterns = [
    re_path(r"^bots/(?P<kind>[a-z]{1,10})/(?P<callback_id>[A-Za-z0-9_-]{1,64})/$", views.callback,
            name="callback"),
]
