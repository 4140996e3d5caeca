"""Sign-in routes under /accounts/: the form, sign-out, password reset links and the OpenID Connect flow."""
from django.contrib.auth import views as auth_views
from django.urls import path

from accounts.sso.oidc import SsoCallbackView, SsoStartView
from accounts.views import SignInView

urlpatterns = [
    # Sign-in for everyone (the admin's login admits staff only).
    path("login/", SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # A one-time link from staff (accounts/people/users.py: user_reset_link) sets a new password: Django's views.
    path("reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(
        template_name="registration/reset_confirm.html", post_reset_login=False), name="password_reset_confirm"),
    path("reset/done/", auth_views.PasswordResetCompleteView.as_view(template_name="registration/reset_done.html"),
         name="password_reset_complete"),
    # OpenID Connect: both answer 404 while it is off (accounts/sso/oidc.py).
    path("sso/start/", SsoStartView.as_view(), name="sso_start"),
    path("sso/callback/", SsoCallbackView.as_view(), name="sso_callback"),
]
