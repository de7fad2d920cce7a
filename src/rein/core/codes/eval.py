"""Codes of the evaluation flow (`rein eval`)."""

from __future__ import annotations

from rein.core.codes.model import Code, Kind

EVAL = "Evaluation"


def _c(code: str, kind: Kind, meaning: str, hint: str) -> Code:
    return Code(code=code, area=EVAL, severity="error", kind=kind, meaning=meaning, hint=hint)


CODES = (
    _c("EVAL001", "usage", "a PATH given to rein eval is neither a scenario nor a folder of "
       "scenarios", "a scenario folder holds scenario.toml or a Harbor task.toml"),
    _c("EVAL002", "usage", "a scenario.toml cannot be read or has a wrong section, key, type "
       "or path", "fix the value the message names (docs/eval.md, \"Scenarios\")"),
    _c("EVAL003", "usage", "a Harbor task cannot be read: its task.toml is malformed, a "
       "required file (instruction.md, tests/test.sh) is missing, or a ${VAR} it uses is "
       "unset", "fix the task, or set the variable"),
    _c("EVAL004", "usage", "--config names a configuration no configurations file declares "
       "(or names one twice)", "declare it in eval.toml, or use a built-in one: oracle, nop"),
    _c("EVAL005", "usage", "a configurations file is malformed: an unknown key, a section a "
       "configuration may not set, an extends loop, or one name declared two ways",
       "fix the value the message names (docs/eval.md, \"Configurations\")"),
    _c("EVAL006", "usage", "a configuration routes no tier to a worker, so its trials would "
       "wait for a driver", "give it [configurations.NAME.rein.tiers.standard] with a "
       "provider and a model"),
    _c("EVAL007", "usage", "two scenarios of one evaluation have the same name, or a scenario "
       "and a configuration make the same trial names as another pair (names holding __)",
       "rename one of them"),
    _c("EVAL008", "refused", "the evaluation exists already or another process is running it",
       "wait for that process, or resume the evaluation once it has stopped"),
    _c("EVAL009", "usage", "the baseline result cannot be read, or is not a result of rein "
       "eval", "give a result.json written by rein eval, or the id of a finished evaluation"),
    _c("EVAL010", "usage", "a scenario or a configuration changed since the evaluation being "
       "resumed began", "restore it, or start a new evaluation"),
    _c("EVAL011", "usage", "the baseline has no configuration to compare with the ones run "
       "now", "run the same configuration names, or one configuration against a baseline "
       "of one"),
    _c("EVAL012", "usage", "rein eval needs PATHs with --config, or --resume ID, or --show "
       "ID, each with the options it takes (a resume runs as planned: --trials, --config and "
       "the like do not go with it)", "rein eval examples/eval --config oracle --config nop"),
    _c("EVAL013", "error", "the evaluation was written in a format this rein does not read",
       "resume it with the rein that started it"),
    _c("EVAL014", "error", "--show names an evaluation that has not finished: it has no "
       "results yet", "continue it with rein eval --resume ID"),
    _c("EVAL015", "error", "an evaluation's plan.json or result.json cannot be read "
       "(damaged outside rein, which writes them whole)", "a damaged result: rein eval "
       "--resume ID writes it again from the journal; a damaged plan: start a new evaluation"),
    _c("EVAL020", "refused", "a scenario's declared gate answer was to be applied outside one "
       "of its evaluation's own trials", "declared gate answers apply only inside an "
       "evaluation"),
    _c("EVAL021", "refused", "a configuration runs code or reaches a service of the suite's "
       "choosing (a hook, a command worker, a provider) and nobody approved it",
       "review what it runs, then pass the digest rein names to --approve"),
    _c("EVAL022", "refused", "--approve names a digest other than what the configurations run "
       "now (or they run nothing that needs approval)",
       "review them again and pass the digest rein names now"),
    _c("EVAL023", "usage", "a configuration's hook or command worker runs files rein cannot "
       "tell from its command line, so it cannot be approved",
       "write the command as a list and name suite files through {suite}/"),
    _c("EVAL024", "usage", "the file of approved evaluations beside the account's rein.toml "
       "is damaged", "delete it and approve the configurations again"),
    _c("EVAL025", "refused", "a DBOS lane's job names a plan or an approval other than the "
       "evaluation's here (its plan or what its configurations run changed)",
       "give every worker the workspace and the suite's files as approved; start a new "
       "evaluation"),
    _c("EVAL026", "usage", "trials on DBOS lanes need a PostgreSQL database for their queues "
       "(no --store or [store] url names one)",
       "pass --store postgresql://USER@HOST/DB to rein eval and to every rein eval --serve"),
    _c("EVAL027", "error", "the DBOS lanes' queues are not reachable (no worker created them "
       "yet, or the database is down), or the evaluation stopped while a trial was on a lane",
       "start rein eval --serve --store URL, then resume the evaluation"),
    _c("EVAL404", "error", "there is no evaluation with that id in this workspace",
       "list them in .rein/evals/, or start one with rein eval PATH --config NAME"),
)
