"""What the signed-in person has waiting, against their caps (`{% load queue_usage %}`): the 429 page
says it, so a refusal names the number to wait for."""

from django import template

from searches import services

register = template.Library()


@register.simple_tag(takes_context=True)
def queue_usage(context) -> dict:
    request = context.get("request")
    return services.search_usage(getattr(request, "user", None))
