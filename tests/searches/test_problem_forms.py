"""The problem forms: pasted or uploaded source, static checks, defaults from the file."""

from django.core.files.uploadedfile import SimpleUploadedFile

from searches.forms import ProblemCreateForm, ProblemForm

from .problem_samples import MISSING_GET_INPUTS, SOFTMAX, SYNTAX_ERROR, two_megabytes


def create_form(data=None, upload=None):
    files = {"source_file": upload} if upload else {}
    return ProblemCreateForm({"device": "cpu", **(data or {})}, files)


def test_pasted_source_with_a_name_is_valid():
    form = create_form({"name": "Softmax", "source": SOFTMAX, "atol": "1e-5"})
    assert form.is_valid(), form.errors
    fields = form.problem_fields()
    assert fields["source"] == SOFTMAX and fields["atol"] == 1e-5 and fields["rtol"] is None
    assert fields["description"] == "Softmax over the last dimension."  # from Model's docstring


def test_upload_fills_name_and_description_from_the_file():
    form = create_form(upload=SimpleUploadedFile("23_Softmax.py", SOFTMAX.encode()))
    assert form.is_valid(), form.errors
    assert form.problem_fields()["name"] == "23 Softmax"
    assert form.problem_fields()["source"] == SOFTMAX


def test_upload_with_a_byte_order_mark_is_read_as_utf8():
    form = create_form({"name": "x"}, SimpleUploadedFile("p.py", b"\xef\xbb\xbf" + SOFTMAX.encode()))
    assert form.is_valid(), form.errors
    assert form.problem_fields()["source"] == SOFTMAX


def test_upload_that_is_not_text_is_refused_with_the_reason():
    form = create_form({"name": "x"}, SimpleUploadedFile("model.pt", b"\x80\x02\xff\xfe binary"))
    assert not form.is_valid()
    assert "model.pt is not UTF-8 text" in form.errors["source_file"][0]


def test_upload_of_two_megabytes_is_refused_before_reading_it():
    form = create_form(upload=SimpleUploadedFile("big.py", two_megabytes().encode()))
    assert not form.is_valid()
    assert form.errors["source_file"][0].startswith("big.py: The source is 2.0 MB; the limit is")


def test_paste_and_upload_together_is_ambiguous():
    form = create_form({"name": "x", "source": SOFTMAX}, SimpleUploadedFile("p.py", SOFTMAX.encode()))
    assert not form.is_valid()
    assert "keep one of them" in form.errors["source"][0]


def test_no_source_at_all_says_what_to_do():
    form = create_form({"name": "x"})
    assert not form.is_valid()
    assert "Paste the reference source, or upload" in form.errors["source"][0]


def test_static_errors_are_precise():
    syntax = create_form({"name": "x", "source": SYNTAX_ERROR})
    missing = create_form({"name": "x", "source": MISSING_GET_INPUTS})
    assert not syntax.is_valid() and not missing.is_valid()
    assert syntax.errors["source"][0].startswith("Syntax error on line 6, column")
    assert "def forward(self, x)" in syntax.errors["source"][0]
    assert missing.errors["source"][0].startswith("The source does not define get_inputs.")


def test_name_is_required_when_pasting():
    form = create_form({"source": SOFTMAX})
    assert not form.is_valid()
    assert form.errors["name"] == ["Give the problem a name."]


def test_tolerance_must_be_a_finite_non_negative_number():
    for bad in ("-1", "inf", "nan", "abc"):
        form = ProblemForm({"name": "x", "source": SOFTMAX, "device": "cpu", "atol": bad})
        assert not form.is_valid() and "atol" in form.errors, bad


def test_unknown_device_is_refused():
    form = ProblemForm({"name": "x", "source": SOFTMAX, "device": "tpu"})
    assert not form.is_valid() and "device" in form.errors
