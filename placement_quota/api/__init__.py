"""WSGI apps: the enforcement service (Blazar's "Flexible Reservation Usage
Enforcement" spec)."""
