"""The platforms' callback URLs (bots/views.py)."""
from django.urls import re_path

from bots import views

app_name = "bots"

urlpatterns = [
    re_path(r"^bots/(?P<kind>feishu|dingtalk|wecom)/(?P<callback_id>[A-Za-z0-9_-]{1,64})/$", views.callback,
            name="callback"),
]
