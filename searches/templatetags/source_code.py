"""Server-side syntax highlighting (Pygments): `{{ source|highlight_python }}`.

The output is a two-column table (line numbers, code) with an anchor per line (#L-12), so
copying the code does not copy the numbers. Styles: static/css/pygments.css.
"""

from django import template
from django.utils.safestring import mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

register = template.Library()


@register.filter
def highlight_python(source, lines_to_mark=""):
    """Highlight Python source. `lines_to_mark` is a comma-separated list of line numbers."""
    marked = [int(n) for n in str(lines_to_mark or "").split(",") if n.strip().isdigit()]
    formatter = HtmlFormatter(
        cssclass="highlight",
        linenos="table",
        lineanchors="L",
        anchorlinenos=True,
        hl_lines=marked,
        wrapcode=True,
    )
    # Pygments escapes every token, so the result is safe to mark as HTML.
    return mark_safe(highlight(source or "", PythonLexer(stripnl=False, ensurenl=True), formatter))
