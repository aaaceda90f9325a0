"""The Textual dashboard (``perfgraph tui``): the only package that imports textual.

``perfgraph.tui.app.make_app(scenario)`` builds the app for a loaded scenario; the state it
edits lives in :mod:`perfgraph.tui.session`, which has no widgets.
"""
