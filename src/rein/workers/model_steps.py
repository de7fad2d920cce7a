"""The typed step records of a model attempt: what its loop produces, one record per step.

:func:`rein.workers.model_attempt.steps` yields these; the model worker turns each into the
:class:`~rein.workers.base.Item` records the engine persists (:meth:`Step.items`), so the
trace, the console and the protocol surfaces all read one stream. Two records end the
stream: :class:`Finished` (the attempt's result) and :class:`Paused` (a tool call waits for a
person; its conversation is already saved). Every text a record carries is already redacted:
a record never holds a secret the node was handed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.core.frozen import Frozen
from rein.core.usage import Usage
from rein.workers.base import AttemptResult, Item, ItemKind
from rein.workers.spend import usage_json


class Noted(Frozen):
    """Something the attempt records for the reader of the trace (permissions, sandbox,
    an unenforceable budget, a resume)."""

    data: Mapping[str, Any]

    def items(self) -> tuple[Item, ...]:
        return (Item(kind=ItemKind.NOTICE, data=self.data),)


class ModelTurn(Frozen):
    """One model call answered: what it cost and what the model said (redacted)."""

    usage: Usage
    model: str  # the model the vendor says answered
    text: str
    tool_calls: int  # how many tool calls the answer makes
    reasoning: str = ""  # the vendor's summary of the model's reasoning (redacted)

    def items(self) -> tuple[Item, ...]:
        out = [Item(kind=ItemKind.USAGE, data=usage_json(self.usage, self.model))]
        if self.reasoning:
            out.append(Item(kind=ItemKind.REASONING, data={"text": self.reasoning}))
        if self.text:
            out.append(Item(kind=ItemKind.MESSAGE, data={"role": "assistant",
                                                         "text": self.text}))
        return tuple(out)


class ToolDecided(Frozen):
    """The model decided to call a tool; recorded before the call is checked or run."""

    id: str
    name: str
    arguments: Mapping[str, Any]  # redacted

    def items(self) -> tuple[Item, ...]:
        data = {"id": self.id, "name": self.name, "arguments": self.arguments}
        return (Item(kind=ItemKind.TOOL_CALL, data=data),)


class ToolReturned(Frozen):
    """What a tool call gave the model: its content, or why it was refused."""

    id: str
    ok: bool
    content: str
    refused: bool | None = None  # None: the submission, which is never refused
    hook: str | None = None  # the hook that blocked or skipped the call, when one did

    def items(self) -> tuple[Item, ...]:
        data: dict[str, Any] = {"id": self.id, "ok": self.ok}
        if self.refused is not None:
            data["refused"] = self.refused
        if self.hook is not None:
            data["hook"] = self.hook
        data["content"] = self.content
        return (Item(kind=ItemKind.TOOL_RESULT, data=data),)


class HookRan(Frozen):
    """A lifecycle hook started or ended (:mod:`rein.tools.hooks`); its data is redacted."""

    started: bool
    data: Mapping[str, Any]

    def items(self) -> tuple[Item, ...]:
        kind = ItemKind.HOOK_STARTED if self.started else ItemKind.HOOK_COMPLETED
        return (Item(kind=kind, data=self.data),)


class HookPrompt(Frozen):
    """Text ``SessionStart`` hooks added to the brief (redacted): the trace shows what the
    model was told beyond the graph (tool-event context is in the tool result itself)."""

    text: str

    def items(self) -> tuple[Item, ...]:
        return (Item(kind=ItemKind.HOOK_PROMPT, data={"text": self.text}),)


class Compacted(Frozen):
    """The conversation neared the context window and was replaced by the model's summary;
    the messages it replaced are kept in the record (redacted)."""

    data: Mapping[str, Any]

    def items(self) -> tuple[Item, ...]:
        return (Item(kind=ItemKind.CONTEXT_COMPACTION, data=self.data),)


class Paused(Frozen):
    """A tool call waits for a person's answer; the conversation is saved in the store."""

    approval_id: str
    tool: str

    def items(self) -> tuple[Item, ...]:
        return ()


class Finished(Frozen):
    """The attempt ended, with its outputs or its failure."""

    result: AttemptResult

    def items(self) -> tuple[Item, ...]:
        return ()


Step = (Noted | ModelTurn | ToolDecided | ToolReturned | HookRan | HookPrompt | Compacted
        | Paused | Finished)
"""Every record the loop yields; :class:`Finished` and :class:`Paused` are the last one."""
