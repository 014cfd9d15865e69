"""Problems that download models from the Hugging Face Hub when they run (KernelBench level 4:
`AutoModel...from_pretrained("google/...")`). The evaluator's sandbox has no network, so such a
problem can never validate unless its models are already on disk where the sandbox reads them:
the folder named by HF_HUB_CACHE (the runner passes it and HF_HUB_OFFLINE into the sandbox), in
the Hub's cache layout (`models--ORG--NAME`). Read from the syntax tree, never run."""

import ast
import os
from pathlib import Path

from django.core.exceptions import ValidationError


def hub_models(source: str) -> list[str]:
    """Model names passed to `from_pretrained`, as literals or through a module-level name."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}
    names = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "from_pretrained" and node.args):
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
            elif isinstance(first, ast.Name) and first.id in constants:
                names.add(constants[first.id])
            else:
                names.add("(a model named at run time)")
    return sorted(names)


def hub_refusal(source: str) -> ValidationError | None:
    """Why the problem cannot run in the sandbox (models it would download), or None."""
    models = hub_models(source)
    cache = os.environ.get("HF_HUB_CACHE", "")
    missing = [m for m in models if not cache or not (Path(cache) / f"models--{m.replace('/', '--')}").is_dir()]
    if not missing:
        return None
    return ValidationError(
        f"it downloads {', '.join(missing)} from the Hugging Face Hub when it runs, and the evaluator's sandbox has "
        "no network, so it could never validate. To import it, download the models on the evaluator host into a "
        "folder the sandbox can read (not under ~/.cache, which it hides) and set HF_HUB_CACHE to that folder and "
        "HF_HUB_OFFLINE=1 for the import and the evaluator.", code="hub_download")
