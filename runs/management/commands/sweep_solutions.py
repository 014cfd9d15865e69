"""The former name of `rejudge`, kept so that existing scripts still run."""

from .rejudge import Command as Rejudge


class Command(Rejudge):
    help = "Alias of rejudge: " + Rejudge.help
