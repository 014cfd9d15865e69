"""`{% problem_dashboard problem %}`: a problem's searches and the ways to start one, for the
problem page (one line there; the dashboard keeps the markup)."""

from django import template

from .. import selectors

register = template.Library()


@register.inclusion_tag("searches/search/_problem_panel.html", takes_context=True)
def problem_dashboard(context, problem):
    return {"problem": problem, "searches": selectors.search_list(problem=problem, limit=20),
            "request": context.get("request")}
