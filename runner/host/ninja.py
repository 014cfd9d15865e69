"""What a build.ninja says a build reads and makes: the paths of its `build` statements.

torch's cpp_extension writes one build.ninja per extension (`build main.o: compile /abs/main.cpp`,
`build ext.so: link main.o`), and the build cache (buildcache.py) keeps only the files named
there. The text comes from a sandbox, so it is parsed as data: only ninja's own escapes (`$ `,
`$:`, `$$`, `$` at a line's end) are understood; a path that uses a variable cannot be known
without evaluating the file and is reported as unknown, never guessed.
"""

from __future__ import annotations

UNKNOWN = None  # a path token with a $variable in it


class Statement:
    """One `build` line: its outputs (explicit and implicit) and inputs (all kinds)."""

    def __init__(self, outputs: list[str | None], rule: str, inputs: list[str | None]):
        self.outputs, self.rule, self.inputs = outputs, rule, inputs


def statements(text: str) -> list[Statement]:
    """Every `build` statement of a build.ninja, in order."""
    found = []
    for line in _logical_lines(text):
        if not line.startswith("build "):
            continue  # rules, variables, `default`, comments and indented bindings name no files
        tokens = _tokens(line[len("build "):])
        if ":" not in tokens:
            continue
        split = tokens.index(":")
        outputs = [t for t in tokens[:split] if t != "|"]
        rest = tokens[split + 1:]
        if not outputs or not rest or rest[0] in (":", "|", "||", "|@", UNKNOWN):
            continue
        inputs = [t for t in rest[1:] if t not in ("|", "||", "|@", ":")]
        found.append(Statement(outputs, rest[0], inputs))
    return found


def _logical_lines(text: str):
    """Lines with ninja's `$` continuations joined (a `$` that ends a line escapes the newline)."""
    pending = ""
    for raw in text.split("\n"):
        body = raw.rstrip("\r")
        trailing = len(body) - len(body.rstrip("$"))
        if trailing % 2 == 1:  # an odd run of `$` at the end: the last one escapes the newline
            pending += body[:-1]
            continue
        yield pending + body
        pending = ""
    if pending:
        yield pending


def _tokens(text: str) -> list[str | None]:
    """Space-separated tokens; a bare `:` becomes its own token; `$ `, `$:`, `$$` are literals;
    a token holding any other `$` is UNKNOWN."""
    tokens: list[str | None] = []
    current, unknown, started, i = [], False, False, 0

    def close():
        nonlocal current, unknown, started
        if started:
            tokens.append(UNKNOWN if unknown else "".join(current))
        current, unknown, started = [], False, False

    while i < len(text):
        char = text[i]
        if char == "$" and i + 1 < len(text):
            following = text[i + 1]
            if following in " :$":
                current.append(following)
            else:
                unknown = True
            started, i = True, i + 2
            continue
        if char == "$":
            unknown, started = True, True
        elif char in " \t":
            close()
        elif char == ":":
            close()
            tokens.append(":")
        else:
            current.append(char)
            started = True
        i += 1
    close()
    return tokens
