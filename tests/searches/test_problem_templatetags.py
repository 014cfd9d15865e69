"""Template helpers for problem pages: Pygments highlighting and number formatting."""

from django.template import Context, Template

from searches.templatetags.source_code import highlight_python
from searches.templatetags.units import bytes_si, flops, ms, tolerance


def test_highlight_python_escapes_and_numbers_lines():
    html = highlight_python('x = "<script>alert(1)</script>"\nclass Model: pass\n')
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'id="L-1"' in html and 'id="L-2"' in html and 'href="#L-2"' in html
    assert '<span class="k">class</span>' in html


def test_highlight_python_marks_lines():
    html = highlight_python("a = 1\nb = 2\nc = 3\n", "2")
    assert html.count('class="hll"') == 1
    assert '<span class="hll"><span class="n">b</span>' in html


def test_highlight_python_in_a_template():
    rendered = Template("{% load source_code %}{{ src|highlight_python }}").render(Context({"src": "def f(): pass"}))
    assert '<span class="nf">f</span>' in rendered


def test_units():
    assert [ms(v) for v in (None, 2.684, 12.34, 123.4, 0.04123)] == ["—", "2.68 ms", "12.3 ms", "123 ms", "0.0412 ms"]
    assert flops(2.1e10) == "21 GFLOP" and flops(None) == "—"
    assert bytes_si(5.36e8) == "536 MB"
    assert tolerance(None) == "dtype default" and tolerance(1e-4) == "0.0001"
