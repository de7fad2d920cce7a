"""Codes of rein's foundations: errors without a more specific code, configuration, the
run store, providers, workers, tools and telemetry."""

from __future__ import annotations

from rein.core.codes.model import Code, Kind
from rein.core.extras import install_hint

GENERAL = "General"
CONFIG = "Configuration and trust"
STORE = "Run store"
PROVIDERS = "Providers and workers"
TOOLS = "Tools, MCP and the sandbox"


def _c(area: str, code: str, kind: Kind, meaning: str, hint: str, *,
       legacy: bool = False) -> Code:
    return Code(code=code, area=area, severity="error", kind=kind, meaning=meaning, hint=hint,
                legacy_name=legacy)


CODES = (
    _c(GENERAL, "REIN000", "error", "rein failed in a way no more specific code describes",
       "read the message; report it if it gives no way forward"),
    _c(GENERAL, "DOC000", "error", "a document could not be read or is not valid",
       "fix the document the location names"),
    _c(GENERAL, "LOAD001", "error", "bytes could not be turned into data (syntax, encoding, "
       "size or depth limits); formats report their own code for it", "fix the file at the "
       "location"),
    _c(GENERAL, "CANON001", "error", "a document has no canonical JSON form, so no digest",
       "use finite numbers and JSON values only"),
    _c(GENERAL, "REFUSED", "refused", "rein refused to act (approval, trust or a precondition "
       "missing)", "do what the hint of the refusal says", legacy=True),
    _c(GENERAL, "PROVIDER", "error", "a model or tool vendor failed",
       "see the vendor's message; retry later if it is transient", legacy=True),
    _c(GENERAL, "PREPARE", "error", "the graph cannot start; the first finding's own code is "
       "reported in its place", "fix the findings listed with it", legacy=True),
    _c(GENERAL, "OS_ERROR", "error", "the file system refused an operation",
       "check that the path exists and rein may read and write it", legacy=True),
    _c(GENERAL, "DISK_FULL", "error", "the disk is full", "free some space and run the command "
       "again", legacy=True),
    _c(GENERAL, "USAGE", "usage", "a command was called wrongly (an unknown command or "
       "option, a missing or bad argument); exit 64", "see the command's `--help`",
       legacy=True),
    _c(CONFIG, "CFG001", "usage", "rein.toml or a command-line value is wrong",
       "fix the setting the message names"),
    _c(CONFIG, "CFG002", "usage", "a rein.toml cannot be read", "check the file and its "
       "permissions"),
    _c(CONFIG, "CFG003", "usage", "a rein.toml is not valid TOML (or holds a number out of "
       "range)", "fix the syntax at the location"),
    _c(CONFIG, "CFG004", "usage", "a setting has the wrong type or value",
       "see docs/configuration.md for the setting"),
    _c(CONFIG, "CFG010", "refused", "project trust is forbidden by a managed or user rein.toml",
       "ask whoever manages that file, or copy the definitions into your user rein.toml"),
    _c(CONFIG, "CFG011", "refused", "the project rein.toml changed since it was reviewed",
       "run `rein config trust` again and review the current content"),
    _c(CONFIG, "CFG012", "usage", "the trust file is damaged",
       "delete it and trust your projects again with `rein config trust`"),
    _c(CONFIG, "CFG013", "usage", "the workspace has no rein.toml to trust",
       "pass --workspace DIR to name another workspace"),
    _c(CONFIG, "CFG014", "refused", "the project rein.toml is not trusted (no confirmation)",
       "review it, then run `rein config trust --digest DIGEST`"),
    _c(CONFIG, "CFG015", "refused", "a tier's provider is defined in a project rein.toml that "
       "is not trusted", "review and trust the project file, or define the provider in your "
       "user rein.toml"),
    _c(CONFIG, "CFG016", "usage", "a hook or command worker cannot be trusted: which workspace "
       "files its command runs cannot be told from its line", "write the command as a list, "
       "name its scripts from the workspace root, and list what they source in files"),
    _c(CONFIG, "CONFIG_STORE", "usage", "[store] url is not a string",
       'write url = "postgresql://user@host/db" under [store]', legacy=True),
    _c(CONFIG, "PERM001", "usage", "a permission string cannot be parsed",
       "write scope:action[:target], as docs/tools.md shows"),
    _c(CONFIG, "SANDBOX001", "usage", "unknown sandbox mode", "use one of the modes the hint "
       "lists"),
    _c(STORE, "STORE001", "error", "the run store cannot be read: damaged, not a rein store, "
       "or written by a newer rein", "restore it from a backup, or use the rein that wrote it"),
    _c(STORE, "STORE002", "error", "a run's parent links loop back on themselves",
       "the store is damaged: restore .rein/ from a backup, or start a new run"),
    _c(STORE, "STORE003", "error", "the run store failed SQLite's integrity check: it is "
       "damaged, and rein neither reads nor writes it", "keep the file aside and restore it "
       "from a backup or rebuild it with sqlite3's .recover, as the hint and "
       "docs/durability.md say"),
    _c(STORE, "STORE004", "usage", "a postgresql:// store needs the PostgreSQL driver "
       "(psycopg), which is not installed (the postgres extra)", install_hint("postgres")),
    _c(STORE, "STORE404", "error", "the workspace has no runs (no .rein/ store yet)",
       "start a run with `rein run`, or pass --workspace DIR"),
    _c(STORE, "WORKSPACE001", "error", "the workspace's identity (.rein/workspace.json) "
       "cannot be read, or cannot be written", "restore it from a backup (deleting it makes "
       "this a new workspace, whose runs are then another workspace's), or make .rein/ "
       "writable"),
    _c(STORE, "STORE_BUSY", "error", "the store is busy, locked or timed out",
       "retry when the other process is done", legacy=True),
    _c(STORE, "STORE_CONFLICT", "error", "the store refused a write (a constraint)",
       "retry; report it if it persists", legacy=True),
    _c(STORE, "STORE_CONNECT", "error", "the connection to the database failed",
       "check [store] url and that the server runs", legacy=True),
    _c(STORE, "STORE_EMPTY", "error", "the store file is empty: it was truncated and its runs "
       "are gone", "restore it from a backup, or delete it to start afresh", legacy=True),
    _c(STORE, "STORE_FAILED", "error", "the store failed in another way",
       "read the message; report it if it persists", legacy=True),
    _c(STORE, "STORE_FULL", "error", "the disk or database server is full",
       "free some space, then retry", legacy=True),
    _c(STORE, "STORE_IO", "error", "the disk or file system failed under the store",
       "check the disk and the file system", legacy=True),
    _c(STORE, "STORE_OPEN", "error", "the store cannot be opened (or is not a regular file)",
       "check the path and its permissions", legacy=True),
    _c(STORE, "STORE_READONLY", "error", "the store is read-only, or the role may not write",
       "reading commands still work; to write, make .rein/ writable (or let the database "
       "role write)", legacy=True),
    _c(PROVIDERS, "PROVCFG001", "usage", "a [providers] or [tiers] table is malformed",
       "see docs/providers.md for the table"),
    _c(PROVIDERS, "PROVCFG002", "usage", "an api_key is written in rein.toml",
       "export the key in an environment variable and name it in api_key_env"),
    _c(PROVIDERS, "PROVCFG003", "usage", "unknown provider kind",
       "use a kind docs/providers.md lists, or install the plugin"),
    _c(PROVIDERS, "PROVCFG004", "usage", "a scripted provider or worker has no usable script",
       "point the script option at a workspace file holding a list of turns"),
    _c(PROVIDERS, "PROVCFG005", "usage", "a tier names a provider that has no table",
       "add the [providers.NAME] or [workers.command.NAME] table"),
    _c(PROVIDERS, "PROVCFG006", "usage", "a provider's kind needs a vendor SDK that is not "
       "installed (its extra)", f"{install_hint('openai')} or {install_hint('anthropic')}, "
       "as the message names"),
    _c(PROVIDERS, "PRICE001", "usage", "a [pricing] entry is malformed",
       "see docs/providers.md for the pricing table"),
    _c(PROVIDERS, "PRV001", "error", "the vendor refused the credentials",
       "check the API key in the environment"),
    _c(PROVIDERS, "PRV002", "error", "the vendor asked to slow down (rate limit)",
       "wait and retry; rein retries transient failures itself"),
    _c(PROVIDERS, "PRV003", "error", "the vendor is down, overloaded, slow or unreachable",
       "retry later"),
    _c(PROVIDERS, "PRV004", "error", "the vendor rejected the request (unknown model, too long, "
       "invalid parameter)", "fix the model name or the request size"),
    _c(PROVIDERS, "PRV005", "error", "the vendor's answer was malformed",
       "retry; report it if it persists"),
    _c(PROVIDERS, "PRV010", "error", "a real model call was attempted while "
       "REIN_ALLOW_MODEL_REQUESTS=0", "use a scripted provider, or allow model requests"),
    _c(PROVIDERS, "WORKERCFG001", "usage", "a [workers] table is malformed",
       "see docs/configuration.md for [workers]"),
    _c(PROVIDERS, "WORKERCFG002", "usage", "a [workers] setting has the wrong type",
       "use the example the hint gives"),
    _c(PROVIDERS, "SCRIPT001", "usage", "a scripted answers file is not a mapping with 'nodes' "
       "and 'judges'", "write the answers file as one mapping"),
    _c(PROVIDERS, "OTEL_MISSING", "usage", "OpenTelemetry export is asked for, but the SDK is "
       "not installed", f"{install_hint('otel')}, or turn the export off", legacy=True),
    _c(PROVIDERS, "OTEL_OTLP_MISSING", "usage", "OTLP export needs an exporter package that is "
       "not installed", "install the exporter package the message names", legacy=True),
    _c(PROVIDERS, "OTEL_EXPORTER", "usage", "OTEL_TRACES_EXPORTER names an exporter rein "
       "cannot use", "set it to otlp or console", legacy=True),
    _c(PROVIDERS, "OTEL_ENDPOINT", "usage", "OpenTelemetry export is on, but no endpoint is "
       "configured", "export OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_TRACES_EXPORTER=console",
       legacy=True),
    _c(TOOLS, "TOOL001", "tool", "a tool call could not be carried out",
       "read the message; the model sees it as the tool's result"),
    _c(TOOLS, "TOOL002", "tool", "the model called a tool the node is not given",
       "call one of the tools the message lists"),
    _c(TOOLS, "TOOL010", "tool", "a path resolves outside the workspace",
       "use a workspace-relative path without .. or symlinks out"),
    _c(TOOLS, "TOOL011", "tool", "a path is empty or holds a NUL byte",
       "give a workspace-relative path"),
    _c(TOOLS, "TOOL020", "tool", "no such file or directory", "check the path"),
    _c(TOOLS, "TOOL021", "tool", "the path is a directory, or cannot be read as a file",
       "use search to list files"),
    _c(TOOLS, "TOOL022", "tool", "the file is not UTF-8 text", "read text files only"),
    _c(TOOLS, "TOOL023", "tool", "an argument is missing or has the wrong type",
       "pass the arguments the tool's schema asks for"),
    _c(TOOLS, "TOOL024", "tool", "the content to write is too large", "write less at once"),
    _c(TOOLS, "TOOL025", "tool", "the text to replace was not found",
       "read the file and copy the text exactly"),
    _c(TOOLS, "TOOL026", "tool", "the text to replace occurs more than once",
       "give more context, or set replace_all"),
    _c(TOOLS, "TOOL027", "tool", "the search pattern is not a valid regular expression",
       "fix the pattern"),
    _c(TOOLS, "TOOL028", "tool", "the file is larger than the tool reads",
       "search it, or read part of it with a shell command"),
    _c(TOOLS, "TOOL030", "tool", "the policy requires a sandbox boundary and none is available",
       "install bubblewrap, or relax require_boundary"),
    _c(TOOLS, "TOOL032", "tool", "an fs:read deny pattern with a wildcard would need too long "
       "a walk of the workspace to hide what it covers from a command", "deny literal paths "
       "(secrets/**), or narrow the fs:read grants"),
    _c(TOOLS, "TOOL031", "tool", "the editor (an ACP client) could not read, write or run "
       "what rein allowed", "read the editor's message; the call may be retried"),
    _c(TOOLS, "TOOL040", "tool", "the URL is not an absolute http(s) URL", "pass an http(s) "
       "URL"),
    _c(TOOLS, "TOOL041", "tool", "fetching the URL timed out", "retry, or fetch another URL"),
    _c(TOOLS, "TOOL042", "tool", "the URL could not be fetched", "check the URL"),
    _c(TOOLS, "TOOL043", "tool", "the URL redirects too many times", "fetch the final URL"),
    _c(TOOLS, "TOOL044", "tool", "the fetch tool's HTTP client (httpx2) is not installed",
       f"{install_hint('openai')} (or any provider extra) installs it"),
    _c(TOOLS, "MCP001", "usage", "an MCP server's env or headers hold a literal, not a "
       "${VARIABLE} reference [L1-I6]", "reference an environment variable instead"),
    _c(TOOLS, "MCP002", "usage", "an MCP server's URL is not an http(s) URL",
       "give an http(s) URL"),
    _c(TOOLS, "MCP003", "usage", "a profile's MCP servers need the MCP SDK, which is not "
       "installed (the mcp extra)", install_hint("mcp")),
    _c(TOOLS, "MCP010", "refused", "launching an MCP server needs confirmation and nobody can "
       "give it", "read the command line, then pass --yes (or answer the "
       "approval request)"),
    _c(TOOLS, "HOOK001", "diagnostic", "a hook answered the legacy decision \"approve\", which "
       "would grant the call in Claude Code: refused, and the hook's run is recorded as failed "
       "(blocked when it is fail_closed)", "answer nothing to let rein's permission check "
       "decide, or permissionDecision \"deny\" or \"ask\""),
    _c(TOOLS, "MCP011", "refused", "launching an MCP server was cancelled",
       "confirm the launch to use the server"),
    _c(GENERAL, "DRAW001", "refused", "an SVG picture needs Graphviz's `dot`, which is not "
       "installed", "install Graphviz (apt-get install graphviz, brew install graphviz), or "
       "print the source with --format dot or mermaid"),
    _c(GENERAL, "DRAW002", "error", "Graphviz's `dot` could not draw the picture",
       "run the --format dot output through `dot -Tsvg` to see Graphviz's message"),
    _c(GENERAL, "DRAW003", "error", "a run cannot be drawn: its graph file is gone or no longer "
       "valid", "restore the file the run started from (`rein runs show RUN` names it)"),
    _c(STORE, "SCALE001", "usage", "[executor] is not a table, or its kind is unknown",
       'write kind = "dbos" or kind = "in_process" under [executor]'),
    _c(STORE, "SCALE002", "usage", "the dbos executor was chosen without a PostgreSQL store",
       "run with --store postgresql://... or set [store] url"),
    _c(STORE, "SCALE003", "error", "the attempt queues in PostgreSQL are not reachable",
       "start a worker first (it creates them): rein worker --store URL"),
    _c(STORE, "SCALE004", "error", "an attempt's workflow ended without an answer",
       "read the message; rein worker's output says why"),
    _c(STORE, "SCALE005", "usage", "the dbos executor or rein worker was used without the "
       "scale extra installed", install_hint("scale")),
    _c(STORE, "SCALE006", "usage", "[executor.rate_limits] is not a table of "
       "{ limit, period } per provider", "openai = { limit = 50, period = 60 }"),
    _c(STORE, "SCALE007", "error", "a command criterion was not run: the worker's tree is not "
       "the attempt's", "run workers with the coordinator's --workspace at its git HEAD"),
    _c(STORE, "SCALE008", "notice", "a worker's [executor] shared limits (global_concurrency, "
       "rate limits) differ from those of the workers already serving the queue; it follows "
       "the queue's", "give every worker the same [executor] settings; new shared settings "
       "apply once every worker of the queue has stopped"),
    _c(STORE, "SCALE009", "usage", "a coordinator or a worker of the dbos executor has no "
       "usable queue key: the file is missing, open to others, too short, or named by a "
       "project's rein.toml", "create one with `rein worker --new-key` and copy that same "
       "file, mode 0600, to every machine that runs a coordinator or a worker"),
    _c(STORE, "SCALE010", "error", "a job or an answer on the queue is not signed with this "
       "process's queue key (written by someone without it, altered, or signed with another "
       "key): it was not run or not used", "give every coordinator and worker the same key "
       "file; their ids are printed at start"),
    _c(STORE, "SCALE011", "error", "a queue row holds a Python pickle: it was never decoded "
       "and nothing of it ran", "rein writes JSON only; find what else writes to the "
       "database"),
    _c(STORE, "SCALE012", "error", "a signed job does not belong to an approved run: no such "
       "run, the run has ended, its graph changed since it was approved, or the node or "
       "criterion is not in the graph; it was not run", "give the workers the run's graph "
       "files at the coordinator's paths, unchanged"),
)

__all__ = ["CODES"]
