"""AGX parsing speed: rein's parser beside the AGS reference validator's, in one run.

Run on demand (``.venv/bin/python benchmarks/agx.py``), never in the test suite. Both parse
the same 20,000 distinct expressions (about what validating a 10,000-node graph needs), with
rein's cache cleared so every parse is real work; the reference also gets its separate
function/arity check, which rein does while parsing. Prints microseconds per expression,
the ratio, and rein's evaluation and cached-parse times.

    python benchmarks/agx.py
    python benchmarks/agx.py --count 5000 --repeat 5
"""

from __future__ import annotations

import argparse
import time

import ags

from rein.formats.agx import MappingScope, evaluate, parse
from rein.formats.agx.parser import _parse_cached

SHAPES = [
    'nodes.n{i}.outputs.verdict == "approved"',
    "len(nodes.n{i}.outputs.items) > {i} && params.mode != 'dry'",
    "default(nodes.n{i}.outputs.summary, 'none')",
    'all([succeeded("n{i}"), len(self.outputs.findings) == 0, self.outputs.code == {i}])',
    "nodes.n{i}.outputs.score * 2 + 1 >= params.threshold",
    "params.p{i}",
]


def corpus(count: int) -> list[str]:
    return [SHAPES[i % len(SHAPES)].format(i=i) for i in range(count)]


def reference_parse(ref: object, text: str) -> None:
    parser = ref.parse_expression(text)  # type: ignore[attr-defined]
    for name, arity in parser.calls:
        ref.FUNCTIONS.get(name)  # type: ignore[attr-defined]
        del arity


def best(repeat: int, run: object) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--count", type=int, default=20_000)
    options.add_argument("--repeat", type=int, default=3)
    args = options.parse_args()
    texts = corpus(args.count)
    ref = ags.reference_validator()

    def rein_all() -> None:
        _parse_cached.cache_clear()
        for text in texts:
            parse(text)

    def ref_all() -> None:
        for text in texts:
            reference_parse(ref, text)

    ours = best(args.repeat, rein_all)
    theirs = best(args.repeat, ref_all)
    hot = texts[:4000]  # fits the cache: the cost of a repeated expression
    [parse(t) for t in hot]
    cached = best(args.repeat, lambda: [parse(t) for t in hot]) * args.count / len(hot)

    expr = parse(texts[0])
    scope = MappingScope({"nodes": {"n0": {"outputs": {"verdict": "approved"}}}})
    evals = best(args.repeat, lambda: [evaluate(expr, scope) for _ in range(args.count)])

    per = 1e6 / args.count
    print(f"{'':<28}{'µs/expr':>10}")
    print(f"{'rein parse (uncached)':<28}{ours * per:>10.1f}")
    print(f"{'reference parse + arity':<28}{theirs * per:>10.1f}")
    print(f"{'ratio rein/reference':<28}{ours / theirs:>10.2f}")
    print(f"{'rein parse (cached)':<28}{cached * per:>10.2f}")
    print(f"{'rein evaluate (a == b)':<28}{evals * per:>10.2f}")


if __name__ == "__main__":
    main()
