"""The only code that imports os-ken."""
