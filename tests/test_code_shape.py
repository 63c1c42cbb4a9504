"""The shape of lokg's code: no function longer than :data:`MAX_LINES` lines unless a comment
at its top says why (a line starting ``# long:``, before its first statement after the
docstring): a long function is either split into named helpers or one sequence that reads
best whole, and then it says so."""

import ast
from pathlib import Path

LOKG = Path(__file__).resolve().parent.parent / "lokg"
MAX_LINES = 80
MARKER = "# long:"


def _top_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> list[str]:
    """The lines from ``def`` to the first statement after the docstring (exclusive)."""
    body = node.body
    has_doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    has_doc = has_doc and isinstance(body[0].value.value, str)
    first = body[1] if has_doc and len(body) > 1 else body[0]
    return lines[node.lineno - 1 : first.lineno - 1]


def long_unmarked(source: str, where: str) -> list[str]:
    """``where::name (n lines)`` of every function of ``source`` over :data:`MAX_LINES` lines
    without a ``# long: <why>`` line at its top."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        n = node.end_lineno - node.lineno + 1
        marked = any(
            line.strip().startswith(MARKER) and line.strip()[len(MARKER) :].strip()
            for line in _top_lines(node, lines)
        )
        if n > MAX_LINES and not marked:
            found.append(f"{where}::{node.name} ({n} lines)")
    return found


def test_no_long_function_without_a_reason():
    found = [
        hit
        for path in sorted(LOKG.rglob("*.py"))
        for hit in long_unmarked(
            path.read_text(encoding="utf-8"), str(path.relative_to(LOKG.parent))
        )
    ]
    assert not found, "split these, or say why at their top with '# long: <why>':\n" + "\n".join(
        found
    )


def _function(n_lines: int, top: str = "", doc: bool = True) -> str:
    """A function of exactly ``n_lines`` lines: ``def``, an optional docstring and ``top``
    line, then ``x = 0`` lines."""
    head = ["def f():"] + (['    """Doc."""'] if doc else []) + ([f"    {top}"] if top else [])
    return "\n".join(head + ["    x = 0"] * (n_lines - len(head))) + "\n"


def test_the_rule_by_hand():
    assert long_unmarked(_function(80), "m.py") == []
    assert long_unmarked(_function(81), "m.py") == ["m.py::f (81 lines)"]
    assert long_unmarked(_function(81, "# long: one sequence, read in order"), "m.py") == []
    assert long_unmarked(_function(81, "# long: one sequence", doc=False), "m.py") == []
    assert long_unmarked(_function(81, "# long:"), "m.py") == ["m.py::f (81 lines)"]  # no why
    # a marker further down is not at the top
    late = _function(81).replace("    x = 0\n", "    x = 0\n    # long: too late\n", 1)
    assert long_unmarked(late, "m.py") == ["m.py::f (82 lines)"]
