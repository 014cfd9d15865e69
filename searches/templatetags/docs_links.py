"""Links from verdicts to the rule behind them in docs/KERNEL_FORMAT.md (served by views/docs.py)."""

from django import template
from django.urls import reverse

register = template.Library()

# Verdict -> the section that explains it; the rest are explained in "How a kernel is judged".
SECTIONS = {
    "rejected": "a-kernel-of-its-own-the-default-rule-enforced",
    "compile_error": "{device}-target",
}


@register.simple_tag
def verdict_doc_url(status: str, device: str = "cpu") -> str:
    device = device if device in ("cpu", "cuda") else "cpu"
    section = SECTIONS.get(status, "how-a-kernel-is-judged").format(device=device)
    return reverse("doc", kwargs={"name": "kernel-format"}) + "#" + section
