"""Single sign-on: an LDAP / Active Directory directory (django-auth-ldap) and OpenID Connect (mozilla-django-oidc)."""
