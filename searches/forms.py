from pathlib import PurePath

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from proposers import registry

from .config import SEARCH_CONFIG as CONFIG, Setting
from .models import Device, Search
from .problem_checks import check_kernel_source, check_problem_source, model_docstring, size_error

# === problems ===========================================================================


class ProblemForm(forms.Form):
    """Name, description, reference source, tolerance and device of a problem."""

    name = forms.CharField(max_length=200, required=False)
    description = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "class": "short"}), required=False
    )
    source = forms.CharField(
        label="Reference source (KernelBench format)",
        widget=forms.Textarea(attrs={"rows": 22, "spellcheck": "false", "wrap": "off"}),
        required=False,
        strip=False,
    )
    atol = forms.FloatField(
        required=False, min_value=0, label="atol", help_text="Absolute tolerance. Empty: the dtype's default."
    )
    rtol = forms.FloatField(
        required=False, min_value=0, label="rtol", help_text="Relative tolerance. Empty: the dtype's default."
    )
    device = forms.ChoiceField(choices=Device.choices, initial=Device.CPU, label="Target device")

    def clean_source(self):
        # Browsers submit textareas with CRLF line ends; store what the file would hold.
        return (self.cleaned_data.get("source") or "").replace("\r\n", "\n")

    def source_text(self, cleaned: dict) -> tuple[str, str]:
        """The source and the name of the field it came from."""
        return cleaned.get("source") or "", "source"

    def clean(self):
        cleaned = super().clean()
        source, field = self.source_text(cleaned)
        if field in self.errors:
            return cleaned
        if not source.strip():
            self.add_error(field, "Paste the reference source, or upload a KernelBench problem file.")
            return cleaned
        try:
            check_problem_source(source)
        except ValidationError as error:
            self.add_error(field, error)
            return cleaned
        cleaned["source"] = source
        if not (cleaned.get("name") or "").strip():
            self.add_error("name", "Give the problem a name.")
        if not cleaned.get("description"):
            cleaned["description"] = model_docstring(source)
        return cleaned

    def problem_fields(self) -> dict:
        data = self.cleaned_data
        return {key: data[key] for key in ("name", "description", "source", "atol", "rtol", "device")}


class ProblemCreateForm(ProblemForm):
    """Adds an upload: a KernelBench problem file instead of pasted source."""

    source_file = forms.FileField(
        required=False,
        label="KernelBench problem file (.py)",
        widget=forms.ClearableFileInput(attrs={"accept": ".py,text/x-python,text/plain"}),
    )
    field_order = ["source_file", "name", "description", "source", "atol", "rtol", "device"]

    def clean_source_file(self):
        upload = self.cleaned_data.get("source_file")
        if not upload:
            return None
        too_large = size_error(upload.size)
        if too_large:
            raise ValidationError(f"{upload.name}: {too_large.message}")
        raw = upload.read()
        try:
            return upload.name, raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValidationError(
                f"{upload.name} is not UTF-8 text (byte {exc.start} cannot be decoded): upload the Python source file."
            ) from None

    def source_text(self, cleaned: dict) -> tuple[str, str]:
        uploaded = cleaned.get("source_file")
        pasted = cleaned.get("source") or ""
        if not uploaded:
            return pasted, "source"
        if pasted.strip():
            self.add_error("source", "You pasted source and uploaded a file: keep one of them.")
            return "", "source"
        filename, text = uploaded
        if not (cleaned.get("name") or "").strip():
            cleaned["name"] = PurePath(filename).stem.replace("_", " ").strip()
        return text, "source_file"


# === searches, kernels, ideas, sharing ==================================================


def setting_field(setting: Setting) -> forms.Field:
    """The form field of a search setting: its label, help, initial value and limits, a value outside
    them refused with the setting's own words (the services' and the command's)."""
    options = {"label": setting.label, "help_text": setting.help, "required": setting.required}
    if setting.type is not bool and setting.default not in (None, ""):  # 0 shows as 0, not as empty
        options["initial"] = setting.default
    if setting.type is bool:
        return forms.BooleanField(**{**options, "required": False})
    if setting.type is list:
        return forms.MultipleChoiceField(choices=setting.choices, widget=forms.CheckboxSelectMultiple,
                                         error_messages={"invalid_choice": setting.limits,
                                                         "invalid_list": setting.limits}, **options)
    choices = setting.choices or Search._meta.get_field(setting.name).choices
    if choices:
        return forms.ChoiceField(choices=choices, error_messages={"invalid_choice": setting.limits + "."}, **options)
    if setting.type is str:
        return forms.CharField(max_length=setting.max_length, **options)
    refused = setting.limits + "."
    validators = [_least_validator(setting)] if setting.least else []
    field = forms.IntegerField if setting.type is int else forms.FloatField
    return field(min_value=setting.low, max_value=setting.high, validators=validators, **options,
                 error_messages={"min_value": refused, "max_value": refused, "invalid": refused})


def _least_validator(setting: Setting):
    def validate(value):
        if value and 0 < value < setting.least:
            raise ValidationError(setting.least_limit + ".", code="least")
    return validate


class SearchKnobsBase(forms.Form):
    model_proposers = registry.names(takes_model=True)  # the LLM knobs show for these (static/js/search_form.js)

    def search_fields(self) -> dict:
        """The cleaned settings, an empty optional one as its default."""
        data = dict(self.cleaned_data)
        for name, value in data.items():
            if name in CONFIG.names and value in (None, ""):
                data[name] = CONFIG[name].default
        return data


# The knobs a search starts with and a fork may change: every setting but its name and device.
SearchKnobs = type(forms.Form)("SearchKnobs", (SearchKnobsBase,), {
    "__module__": __name__,
    **{s.name: setting_field(s) for s in CONFIG if s.name not in ("name", "device")},
})


class SearchStartForm(SearchKnobs):
    name = setting_field(CONFIG.name)
    device = setting_field(CONFIG.device)
    field_order = ["name", "proposer", "model", "effort", "device", "language"]


class SearchForkForm(SearchKnobs):
    """Fork options; the initial values are the source search's own."""

    @classmethod
    def for_search(cls, search: Search, data=None) -> "SearchForkForm":
        initial = {name: getattr(search, name) for name in cls.base_fields}
        return cls(data, initial=initial, prefix="fork")


class IdeaAddForm(forms.Form):
    parent_kernel = forms.UUIDField(label="Parent kernel", widget=forms.TextInput(attrs={"list": "parent-choices"}),
                                    help_text="The kernel this idea improves: pick one of the fastest, or paste "
                                              "the code of any kernel of this search.")
    title = forms.CharField(max_length=300)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 4, "class": "short"}), required=False)


class KernelSubmitForm(forms.Form):
    """A hand-written kernel, pasted or uploaded, parsed here (as the problem form parses a problem)
    so a syntax error is answered at once instead of after a trip through the queue."""

    source_file = forms.FileField(required=False, label="Kernel file (.py)",
                                  widget=forms.ClearableFileInput(attrs={"accept": ".py,text/x-python,text/plain"}))
    name = forms.CharField(max_length=200, required=False)
    parent = forms.UUIDField(required=False, label="Parent kernel (code, optional)")
    source = forms.CharField(widget=forms.Textarea(attrs={"rows": 22, "spellcheck": "false", "wrap": "off"}),
                             strip=False, required=False, label="Kernel source (a module defining ModelNew)")

    def clean_source_file(self):
        upload = self.cleaned_data.get("source_file")
        if not upload:
            return None
        if upload.size > settings.KERNEL_SOURCE_MAX_BYTES:
            raise ValidationError(f"{upload.name} is larger than {settings.KERNEL_SOURCE_MAX_BYTES:,} bytes.")
        try:
            return upload.name, upload.read().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValidationError(f"{upload.name} is not UTF-8 text (byte {exc.start} cannot be decoded): "
                                  "upload the Python source file.") from None

    def clean(self):
        cleaned = super().clean()
        uploaded, pasted = cleaned.get("source_file"), (cleaned.get("source") or "").replace("\r\n", "\n")
        if "source_file" in self.errors:
            return cleaned
        if uploaded and pasted.strip():
            self.add_error("source", "You pasted source and uploaded a file: keep one of them.")
            return cleaned
        field, source = ("source_file", uploaded[1]) if uploaded else ("source", pasted)
        if uploaded and not (cleaned.get("name") or "").strip():
            cleaned["name"] = PurePath(uploaded[0]).stem.replace("_", " ").strip()
        try:
            check_kernel_source(source)
        except ValidationError as error:
            self.add_error(field, error)
            return cleaned
        cleaned["source"] = source
        return cleaned


class ShareLinkForm(forms.Form):
    label = forms.CharField(max_length=200, required=False, help_text="Who the link is for; shown in the list.")


class CompareForm(forms.Form):
    a = forms.UUIDField(label="First kernel")
    b = forms.UUIDField(label="Second kernel")


# === suites =============================================================================

ZIP_MAX_BYTES = 20 * 1024 * 1024  # KernelBench's 250 problems zip to well under 1 MB


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one field (Django's FileField keeps only the last of them)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".py,.zip"}))
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        uploads = data if isinstance(data, (list, tuple)) else [data]
        return [super(MultipleFileField, self).clean(upload, initial) for upload in uploads if upload]


class SuiteImportForm(forms.Form):
    name = forms.CharField(max_length=200, label="Suite", help_text="A new name makes a suite; an existing one adds to it.")
    files = MultipleFileField(label="Problem files (.py) or a zip of them",
                              help_text="Up to 100 files at once (Django's limit per request); zip a whole level.")
    # Its initial value is what the workers here serve (selectors.default_device, set by the view).
    device = forms.ChoiceField(choices=Device.choices, initial=Device.CUDA,
                               help_text="KernelBench shapes are GPU-sized: CUDA where a CUDA worker serves.")
    validate = forms.BooleanField(required=False, label="Queue their validation now",
                                  help_text="Otherwise they are stored, not yet validated; validate them from the suite page.")

    def clean_files(self):
        uploads = self.cleaned_data.get("files") or []
        if not uploads:
            raise ValidationError("Choose one or more .py files, or a zip of them.")
        for upload in uploads:
            if upload.name.endswith(".zip") and upload.size > ZIP_MAX_BYTES:
                raise ValidationError(f"{upload.name} is {upload.size // (1024 * 1024)} MB; a zip may be 20 MB at most.")
        return uploads
