"""The worker set of a run, built from the merged ``rein.toml``.

Order matters: the engine hands an attempt to the first worker that can serve it (or to the
one the node names with ``x-rein-worker``). :func:`workers_from_config` returns, in order:

1. the **scripted** test double, only when explicitly enabled (``[workers.scripted] answers
   = "answers.yaml"`` or ``REIN_SCRIPTED_ANSWERS``) — never a default;
2. one worker per ``[tiers.<tier>]`` route, in tier order: a **model** worker when the route's
   ``provider`` names a ``[providers.NAME]`` table, a **command** worker when it names a
   ``[workers.command.NAME]`` table;
3. every ``[workers.command.NAME]`` not reached through a tier, served only to nodes that
   choose it explicitly (``x-rein-worker: command/NAME``).

Command workers and network providers from the project ``rein.toml`` reach this module only
once the user trusts that file (:mod:`rein.config.trust`); a tier routed to one that is
withheld is refused (CFG015, exit 4) with the command that trusts it.

Each model worker is wrapped so that a node naming an OAP profile (``x-rein-profile``) is run
as that profile (:mod:`rein.workers.profile`). The **driver** worker is not built here: the
surface that owns the store appends it last (``rein.workers.driver.worker.default_driver``), so it
serves whatever no configured worker takes, and is the default when nothing is configured.

A command worker table::

    [workers.command.claude]
    argv = ["claude", "-p", "{prompt}"]   # placeholders: see rein.workers.command
    pass_env = ["ANTHROPIC_API_KEY"]      # variables of rein's environment the agent gets
    timeout_seconds = 1800
    model = "claude-code"                 # recorded as the model in ``routed``

A provider may carry the wire-replay **test double** instead of a network connection:
``options = { replay = ["fixtures/a.json", "fixtures/b.sse"] }`` serves those recorded
response bodies in order through the real SDK (see ``docs/providers.md``). Relative paths in
``options.script`` and ``options.replay`` are read from the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.errors import ConfigError, Refused

# A workspace with no worker configured (the driver's) builds nothing here: the command,
# scripted, model and profile workers are imported only when a table asks for one.
if TYPE_CHECKING:
    from rein.config import Config
    from rein.core.tiers import Tier
    from rein.workers.base import Worker
    from rein.workers.command import CommandTemplate


def workers_from_config(workspace: Path, config: Config,
                        env: Mapping[str, str] | None = None, *,
                        wrap_provider: Callable[[Any], Any] | None = None
                        ) -> tuple[Worker, ...]:
    """The configured workers of ``workspace``, in the order the engine tries them.
    ``wrap_provider``: applied to each provider the model workers call (an evaluation's
    overlay of what the model is shown, :mod:`rein.eval.overlays`)."""
    env = os.environ if env is None else env
    check_withheld(config)
    section = config.get("workers") or {}
    workers: list[Worker] = []
    scripted = scripted_worker(workspace, section, env, config)
    if scripted is not None:
        workers.append(scripted)
    commands = command_templates(section)
    routed_commands: set[str] = set()
    model_workers = _tier_workers(workspace, config, commands, routed_commands, wrap_provider)
    workers.extend(model_workers)
    unrouted = [t for name, t in commands.items() if name not in routed_commands]
    if unrouted:
        workers.extend(_command_worker(template, config, (), workspace)
                       for template in unrouted)
    return tuple(workers)


def _command_worker(template: CommandTemplate, config: Config, tiers: tuple[Tier, ...],
                    workspace: Path) -> Worker:
    """A command worker that writes none of what rein runs, and runs its argv's files only
    as they were trusted (``Config.pinned``)."""
    from rein.tools.sandbox import protected_paths
    from rein.workers.command import CommandWorker

    return CommandWorker(template, tiers=tiers, protected=protected_paths(config, workspace),
                         files=config.pinned.get(f"workers.command.{template.name}"))


def scripted_worker(workspace: Path, section: Mapping[str, Any],
                    env: Mapping[str, str], config: Config | None = None) -> Worker | None:
    """The scripted test double, when ``REIN_SCRIPTED_ANSWERS`` or ``[workers.scripted]``
    names an answers file. It writes files under the same ``[policy]`` as a model worker;
    a project file's ``[workers.scripted]`` reaches here only once that file is trusted."""
    table = section.get("scripted") or {}
    if not isinstance(table, Mapping):
        raise ConfigError("[workers.scripted] must be a table", code="WORKERCFG001",
                          hint='write answers = "answers.yaml" under [workers.scripted]')
    answers = env.get("REIN_SCRIPTED_ANSWERS") or table.get("answers")
    if not answers:
        return None
    if not isinstance(answers, str):
        raise ConfigError("workers.scripted.answers must be a path", code="WORKERCFG002",
                          hint='for example answers = "answers.yaml"')
    from rein.profiles.policy import Policy
    from rein.tools.sandbox import protected_paths
    from rein.workers.scripted import ScriptedWorker

    path = Path(answers)
    policy = Policy.from_config(config) if config is not None else None
    return ScriptedWorker.from_file(
        path if path.is_absolute() else workspace / path, policy=policy,
        protected=protected_paths(config, workspace, env) if config is not None else ())


def command_templates(section: Mapping[str, Any]) -> dict[str, CommandTemplate]:
    """``[workers.command.NAME]`` tables as templates (WORKERCFG001–002 when malformed)."""
    tables = section.get("command") or {}
    if not isinstance(tables, Mapping):
        raise ConfigError("[workers.command] must hold one table per command worker",
                          code="WORKERCFG001",
                          hint='write [workers.command.NAME] with argv = ["prog", "{prompt}"]')
    out: dict[str, CommandTemplate] = {}
    if tables:
        from rein.workers.command import CommandTemplate
    for name, table in tables.items():
        where = f"workers.command.{name}"
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where} must be a table", code="WORKERCFG001",
                              hint='write argv = ["prog", "{prompt}"] inside it')
        argv = table.get("argv")
        if (not isinstance(argv, list) or not argv
                or not all(isinstance(a, str) and a for a in argv)):
            raise ConfigError(f"{where}.argv must be a non-empty list of strings",
                              code="WORKERCFG002",
                              hint='for example argv = ["claude", "-p", "{prompt}"]; no shell '
                                   "is involved, so each argument is one list item")
        pass_env = table.get("pass_env", [])
        timeout = table.get("timeout_seconds", 1800)
        if not isinstance(pass_env, list) or not all(isinstance(v, str) for v in pass_env):
            raise ConfigError(f"{where}.pass_env must be a list of variable names",
                              code="WORKERCFG002", hint='for example ["ANTHROPIC_API_KEY"]')
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise ConfigError(f"{where}.timeout_seconds must be a positive number",
                              code="WORKERCFG002", hint="for example 1800")
        out[str(name)] = CommandTemplate(
            argv=tuple(argv), name=str(name), model=str(table.get("model", "cli")),
            timeout_seconds=float(timeout), pass_env=tuple(pass_env),
            max_output_bytes=int(table.get("max_output_bytes", 1_000_000)))
    return out


def _tier_workers(workspace: Path, config: Config, commands: Mapping[str, CommandTemplate],
                  routed_commands: set[str], wrap_provider: Callable[[Any], Any] | None = None
                  ) -> list[Worker]:
    no_routes = not config.get("tiers")  # as tier_routes reads it: no table, no route
    if no_routes and not config.get("providers"):
        return []  # nothing to route to, nothing to check: no provider module is imported
    from rein.providers.config import parse_providers

    providers = parse_providers(config.get("providers"))  # checked even without a route
    if no_routes:
        return []
    from rein.profiles.policy import Policy
    from rein.providers.base import default_registry
    from rein.workers.model_setup import model_worker_builder, tier_routes
    from rein.workers.profile import ProfileWorker

    registry = default_registry()

    def create(cfg: Any) -> Any:
        registry.check(cfg)  # the kind's SDK is installed, before a replay client is built
        cfg, client = _with_workspace_paths(cfg, workspace)
        provider = registry.create(cfg, http_client=client)
        return provider if wrap_provider is None else wrap_provider(provider)

    from rein.tools.hooks import configured_hooks
    from rein.tools.sandbox import protected_paths

    build = model_worker_builder(providers, create, policy=Policy.from_config(config),
                                 hooks=configured_hooks(config),
                                 protected=protected_paths(config, workspace))
    out: list[Worker] = []
    for route in tier_routes(config.get("tiers")):
        name = route.provider
        if name in commands:
            routed_commands.add(name)
            template = commands[name].replace(model=route.model)
            out.append(_command_worker(template, config, (route.tier,), workspace))
            continue
        if name not in providers:
            _refuse_if_withheld(config, route.tier, name)
            known = ", ".join(sorted(providers) + sorted(commands)) or "(none)"
            raise ConfigError(f"tiers.{route.tier}.provider {name!r} has no [providers.{name}] "
                              f"or [workers.command.{name}] table", code="PROVCFG005",
                              hint=f"configured providers and command workers: {known}")
        out.append(ProfileWorker(build(route), workspace=workspace, config=config))
    return out


def check_withheld(config: Config) -> None:
    """Validate the project's untrusted command worker and provider tables anyway: a typo is
    reported when it is made, not on the day the file is trusted. Nothing is built."""
    trust = config.project_trust
    if trust is None or trust.honoured:
        return
    from rein.providers.config import parse_providers

    items = {item.key: item.value for item in trust.items}
    prefix = "workers.command."
    command_templates({"command": items.get("workers.command", {
        k.removeprefix(prefix): v for k, v in items.items() if k.startswith(prefix)})})
    parse_providers({k.removeprefix("providers."): v for k, v in items.items()
                     if k.startswith("providers.")})


def _refuse_if_withheld(config: Config, tier: str, name: str) -> None:
    """A route to a project provider or command worker that is not trusted is refused with
    the command that trusts it, rather than reported as missing."""
    trust = config.project_trust
    if trust is None or trust.honoured:
        return
    if {f"providers.{name}", f"workers.command.{name}"} & {item.key for item in trust.items}:
        raise Refused(f"tiers.{tier}.provider {name!r} is defined in {trust.path}, which is "
                      f"{trust.state.value}: its commands and URLs are ignored", code="CFG015",
                      hint=f"review and trust it: rein config trust --workspace "
                           f"{Path(trust.path).parent}")


def _with_workspace_paths(cfg: Any, workspace: Path) -> tuple[Any, Any]:
    """The provider config with workspace-relative script paths, and a replay client when
    ``options.replay`` asks for the wire-replay test double."""
    options = dict(cfg.options)

    def here(value: str) -> Path:
        path = Path(value)
        return path if path.is_absolute() else workspace / path

    if isinstance(options.get("script"), str):
        options["script"] = str(here(options["script"]))
    client = None
    replay = options.get("replay")
    if replay is not None:
        from rein.providers.replay import WireReplay

        if not isinstance(replay, list) or not all(isinstance(r, str) for r in replay):
            raise ConfigError(f"providers.{cfg.name}.options.replay must be a list of files",
                              code="PROVCFG004",
                              hint='for example replay = ["fixtures/turn1.json"]')
        missing = [r for r in replay if not here(r).is_file()]
        if missing:
            raise ConfigError(f"providers.{cfg.name}.options.replay: no file {missing[0]!r}",
                              code="PROVCFG004", hint="paths are relative to the workspace")
        client = WireReplay.from_files([here(r) for r in replay]).client()
    return cfg.replace(options=options), client
