"""The wire shapes rein's threads speak, as types: the one description of the protocol.

The feed (:mod:`.feed`), the thread shape (:mod:`.threads`) and the app-server's handlers
build these values; ``rein app-server generate-json-schema`` writes the JSON Schema of
exactly these types (:mod:`rein.appserver.schema`), and the tests validate what the server
sends against that schema as well as against Codex's own models. Names and spellings are
Codex's (app-server v2, 0.163.0); a field rein never sends is not declared.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

CODEX_VERSION = "0.163.0"
"""The Codex app-server release whose protocol rein speaks: what ``initialize`` reports as
the server's version (``serverInfo``), by which a Codex client decides what it may send."""


class TextInput(TypedDict):
    type: Literal["text"]
    text: str


class MentionInput(TypedDict):
    type: Literal["mention"]
    name: str
    path: str  # a graph turn when it names an .agraph.yaml / .yml / .json file


UserInput = TextInput | MentionInput
ItemStatus = Literal["inProgress", "completed", "failed", "declined"]


class UserMessageItem(TypedDict):
    type: Literal["userMessage"]
    id: str
    content: list[UserInput]


class AgentMessageItem(TypedDict):
    type: Literal["agentMessage"]
    id: str
    text: str
    phase: Literal["commentary", "final_answer"]


class ReasoningItem(TypedDict):
    type: Literal["reasoning"]
    id: str
    summary: list[str]
    content: list[str]


class PlanItem(TypedDict):
    type: Literal["plan"]
    id: str
    text: str


class ReadAction(TypedDict):
    type: Literal["read"]
    command: str
    name: str
    path: str


class ListFilesAction(TypedDict):
    type: Literal["listFiles"]
    command: str
    path: str | None


class SearchAction(TypedDict):
    type: Literal["search"]
    command: str
    query: str
    path: str | None


class UnknownAction(TypedDict):
    type: Literal["unknown"]
    command: str


CommandAction = ReadAction | ListFilesAction | SearchAction | UnknownAction


class CommandExecutionItem(TypedDict):
    type: Literal["commandExecution"]
    id: str
    command: str
    cwd: str
    commandActions: list[CommandAction]
    status: ItemStatus
    source: Literal["agent"]
    aggregatedOutput: NotRequired[str]
    exitCode: NotRequired[int | None]
    durationMs: NotRequired[int]


class ChangeKind(TypedDict):
    type: Literal["add", "update"]


class FileChange(TypedDict):
    path: str
    kind: ChangeKind
    diff: str


class FileChangeItem(TypedDict):
    type: Literal["fileChange"]
    id: str
    changes: list[FileChange]
    status: ItemStatus


class McpToolCallItem(TypedDict):
    type: Literal["mcpToolCall"]
    id: str
    server: Literal["rein"]
    tool: str
    arguments: dict[str, Any]
    status: ItemStatus
    durationMs: NotRequired[int]
    result: NotRequired[dict[str, Any]]
    error: NotRequired[dict[str, str]]


class HookPromptFragment(TypedDict):
    hookRunId: str
    text: str


class HookPromptItem(TypedDict):  # what SessionStart hooks added to the model's context
    type: Literal["hookPrompt"]
    id: str
    fragments: list[HookPromptFragment]


class ContextCompactionItem(TypedDict):  # the conversation was summarised to fit
    type: Literal["contextCompaction"]
    id: str


ThreadItem = (UserMessageItem | AgentMessageItem | ReasoningItem | PlanItem
              | CommandExecutionItem | FileChangeItem | McpToolCallItem | HookPromptItem
              | ContextCompactionItem)


class TurnError(TypedDict):
    message: str
    additionalDetails: NotRequired[str]  # how to go on (the hint of rein's coded error)


class Turn(TypedDict):
    id: str
    items: list[ThreadItem]
    status: Literal["inProgress", "completed", "interrupted", "failed"]
    error: NotRequired[TurnError | None]
    startedAt: NotRequired[int]
    completedAt: NotRequired[int]
    durationMs: NotRequired[int]


class ThreadStatus(TypedDict):
    type: Literal["idle", "active"]
    activeFlags: NotRequired[list[Literal["waitingOnApproval"]]]


class Thread(TypedDict):
    id: str
    sessionId: str
    preview: str
    ephemeral: bool
    modelProvider: str
    createdAt: int
    updatedAt: int
    status: ThreadStatus
    path: None
    cwd: str
    cliVersion: str
    source: Literal["appServer"]
    name: str | None
    forkedFromId: str | None
    projectId: None  # rein assigns threads to no project
    turns: list[Turn]


class SandboxPolicy(TypedDict):
    type: Literal["readOnly", "workspaceWrite", "dangerFullAccess", "externalSandbox"]
    networkAccess: NotRequired[bool | Literal["restricted", "enabled"]]
    writableRoots: NotRequired[list[str]]
    excludeTmpdirEnvVar: NotRequired[bool]
    excludeSlashTmp: NotRequired[bool]


ApprovalPolicy = Literal["untrusted", "on-failure", "on-request", "never"]


# -- notifications (server → client) ----------------------------------------------------

class ThreadStartedNotification(TypedDict):
    thread: Thread


class ThreadStatusChangedNotification(TypedDict):
    threadId: str
    status: ThreadStatus


class ThreadIdNotification(TypedDict):  # thread/archived, thread/unarchived
    threadId: str


class ThreadNameUpdatedNotification(TypedDict):
    threadId: str
    threadName: str | None


class TurnNotification(TypedDict):  # turn/started, turn/completed
    threadId: str
    turnId: NotRequired[str]
    turn: Turn


class ItemStartedNotification(TypedDict):
    threadId: str
    turnId: str
    item: ThreadItem
    startedAtMs: int


class ItemCompletedNotification(TypedDict):
    threadId: str
    turnId: str
    item: ThreadItem
    completedAtMs: int


class DeltaNotification(TypedDict):  # agentMessage, plan, commandExecution output deltas
    threadId: str
    turnId: str
    itemId: str
    delta: str


class TokenUsageBreakdown(TypedDict):
    inputTokens: int
    cachedInputTokens: int
    outputTokens: int
    reasoningOutputTokens: int
    totalTokens: int


class TokenUsage(TypedDict):
    total: TokenUsageBreakdown
    last: TokenUsageBreakdown


class TokenUsageNotification(TypedDict):
    threadId: str
    turnId: str
    tokenUsage: TokenUsage


class PlanStep(TypedDict):
    step: str
    status: Literal["pending", "inProgress", "completed"]


class TurnPlanUpdatedNotification(TypedDict):
    threadId: str
    turnId: str
    plan: list[PlanStep]


class TurnDiffUpdatedNotification(TypedDict):
    threadId: str
    turnId: str
    diff: str


class ServerRequestResolvedNotification(TypedDict):
    threadId: str
    turnId: NotRequired[str]
    requestId: str


class ErrorNotification(TypedDict):
    threadId: str
    turnId: str
    error: TurnError
    willRetry: bool


class ReasoningSummaryPartAddedNotification(TypedDict):
    threadId: str
    turnId: str
    itemId: str
    summaryIndex: int


class ReasoningSummaryTextDeltaNotification(TypedDict):
    threadId: str
    turnId: str
    itemId: str
    summaryIndex: int
    delta: str


class HookOutputEntry(TypedDict):
    kind: Literal["warning", "stop", "feedback", "context", "error"]
    text: str


class HookRunSummary(TypedDict):  # one run of a hook of rein.toml or of the profile
    id: str
    eventName: Literal["preToolUse", "postToolUse", "preCompact", "sessionStart",
                       "sessionEnd"]
    handlerType: Literal["command"]
    executionMode: Literal["sync"]
    scope: Literal["turn"]  # a turn's node attempt is the hook's session
    source: Literal["unknown"]  # where it is defined is sourcePath
    sourcePath: str
    displayOrder: int
    startedAt: int
    completedAt: NotRequired[int]
    durationMs: NotRequired[int]
    status: Literal["running", "completed", "failed", "blocked"]
    statusMessage: str | None
    entries: list[HookOutputEntry]


class HookNotification(TypedDict):  # hook/started, hook/completed
    threadId: str
    turnId: str
    run: HookRunSummary


class WarningNotification(TypedDict):
    threadId: NotRequired[str]
    message: str


NOTIFICATIONS: dict[str, type] = {
    "thread/started": ThreadStartedNotification,
    "thread/status/changed": ThreadStatusChangedNotification,
    "thread/archived": ThreadIdNotification,
    "thread/unarchived": ThreadIdNotification,
    "thread/name/updated": ThreadNameUpdatedNotification,
    "thread/tokenUsage/updated": TokenUsageNotification,
    "turn/started": TurnNotification,
    "turn/completed": TurnNotification,
    "turn/plan/updated": TurnPlanUpdatedNotification,
    "turn/diff/updated": TurnDiffUpdatedNotification,
    "item/started": ItemStartedNotification,
    "item/completed": ItemCompletedNotification,
    "item/agentMessage/delta": DeltaNotification,
    "item/plan/delta": DeltaNotification,
    "item/commandExecution/outputDelta": DeltaNotification,
    "item/reasoning/summaryPartAdded": ReasoningSummaryPartAddedNotification,
    "item/reasoning/summaryTextDelta": ReasoningSummaryTextDeltaNotification,
    "hook/started": HookNotification,
    "hook/completed": HookNotification,
    "serverRequest/resolved": ServerRequestResolvedNotification,
    "error": ErrorNotification,
    "warning": WarningNotification,
}
"""Every notification method rein sends, with the type of its params."""
