"""The requests of rein's threads protocol, as types: the questions the server asks (and
their answers) and the client requests it answers (and their results). With
:mod:`.shapes` (threads, turns, items, notifications), what ``rein app-server
generate-json-schema`` writes (:mod:`rein.appserver.schema`).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from rein.protocol.shapes import (
    ApprovalPolicy,
    CommandAction,
    SandboxPolicy,
    Thread,
    Turn,
    UserInput,
)

# -- server requests (server → client) and their responses ------------------------------

class CommandExecutionRequestApprovalParams(TypedDict):
    threadId: str
    turnId: str
    itemId: str
    startedAtMs: int
    reason: str
    command: str
    cwd: str
    kind: Literal["command"]
    commandActions: list[CommandAction]
    availableDecisions: list[Literal["accept", "acceptForSession", "decline", "cancel"]]


class FileChangeRequestApprovalParams(TypedDict):
    threadId: str
    turnId: str
    itemId: str
    startedAtMs: int
    reason: str


class RequestedPermissions(TypedDict):
    network: None
    fileSystem: None


class PermissionsRequestApprovalParams(TypedDict):
    threadId: str
    turnId: str
    itemId: str
    startedAtMs: int
    reason: str
    cwd: str
    permissions: RequestedPermissions


class QuestionOption(TypedDict):
    label: Literal["accept", "decline", "cancel"]
    description: str


class Question(TypedDict):
    id: str
    header: str
    question: str
    isOther: bool
    isSecret: bool
    options: list[QuestionOption]


class ValueQuestion(TypedDict):  # a value a gate takes, after the decision (.fields)
    id: str  # value:<name>
    header: str
    question: str
    isOther: Literal[True]
    isSecret: bool
    options: None


class ToolRequestUserInputParams(TypedDict):
    threadId: str
    turnId: str
    itemId: str
    isBlocking: bool
    questions: list[Question | ValueQuestion]  # the decision first


Decision = Literal["accept", "acceptForSession", "decline", "cancel"]


class DecisionResponse(TypedDict):
    decision: Decision | dict[str, Any]  # an amendment variant is taken as accept


class UserInputAnswer(TypedDict):
    answers: list[str]


class ToolRequestUserInputResponse(TypedDict):
    answers: dict[str, UserInputAnswer]


class PermissionsResponse(TypedDict):
    permissions: dict[str, Any]
    scope: NotRequired[Literal["turn", "session"]]


SERVER_REQUESTS: dict[str, tuple[type, type]] = {
    "item/commandExecution/requestApproval": (CommandExecutionRequestApprovalParams,
                                              DecisionResponse),
    "item/fileChange/requestApproval": (FileChangeRequestApprovalParams, DecisionResponse),
    "item/permissions/requestApproval": (PermissionsRequestApprovalParams,
                                         PermissionsResponse),
    "item/tool/requestUserInput": (ToolRequestUserInputParams, ToolRequestUserInputResponse),
}
"""Every question rein asks: the method, the type of its params and of the answer."""


# -- client requests (client → server) and their results --------------------------------

class ClientInfo(TypedDict):
    name: str
    version: str
    title: NotRequired[str | None]


class Capabilities(TypedDict, total=False):
    experimentalApi: bool
    optOutNotificationMethods: list[str]


class InitializeParams(TypedDict):
    clientInfo: ClientInfo
    capabilities: NotRequired[Capabilities | None]


class ServerInfo(TypedDict):
    name: Literal["rein"]
    version: str  # the Codex release whose protocol rein speaks (shapes.CODEX_VERSION)


class InitializeResponse(TypedDict):
    userAgent: str  # rein/<version>: the official client needs name/version
    serverInfo: ServerInfo
    codexHome: str
    platformFamily: str
    platformOs: str


class ThreadStartParams(TypedDict, total=False):
    cwd: str | None
    sandbox: Literal["read-only", "workspace-write", "danger-full-access"] | None
    approvalPolicy: ApprovalPolicy | None
    approvalsReviewer: str | None
    ephemeral: Literal[False] | None  # every rein thread is durable (THREAD007)
    config: dict[str, Any] | None  # "rein.profile": an OAP profile, workspace-relative


class ThreadSessionResponse(TypedDict):  # thread/start, thread/resume, thread/fork
    thread: Thread
    model: str
    modelProvider: str
    cwd: str
    approvalPolicy: ApprovalPolicy
    approvalsReviewer: Literal["user"]
    sandbox: SandboxPolicy


class ThreadIdParams(TypedDict):  # resume, fork, archive, unarchive
    threadId: str


class ThreadReadParams(TypedDict):
    threadId: str
    includeTurns: NotRequired[bool]


class ThreadReadResponse(TypedDict):  # thread/read, thread/unarchive
    thread: Thread


class ThreadListParams(TypedDict, total=False):
    archived: bool | None
    cwd: str | None
    searchTerm: str | None
    cursor: str | None
    limit: int | None


class ThreadListResponse(TypedDict):
    data: list[Thread]
    nextCursor: str | None


class ThreadSetNameParams(TypedDict):
    threadId: str
    name: str


class EmptyResponse(TypedDict):
    pass


class TurnStartParams(TypedDict):  # each override holds for this turn and the next
    threadId: str
    input: list[UserInput]
    sandboxPolicy: NotRequired[SandboxPolicy | None]
    approvalPolicy: NotRequired[ApprovalPolicy | None]
    model: NotRequired[str | None]  # one a [tiers.<tier>] route serves (THREAD007)
    cwd: NotRequired[str | None]  # inside the workspace (THREAD002)
    approvalsReviewer: NotRequired[Literal["user"] | None]
    clientUserMessageId: NotRequired[str | None]
    parentTurnId: NotRequired[str | None]
    rootTurnId: NotRequired[str | None]
    turnTrigger: NotRequired[str | None]


class TurnStartResponse(TypedDict):
    turn: Turn


class TurnInterruptParams(TypedDict):
    threadId: str
    turnId: str


class TurnSteerParams(TypedDict):
    threadId: str
    input: list[UserInput]
    expectedTurnId: str  # the active turn: anything else is refused (THREAD005)
    clientUserMessageId: NotRequired[str | None]


class TurnSteerResponse(TypedDict):
    turnId: str


class PageParams(TypedDict, total=False):  # model/list, thread/loaded/list
    cursor: str | None
    limit: int | None
    includeHidden: bool | None


class Model(TypedDict):  # a tier's model (rein asks no reasoning effort)
    id: str
    model: str
    displayName: str
    description: str
    hidden: bool
    isDefault: bool
    defaultReasoningEffort: Literal["none"]
    supportedReasoningEfforts: list[Any]
    inputModalities: list[Literal["text"]]


class ModelListResponse(TypedDict):
    data: list[Model]
    nextCursor: str | None


class AccountReadParams(TypedDict, total=False):
    refreshToken: bool


class AccountReadResponse(TypedDict):
    account: None  # rein holds no Codex login: its providers have their own keys
    requiresOpenaiAuth: Literal[False]


class ThreadLoadedListResponse(TypedDict):
    data: list[str]
    nextCursor: str | None


class ThreadUnsubscribeResponse(TypedDict):
    status: Literal["notLoaded", "notSubscribed", "unsubscribed"]


class ThreadTurnsListParams(TypedDict):
    threadId: str
    cursor: NotRequired[str | None]
    limit: NotRequired[int | None]
    sortDirection: NotRequired[Literal["asc", "desc"] | None]
    itemsView: NotRequired[Literal["notLoaded", "summary", "full"] | None]


class ThreadTurnsListResponse(TypedDict):
    data: list[Turn]
    nextCursor: str | None
    backwardsCursor: str | None


class ConfigReadParams(TypedDict, total=False):
    cwd: str | None
    includeLayers: bool


class ReinConfig(TypedDict):  # Codex's Config: what a new thread gets
    model: str | None
    model_provider: str | None
    approval_policy: ApprovalPolicy
    sandbox_mode: Literal["workspace-write"]


class ConfigReadResponse(TypedDict):
    config: ReinConfig
    origins: dict[str, Any]
    layers: None


class SkillsListParams(TypedDict, total=False):
    cwds: list[str]
    forceReload: bool


class SkillsListEntry(TypedDict):
    cwd: str
    skills: list[Any]  # always empty: rein has no skills
    errors: list[Any]


class SkillsListResponse(TypedDict):
    data: list[SkillsListEntry]


class FuzzyFileSearchParams(TypedDict):
    query: str
    roots: list[str]  # inside the workspace
    cancellationToken: NotRequired[str | None]


class FuzzyFileSearchResult(TypedDict):
    root: str
    path: str
    file_name: str
    match_type: Literal["file"]
    score: int
    indices: list[int]


class FuzzyFileSearchResponse(TypedDict):
    files: list[FuzzyFileSearchResult]


class HooksListParams(TypedDict, total=False):
    cwds: list[str]


class HookMetadata(TypedDict):  # one event of one [hooks.NAME] table of rein.toml
    key: str  # NAME:Event
    eventName: Literal["preToolUse", "postToolUse", "preCompact", "sessionStart",
                       "sessionEnd"]
    handlerType: Literal["command"]
    command: str
    matcher: str | None
    timeoutSec: int
    source: Literal["project", "user"]
    sourcePath: str
    enabled: Literal[True]
    isManaged: Literal[False]
    currentHash: str
    displayOrder: int
    trustStatus: Literal["trusted"]  # the configuration holds trusted hooks only
    pluginId: None
    statusMessage: None


class HooksListEntry(TypedDict):
    cwd: str
    hooks: list[HookMetadata]
    warnings: list[str]
    errors: list[Any]


class HooksListResponse(TypedDict):
    data: list[HooksListEntry]


class McpServerStatusListParams(TypedDict, total=False):
    threadId: str | None
    serverName: str | None
    cursor: str | None
    limit: int | None
    detail: Literal["full", "toolsAndAuthOnly"] | None


class McpServerStatus(TypedDict):  # a server an editor's session launched (ACP)
    name: str
    tools: dict[str, Any]  # empty: rein reaches a server only within a turn
    resources: list[Any]
    resourceTemplates: list[Any]
    authStatus: Literal["unsupported"]
    serverInfo: None
    httpOrigin: None
    pluginId: None
    toolsError: None
    runtimeStatus: Literal["connected", "cancelled", "failed"]


class McpServerStatusListResponse(TypedDict):
    data: list[McpServerStatus]
    nextCursor: str | None


class ReviewTarget(TypedDict):
    type: Literal["uncommittedChanges", "baseBranch", "commit", "custom"]
    branch: NotRequired[str]
    sha: NotRequired[str]
    title: NotRequired[str | None]
    instructions: NotRequired[str]


class ReviewStartParams(TypedDict):
    threadId: str
    target: ReviewTarget
    delivery: NotRequired[Literal["inline"] | None]  # detached is refused (THREAD007)


class ReviewStartResponse(TypedDict):
    turn: Turn
    reviewThreadId: str


class CommandExecParams(TypedDict):
    command: list[str]  # the argv; run as the shell command line it quotes
    threadId: NotRequired[str | None]  # rein's extension: whose policy and client decide
    cwd: NotRequired[str | None]  # inside the workspace
    env: NotRequired[dict[str, str | None] | None]
    sandboxPolicy: NotRequired[SandboxPolicy | None]
    timeoutMs: NotRequired[int | None]
    disableTimeout: NotRequired[bool]
    outputBytesCap: NotRequired[int | None]
    disableOutputCap: NotRequired[bool]
    processId: NotRequired[str | None]  # a label: rein streams nothing


class CommandExecResponse(TypedDict):
    exitCode: int
    stdout: str
    stderr: str


CLIENT_REQUESTS: dict[str, tuple[type, type]] = {
    "initialize": (InitializeParams, InitializeResponse),
    "thread/start": (ThreadStartParams, ThreadSessionResponse),
    "thread/resume": (ThreadIdParams, ThreadSessionResponse),
    "thread/fork": (ThreadIdParams, ThreadSessionResponse),
    "thread/read": (ThreadReadParams, ThreadReadResponse),
    "thread/list": (ThreadListParams, ThreadListResponse),
    "thread/archive": (ThreadIdParams, EmptyResponse),
    "thread/unarchive": (ThreadIdParams, ThreadReadResponse),
    "thread/name/set": (ThreadSetNameParams, EmptyResponse),
    "turn/start": (TurnStartParams, TurnStartResponse),
    "turn/interrupt": (TurnInterruptParams, EmptyResponse),
    "turn/steer": (TurnSteerParams, TurnSteerResponse),
    "model/list": (PageParams, ModelListResponse),
    "account/read": (AccountReadParams, AccountReadResponse),
    "thread/loaded/list": (PageParams, ThreadLoadedListResponse),
    "thread/unsubscribe": (ThreadIdParams, ThreadUnsubscribeResponse),
    "thread/turns/list": (ThreadTurnsListParams, ThreadTurnsListResponse),
    "config/read": (ConfigReadParams, ConfigReadResponse),
    "skills/list": (SkillsListParams, SkillsListResponse),
    "fuzzyFileSearch": (FuzzyFileSearchParams, FuzzyFileSearchResponse),
    "hooks/list": (HooksListParams, HooksListResponse),
    "mcpServerStatus/list": (McpServerStatusListParams, McpServerStatusListResponse),
    "thread/compact/start": (ThreadIdParams, EmptyResponse),
    "review/start": (ReviewStartParams, ReviewStartResponse),
    "command/exec": (CommandExecParams, CommandExecResponse),
}
"""Every request rein answers."""
