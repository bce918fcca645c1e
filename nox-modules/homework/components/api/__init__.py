from .component import ApiComponent as COMPONENT  # noqa: F401
