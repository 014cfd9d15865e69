"""Sources judged once per search: a candidate whose source (comments, blank lines and spacing aside)
a kernel of the same search already had judged takes that verdict, marked as the duplicate it is,
and is never queued again. Models reproduce their parent or a sibling more often than one would
think; each such run costs a sandbox, a compile and a timing loop, and ranks noise."""

import hashlib
import io
import tokenize

from searches.models import Kernel, Verdict

# Verdicts another identical source may take: the runner's own decisions, not an infrastructure failure.
FINAL = (Verdict.CORRECT, Verdict.INCORRECT, Verdict.REJECTED, Verdict.RUNTIME_ERROR, Verdict.TIMEOUT,
         Verdict.COMPILE_ERROR, Verdict.CRASHED, Verdict.OOM)


def source_hash(source: str) -> str:
    """The hash of the source's tokens, comments and layout left out (its text, if it does not tokenize)."""
    try:
        tokens = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                    tokenize.DEDENT, tokenize.ENDMARKER)]
        text = "\x00".join(tokens)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        text = "\n".join(line.rstrip() for line in source.splitlines() if line.strip())
    return hashlib.sha256(text.encode()).hexdigest()


def judged_twin(search_id: int, digest: str) -> Kernel | None:
    """The search's earliest kernel of this source with a final verdict (itself never a duplicate)."""
    return (Kernel.objects.filter(search_id=search_id, source_hash=digest, status__in=FINAL, duplicate_of__isnull=True)
            .order_by("id").first())
