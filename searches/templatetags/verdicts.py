"""A kernel's state as pages show it (`{% load verdicts %}`): its verdict, or grey "not evaluated
(cancelled)" for one its search's cancellation dropped (Kernel.shown)."""

from django import template

from ..models import Kernel

register = template.Library()


@register.filter
def shown_status(kernel: Kernel) -> str:
    return Kernel.shown(kernel.status, kernel.reason_code)


@register.filter
def shown_label(kernel: Kernel) -> str:
    return Kernel.CANCELLED_LABEL if shown_status(kernel) == Kernel.CANCELLED else kernel.get_status_display()
