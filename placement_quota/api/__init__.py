"""WSGI apps: the enforcement service (specs/000)."""
