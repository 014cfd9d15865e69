"""The project's own documents served as pages, so a verdict can link to the rule behind it
(docs/KERNEL_FORMAT.md). The renderer knows only the Markdown those files use: headings (with
GitHub-style anchors), paragraphs, bullet and numbered lists, `code`, **bold** and links.
Every piece of text is escaped before any markup is added."""

import re
from functools import lru_cache
from html import escape
from pathlib import Path

from django.conf import settings
from django.http import Http404
from django.shortcuts import render
from django.utils.safestring import mark_safe

DOCS = {"kernel-format": ("Problem and kernel formats", "KERNEL_FORMAT.md")}
_INLINE = re.compile(r"`([^`]+)`|\*\*(.+?)\*\*|\[([^\]]+)\]\(([^)\s]+)\)")


def anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _inline(text: str) -> str:
    out, at = [], 0
    for m in _INLINE.finditer(text):
        out.append(escape(text[at:m.start()]))
        code, bold, label, href = m.groups()
        if code is not None:
            out.append(f"<code>{escape(code)}</code>")
        elif bold is not None:
            out.append(f"<strong>{_inline(bold)}</strong>")
        elif href.startswith(("http://", "https://", "#")):
            out.append(f'<a href="{escape(href)}">{_inline(label)}</a>')
        else:  # a path in the repository: not a page here
            out.append(_inline(label))
        at = m.end()
    out.append(escape(text[at:]))
    return "".join(out)


def render_markdown(source: str) -> str:
    html, para, items, kind = [], [], [], None

    def flush():
        nonlocal kind
        if para:
            html.append(f"<p>{_inline(' '.join(para))}</p>")
            para.clear()
        if items:
            html.append(f"<{kind}>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + f"</{kind}>")
            items.clear()
        kind = None

    for line in source.splitlines():
        heading = re.match(r"(#{1,4}) (.+)", line)
        bullet = re.match(r"(?:- |\d+\. )(.*)", line)
        if heading:
            flush()
            level, title = len(heading.group(1)), heading.group(2).strip()
            html.append(f'<h{level} id="{anchor(title)}">{_inline(title)}</h{level}>')
        elif bullet:
            if para:
                flush()
            new_kind = "ol" if line[0].isdigit() else "ul"
            if kind != new_kind:
                flush()
            kind = new_kind
            items.append(bullet.group(1))
        elif not line.strip():
            flush()
        elif items and line.startswith(" "):
            items[-1] += " " + line.strip()  # a list item's continuation
        else:
            if items:
                flush()
            para.append(line.strip())
    flush()
    return "\n".join(html)


@lru_cache(maxsize=8)
def _rendered(path: Path, mtime: float) -> str:
    return render_markdown(path.read_text(encoding="utf-8"))


def doc_page(request, name):
    if name not in DOCS:
        raise Http404("There is no document of that name.")
    title, filename = DOCS[name]
    path = Path(settings.BASE_DIR) / "docs" / filename
    body = _rendered(path, path.stat().st_mtime)
    return render(request, "searches/docs/page.html",
                  {"title": title, "body": mark_safe(body)})  # noqa: S308  escaped in render_markdown
