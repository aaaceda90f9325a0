"""The CLI's commands, one module each: ``register(subparsers)`` and ``run(args)``."""
