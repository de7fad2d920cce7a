"""Tokens to a syntax tree: a recursive-descent parser for the AGX grammar (AGS §16.2).

Binary operators use precedence climbing over one table instead of one function per level:
the tree is the same as the grammar's, and a parenthesis costs a few interpreter frames
rather than nine. Nesting is bounded so no input can exhaust the stack, here or in the
evaluator.

Precedence, loosest first: ``|| or`` · ``&& and`` · ``in`` · ``== !=`` · ``< <= > >=`` ·
``+ -`` · ``* / %`` · unary ``! not -``. Every binary operator is left-associative.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NoReturn

from rein.formats.agx.errors import AgxSyntaxError, describe_position
from rein.formats.agx.functions import FUNCTIONS, suggest
from rein.formats.agx.lexer import END, KW, NAME, NUM, OP, STR, Token, tokenize
from rein.formats.agx.static import check_call
from rein.formats.agx.tree import (
    ArrayLit,
    Binary,
    Expr,
    FunctionCall,
    Literal,
    Node,
    Reference,
    Unary,
    depth,
)

MAX_NESTING = 32  # parentheses, brackets, calls and unary operators inside one another
MAX_DEPTH = 100  # height of the finished tree (long operator chains count too)

_PRECEDENCE = {
    "||": 1,
    "&&": 2,
    "in": 3,
    "==": 4, "!=": 4,
    "<": 5, "<=": 5, ">": 5, ">=": 5,
    "+": 6, "-": 6,
    "*": 7, "/": 7, "%": 7,
}
_KEYWORD_OPERATORS = {"or": "||", "and": "&&", "in": "in"}
_LITERAL_KEYWORDS = {"true": True, "false": False, "null": None}


def parse(text: str) -> Expr:
    """Parse one AGX expression. Raises AgxSyntaxError (AG204) for bad syntax, an unknown
    function or a wrong number of arguments. Results are cached by text."""
    if not isinstance(text, str):
        raise TypeError(f"an AGX expression is a string, not {type(text).__name__}")
    return _parse_cached(text)


@lru_cache(maxsize=16384)
def _parse_cached(text: str) -> Expr:
    return Expr(source=text, body=_Parser(text).parse())


class _Parser:
    __slots__ = ("nesting", "pos", "text", "tokens")

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0
        self.nesting = 0

    def parse(self) -> Node:
        if self.tokens[0].kind == END:
            self.fail(0, "empty expression", "write a value or a condition, e.g. x == 1")
        node = self.expression(0)
        token = self.tokens[self.pos]
        if token.kind != END:
            self.trailing(token)
        # Only long inputs can build tall trees; short ones skip the walk.
        if len(self.tokens) > MAX_DEPTH // 2 and depth(node) > MAX_DEPTH:
            self.fail(0, f"expression is too deeply nested (more than {MAX_DEPTH} levels)",
                      "split it across several inputs or nodes")
        return node

    # ------------------------------------------------------------------ productions

    def expression(self, min_prec: int) -> Node:
        left = self.unary()
        tokens = self.tokens
        while True:
            token = tokens[self.pos]
            value = token.value  # operator and keyword tokens carry their text
            if token.kind == OP and isinstance(value, str):
                op = value
            elif token.kind == KW and isinstance(value, str) and value in _KEYWORD_OPERATORS:
                op = _KEYWORD_OPERATORS[value]
            else:
                return left
            prec = _PRECEDENCE.get(op)
            if prec is None or prec < min_prec:
                return left
            self.pos += 1
            right = self.expression(prec + 1)
            left = Binary(op=op, left=left, right=right, offset=token.start)

    def unary(self) -> Node:
        token = self.tokens[self.pos]
        if (token.kind == OP and token.value in ("!", "-")) or (
            token.kind == KW and token.value == "not"
        ):
            self.pos += 1
            self.enter(token)
            operand = self.unary()
            self.nesting -= 1
            op = "-" if token.value == "-" else "!"
            if op == "-" and isinstance(operand, Literal) and _is_plain_number(operand.value):
                return Literal(value=-operand.value, offset=token.start)
            return Unary(op=op, operand=operand, offset=token.start)
        node = self.primary()
        self.postfix(token.start)
        return node

    def primary(self) -> Node:
        token = self.tokens[self.pos]
        kind, value = token.kind, token.value
        if kind in (NUM, STR):
            self.pos += 1
            return Literal(value=value, offset=token.start)
        if kind == NAME:
            if self.tokens[self.pos + 1].kind == OP and self.tokens[self.pos + 1].value == "(":
                return self.call(token)
            return self.reference(token)
        if kind == KW:
            if value in _LITERAL_KEYWORDS:
                self.pos += 1
                return Literal(value=_LITERAL_KEYWORDS[value], offset=token.start)
            self.missing_operand(token)
        if kind == OP and value == "(":
            self.pos += 1
            self.enter(token)
            inner = self.expression(0)
            self.expect(")", token)
            self.nesting -= 1
            return inner
        if kind == OP and value == "[":
            self.pos += 1
            self.enter(token)
            items = self.arguments("]", token)
            self.nesting -= 1
            return ArrayLit(items=items, offset=token.start)
        self.missing_operand(token)

    def call(self, name_token: Token) -> Node:
        name = str(name_token.value)
        if name not in FUNCTIONS:
            guess = suggest(name)
            raise AgxSyntaxError(f"unknown function '{name}'", offset=name_token.start,
                                 text=self.text,
                                 suffix=f"; did you mean '{guess}'?" if guess else "",
                                 hint="AGX functions are: " + ", ".join(FUNCTIONS))
        open_token = self.tokens[self.pos + 1]
        self.pos += 2
        self.enter(open_token)
        args = self.arguments(")", open_token)
        self.nesting -= 1
        low, high = FUNCTIONS[name]
        if not low <= len(args) <= high:
            wanted = str(low) if low == high else f"{low} or {high}"
            noun = "argument" if wanted == "1" else "arguments"
            self.fail(name_token.start, f"{name}() takes {wanted} {noun}, got {len(args)}",
                      f"call it as {_signature(name)}")
        wrong = check_call(name, args)
        if wrong is not None:
            self.fail(*wrong)
        return FunctionCall(name=name, args=args, offset=name_token.start)

    def arguments(self, closer: str, opener: Token) -> tuple[Node, ...]:
        tokens = self.tokens
        if tokens[self.pos].kind == OP and tokens[self.pos].value == closer:
            self.pos += 1
            return ()
        items = [self.expression(0)]
        while True:
            token = tokens[self.pos]
            if token.kind == OP and token.value == ",":
                self.pos += 1
                after = tokens[self.pos]
                if after.kind == OP and after.value == closer:
                    self.fail(token.start, f"trailing ',' before '{closer}'", "remove the ','")
                items.append(self.expression(0))
                continue
            self.expect(closer, opener, in_list=True)
            return tuple(items)

    def reference(self, root: Token) -> Node:
        path = [str(root.value)]
        self.pos += 1
        tokens = self.tokens
        while tokens[self.pos].kind == OP and tokens[self.pos].value == ".":
            dot = tokens[self.pos]
            member = tokens[self.pos + 1]
            if member.kind == NUM:
                base = ".".join(path)
                self.fail(member.start, "member names cannot start with a digit",
                          f'to read element or key "{member.value}" write get({base}, '
                          f'"{member.value}")')
            if member.kind not in (NAME, KW):
                self.fail(dot.start + 1 if member.kind == END else member.start,
                          "expected a name after '.'", "write a member name such as x.outputs")
            following = tokens[self.pos + 2]
            if following.kind == OP and following.value == "(":
                name = str(member.value)
                base = ".".join(path)
                if name in FUNCTIONS:
                    hint = f"write {name}({base}) instead of {base}.{name}()"
                else:
                    hint = "call a function with the value as its first argument, e.g. lower(x)"
                self.fail(dot.start, "method calls are not supported", hint)
            path.append(str(member.value))
            self.pos += 2
        return Reference(path=tuple(path), offset=root.start)

    def postfix(self, start: int) -> None:
        """Reject the postfix forms other languages have and AGX does not.

        A reference chain has consumed its own dots, so a '.' here follows something else.
        """
        token = self.tokens[self.pos]
        if token.kind != OP:
            return
        if token.value == "[":
            shown = self.text[start:token.start].strip() or "x"
            self.fail(token.start, "indexing with [...] is not supported",
                      f'use get({shown}, "0") to read an element or key')
        if token.value == ".":
            shown = self.text[start:token.start].strip()
            self.fail(token.start, "'.' can only follow a name",
                      f'use get({shown}, "member") to read a member of a computed value')
        if token.value == "(":
            self.fail(token.start, "only function names can be called",
                      "call one of the AGX functions by name, e.g. len(x)")

    # ------------------------------------------------------------------ helpers

    def enter(self, token: Token) -> None:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            self.fail(token.start, f"expression nests more than {MAX_NESTING} levels deep",
                      "simplify it or split it across several inputs")

    def expect(self, closer: str, opener: Token, *, in_list: bool = False) -> None:
        token = self.tokens[self.pos]
        if token.kind == OP and token.value == closer:
            self.pos += 1
            return
        opened = describe_position(self.text, opener.start)
        if token.kind == END:
            self.fail(token.start, f"missing '{closer}'", f"add '{closer}'",
                      suffix=f" to close the '{opener.value}' at {opened}")
        wanted = f"',' or '{closer}'" if in_list else f"'{closer}'"
        self.fail(token.start, f"expected {wanted} but found {_show(token)}",
                  f"close the '{opener.value}' opened at {opened}")

    def missing_operand(self, token: Token) -> NoReturn:
        if token.kind == END:
            previous = self.tokens[self.pos - 1] if self.pos else None
            after = f" after {_show(previous)}" if previous else ""
            self.fail(token.start, f"the expression ends where a value was expected{after}",
                      "complete the expression")
        self.fail(token.start, f"expected a value but found {_show(token)}",
                  "an operand (a name, a literal, a call or a parenthesis) is missing")

    def trailing(self, token: Token) -> NoReturn:
        if token.kind == KW and token.value == "not":
            after = self.tokens[self.pos + 1]
            if after.kind == KW and after.value == "in":
                self.fail(token.start, "'not in' is not an operator",
                          "write !(x in y) or not (x in y)")
        if token.kind == OP and token.value == ")":
            self.fail(token.start, "unmatched ')'", "remove it or add the missing '('")
        self.fail(token.start, f"unexpected {_show(token)}",
                  "an operator is missing between two values, or the expression should end here")

    def fail(self, offset: int, message: str, hint: str | None = None,
             suffix: str = "") -> NoReturn:
        raise AgxSyntaxError(message, offset=offset, text=self.text, hint=hint, suffix=suffix)


def _is_plain_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _show(token: Token) -> str:
    if token.kind == STR:
        return "a string"
    if token.kind == NUM:
        return f"the number {token.value}"
    if token.kind == END:
        return "the end"
    return f"'{token.value}'"


_SIGNATURES = {
    "len": "len(x)", "count": "count(list)", "contains": "contains(haystack, needle)",
    "startswith": "startswith(s, prefix)", "endswith": "endswith(s, suffix)",
    "lower": "lower(s)", "upper": "upper(s)", "trim": "trim(s)",
    "matches": "matches(s, pattern)", "split": "split(s, sep)", "join": "join(list, sep)",
    "int": "int(x)", "float": "float(x)", "bool": "bool(x)", "str": "str(x)",
    "json": "json(s)", "get": "get(obj, \"a.b\", default)", "default": "default(x, fallback)",
    "any": "any(list)", "all": "all(list)", "succeeded": "succeeded(\"node_id\")",
    "failed": "failed(\"node_id\")", "skipped": "skipped(\"node_id\")",
    "output": "output(\"node_id\", \"name\")",
}


def _signature(name: str) -> str:
    return _SIGNATURES.get(name, f"{name}(...)")
