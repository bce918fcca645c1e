from .simulator import LinkSimulator as COMPONENT  # noqa: F401
