"""Codes of the web console (``rein serve``): starting it, and the requests it refuses."""

from __future__ import annotations

from rein.core.codes.model import Code, Kind
from rein.core.extras import install_hint

WEB = "Web console"


def _c(code: str, kind: Kind, meaning: str, hint: str) -> Code:
    return Code(code=code, area=WEB, severity="error", kind=kind, meaning=meaning, hint=hint)


CODES = (
    _c("WEB001", "usage", "the web console's packages (Starlette, uvicorn) are not installed",
       install_hint("web")),
    _c("WEB010", "refused", "a non-loopback --host was asked for without a chosen token",
       "bind 127.0.0.1, or pass --token-env VAR with a secret of 32+ characters"),
    _c("WEB011", "usage", "the --token-env variable is unset or its token is too short",
       "export the variable with a random value of at least 32 characters"),
    _c("WEB012", "usage", "the console cannot listen on the address and port asked for",
       "pick another --port, or stop what uses this one"),
    _c("WEB400", "refused", "a request to the console is malformed (HTTP 400)",
       "submit the form from the console's own page"),
    _c("WEB401", "refused", "a request has no session, or the token in the URL is wrong "
       "(HTTP 401)", "open the URL `rein serve` printed"),
    _c("WEB402", "refused", "a state-changing request failed the origin or CSRF check "
       "(HTTP 403)", "reload the page and submit the form from it"),
    _c("WEB403", "refused", "the console is read-only (HTTP 403)",
       "restart `rein serve` without --read-only"),
    _c("WEB404", "refused", "the plan view was asked for a file that is not a graph inside "
       "the workspace (HTTP 404)", "pick a file from the Plans page"),
    _c("WEB413", "refused", "a request body is larger than the console accepts (HTTP 413)",
       "send a smaller form"),
    _c("WEB421", "refused", "a request names a Host the console does not answer to "
       "(HTTP 421; DNS rebinding)", "use the address `rein serve` printed"),
    _c("WEB430", "refused", "a thread's page was asked to answer an approval that is not a "
       "question of that thread's turns (HTTP 404)",
       "answer it from its own thread's page, or from the approval queue"),
    _c("WEB431", "refused", "a turn cannot be started from the page on a thread whose approval "
       "policy is `never` (HTTP 409): the page would ask what the policy declines",
       "start its turns from the app-server or the SDK, which apply the policy"),
    _c("WEB432", "refused", "a thread's page was asked to accept for the session a question "
       "that the protocol does not let be (only a command or a file change, with its exact "
       "action, can; HTTP 400)", "answer accept"),
)

__all__ = ["CODES"]
