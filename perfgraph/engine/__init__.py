"""The engine: units, the formula language, declarations, the sheet (the dependency graph) and
the read-only views it hands out, and numbers formatted for people.

Knows nothing of catalogs, scenarios, measured runs, the CLI or the dashboard.
"""
