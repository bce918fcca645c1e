"""Identify: what each device is (a phone, a printer, a console...), guessed from what it
says about itself, with a confidence and the reasons; the household's corrections."""
from .component import IdentifyComponent

COMPONENT = IdentifyComponent
