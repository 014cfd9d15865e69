"""Proposers: where ideas and kernel sources come from. `base` is the interface the engine
talks to, `registry` makes one by name, `anthropic` calls the Messages API with the prompts of
`prompts`, `playbook` adapts the offline playbook package, `pricing` turns tokens into USD."""
