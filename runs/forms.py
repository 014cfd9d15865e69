from django import forms
from django.core.exceptions import ValidationError

from searches.config import MORE_BASELINES
from searches.forms import ZIP_MAX_BYTES

from .models import Rule


class RejudgeForm(forms.Form):
    """A KernelBench runs folder, zipped, judged as one run of the suite."""

    name = forms.CharField(max_length=200, label="Run name")
    archive = forms.FileField(label="The runs folder, zipped",
                              help_text="level_1_problem_19_sample_0_kernel.py files (sample ids kept), or the older "
                                        "level1/19_ReLU/kernel.py and N_....py layouts.")
    allow_library = forms.BooleanField(required=False, label="Allow library calls (KernelBench allows them)")
    rule = forms.ChoiceField(choices=Rule.choices, initial=Rule.KERNELLAB, required=False, label="Correctness rule",
                             help_text="KernelBench's: the fp32 reference on the same device, allclose, 5 trials, "
                                       "both models built under one seed; its kernels stay out of KernelLab's "
                                       "rankings.")

    baselines = forms.MultipleChoiceField(choices=MORE_BASELINES, required=False, widget=forms.CheckboxSelectMultiple,
                                          label="More baselines",
                                          help_text="Timed by the runner beside eager and torch.compile's default; "
                                                    "CUDA-only ones are skipped on the CPU, with the reason.")

    def clean_rule(self):
        return self.cleaned_data.get("rule") or Rule.KERNELLAB

    def clean_archive(self):
        archive = self.cleaned_data["archive"]
        if not archive.name.endswith(".zip"):
            raise ValidationError("Upload a .zip of the runs folder.")
        if archive.size > ZIP_MAX_BYTES:
            raise ValidationError(f"The zip is {archive.size // (1024 * 1024)} MB; a zip may be 20 MB at most.")
        return archive
