"""AGX, the expression language of Agentic Graphs (AGS 1.0.1 §16).

Parse once at load time, evaluate many times at run time::

    from rein.formats.agx import MappingScope, evaluate_bool, parse

    expr = parse('nodes.review.outputs.verdict == "approved"')
    evaluate_bool(expr, MappingScope({"nodes": {"review": {"outputs": {"verdict": "approved"}}}}))

The pipeline is ``lexer`` → ``parser`` (a tree from ``tree``) → ``evaluate`` (operators) with
``functions`` (the fixed function table) and ``values`` (JSON typing, equality, text);
``template`` handles ``${{ }}`` text and ``extract`` lists what an expression reads.
"""

from __future__ import annotations

from rein.formats.agx.errors import AgxEvalError, AgxSyntaxError
from rein.formats.agx.evaluate import MappingScope, evaluate, evaluate_bool
from rein.formats.agx.extract import NOT_LITERAL, Call, Ref, calls, references
from rein.formats.agx.functions import FUNCTIONS
from rein.formats.agx.parser import parse
from rein.formats.agx.scope import Scope
from rein.formats.agx.template import has_interpolation, parse_template, render
from rein.formats.agx.tree import Expr, Interpolation, Template
from rein.formats.agx.values import stringify

__all__ = [
    "FUNCTIONS",
    "NOT_LITERAL",
    "AgxEvalError",
    "AgxSyntaxError",
    "Call",
    "Expr",
    "Interpolation",
    "MappingScope",
    "Ref",
    "Scope",
    "Template",
    "calls",
    "evaluate",
    "evaluate_bool",
    "has_interpolation",
    "parse",
    "parse_template",
    "references",
    "render",
    "stringify",
]
