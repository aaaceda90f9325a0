"""The ``perfgraph`` command: ``main`` wires argv to a command module in ``commands/``.

A command computes over arrays element by element and never multiplies matrices, so NumPy's
OpenBLAS gets one thread: with the default (a thread per core, started when NumPy is
imported, spinning for work a while after it starts and joined at exit) a cold command spends
~100 ms of a second core's time and ~30 ms of its own on threads it never uses. A value the
user set is kept. This runs before NumPy is imported: ``perfgraph/__init__`` imports nothing
heavy.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
