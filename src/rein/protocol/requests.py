"""The requests of rein's threads protocol, as types: the questions the server asks (and
their answers) and the client requests it answers (and their results). With
:mod:`.shapes` (threads, turns, items, notifications), what ``rein app-server
generate-json-schema`` writes (:mod:`rein.appserver.schema`).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from rein.protocol.shapes import (
    ApprovalPolicy,
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
    commandActions: list[Any]


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


class InitializeResponse(TypedDict):
    userAgent: str  # rein/<version>: the official client needs name/version
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
}
"""Every request rein answers."""
