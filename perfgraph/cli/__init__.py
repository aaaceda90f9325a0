"""The ``perfgraph`` command: ``main`` wires argv to a command module in ``commands/``."""
