"""The dashboard's widgets: each reads a Session and redraws only what changed."""
