from pathlib import PurePath

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from proposers.prompts import LANGUAGES

from .models import Device, Search
from .services.searches import SEARCH_EFFORTS
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


LANGUAGE_CHOICES = [("", "The device's default (CUDA through NVRTC; C on the CPU)")] + [
    (key, label) for key, (label, _, _) in LANGUAGES.items()]
EFFORT_CHOICES = [("", "The model's default")] + [(e, e) for e in SEARCH_EFFORTS]


class SearchKnobs(forms.Form):
    """The knobs a search starts with and a fork may change: proposer, model, effort, language,
    the method's R/B/I/K, repairs, the library rule and the budgets."""

    proposer = forms.ChoiceField(choices=Search.Proposer.choices, initial=Search.Proposer.PLAYBOOK)
    model = forms.CharField(max_length=100, required=False, label="Model",
                            help_text="LLM model name for the Anthropic proposer; empty: the configured default.")
    ideas_model = forms.CharField(max_length=100, required=False, label="Ideas model",
                                  help_text="A model for the ideas calls; empty: the model above.")
    kernel_model = forms.CharField(max_length=100, required=False, label="Kernels model",
                                   help_text="A model for the kernel calls; empty: the model above.")
    repair_model = forms.CharField(max_length=100, required=False, label="Repairs model",
                                   help_text="A model for the repair calls; empty: the model above.")
    effort = forms.ChoiceField(choices=EFFORT_CHOICES, required=False, label="Effort (Anthropic)")
    thinking_tokens = forms.IntegerField(min_value=0, max_value=64000, initial=0, required=False,
                                         label="Thinking budget (tokens, Anthropic)",
                                         help_text="The model reasons before each reply; 0: off, else at least 1024.")
    agent_mode = forms.BooleanField(required=False, label="Agent mode (Anthropic)",
                                    help_text="Kernel calls may compile, check and profile drafts in the sandbox "
                                              "before submitting; each run counts as a candidate.")
    agent_tool_calls = forms.IntegerField(min_value=1, max_value=20, initial=4, required=False,
                                          label="Tool calls per kernel (agent mode)")
    language = forms.ChoiceField(choices=LANGUAGE_CHOICES, required=False, label="Kernel language",
                                 help_text="Stated in every prompt; it must fit the device.")
    rounds = forms.IntegerField(min_value=1, max_value=50, initial=5, label="Rounds (R)")
    parents_per_round = forms.IntegerField(min_value=1, max_value=20, initial=2, label="Parents per round (B)")
    ideas_per_parent = forms.IntegerField(min_value=1, max_value=20, initial=3, label="Ideas per parent (I)")
    kernels_per_idea = forms.IntegerField(min_value=1, max_value=20, initial=2, label="Kernels per idea (K)")
    bank_size = forms.IntegerField(min_value=0, max_value=50, initial=2, label="Bank of earlier good kernels")
    repair_attempts = forms.IntegerField(min_value=0, max_value=5, initial=1, required=False, label="Repair turns per failed kernel",
                                         help_text="Each gets the runner's verdict, reason and log (LLM only).")
    profiled_kernels = forms.IntegerField(min_value=0, max_value=20, initial=2, required=False,
                                          label="Profiled kernels per round",
                                          help_text="The fastest correct kernels whose profile the next ideas see.")
    stale_rounds = forms.IntegerField(min_value=0, max_value=50, initial=0, required=False, label="Stop after rounds without gain",
                                      help_text="0: run every round.")
    sol_stop_percent = forms.IntegerField(min_value=0, max_value=100, initial=0, required=False,
                                          label="Stop a branch at % of speed of light",
                                          help_text="e.g. 90: a kernel at 90% of its floor gets no more ideas; 0: never.")
    allow_library = forms.BooleanField(required=False, label="Allow library calls (cuBLAS, torch ops) in kernels")
    prior_weight = forms.IntegerField(min_value=0, max_value=100, initial=50, required=False,
                                      label="How much the team's priors may steer (%)",
                                      help_text="Ideas calls see what worked on similar problems and ideas are "
                                                "ranked by it; 0: the bank off.")
    seed_from_team = forms.BooleanField(required=False, label="Start from the team's memory",
                                        help_text="The best trusted kernels of similar problems are judged here "
                                                  "first, and the first ideas call is offered the playbook's recipes.")
    stop_points_per_dollar = forms.FloatField(min_value=0, initial=0, required=False,
                                              label="Stop under this gain per dollar (points)",
                                              help_text="Ends the search once its last 2 rounds bought fewer percent "
                                                        "points of speedup per dollar; 0: never.")
    private = forms.BooleanField(required=False, label="Private",
                                 help_text="Its results stay out of other people's priors and Ideas page.")
    max_candidates = forms.IntegerField(min_value=1, required=False, label="Budget: candidates")
    max_tokens = forms.IntegerField(min_value=1, required=False, label="Budget: tokens")
    max_cost_usd = forms.FloatField(min_value=0.01, required=False, label="Budget: cost (USD)")

    def search_fields(self) -> dict:
        data = dict(self.cleaned_data)
        for key, default in (("effort", ""), ("language", ""), ("repair_attempts", 1), ("profiled_kernels", 2),
                             ("stale_rounds", 0), ("sol_stop_percent", 0), ("thinking_tokens", 0), ("ideas_model", ""),
                             ("kernel_model", ""), ("repair_model", ""), ("agent_tool_calls", 4), ("prior_weight", 50),
                             ("stop_points_per_dollar", 0.0)):
            if data.get(key) in (None, ""):
                data[key] = default
        return data


class SearchStartForm(SearchKnobs):
    name = forms.CharField(max_length=200, required=False, help_text="Optional: a name to find it by.")
    device = forms.ChoiceField(choices=Device.choices, initial=Device.CPU)
    private = forms.BooleanField(required=False, label="Keep its lessons to me",
                                 help_text="Its lessons reach only your own searches and pages, not the team's.")
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
