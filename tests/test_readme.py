"""README.md cannot rot: every command in its ```bash blocks is a real entry point (a ``.py``
file at the repository root or under ``bench/`` or ``scripts/``, ``python -m <module>`` of an
importable module, or a Makefile target), and every Hydra override it gives ``train.py`` or
``evaluate.py`` composes against ``configs/`` (the ``make_cfg`` fixture of tests/conftest.py,
as tests/test_configs.py composes). Also: the quick-start table has the columns the demo
prints (lokg/demo.py), every results-table cell equals the ledger line its footnote names,
and every relative link of it and of the docs/ pages its content moved to resolves to a file
and, with ``#anchor``, to one of its headings."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from lokg.demo import demo_table

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
LEDGER = ROOT / "bench" / "test_ledger.jsonl"
#: where a ``python <file>.py`` entry point may live
SCRIPT_DIRS = (ROOT, ROOT / "bench", ROOT / "scripts")
#: entry point -> the config it composes
HYDRA_SCRIPTS = {"train.py": "train", "evaluate.py": "evaluate"}
#: Hydra's own command-line flags (not overrides)
MULTIRUN_FLAGS = ("-m", "--multirun")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def bash_commands(text: str) -> list[str]:
    """The command lines of the ```bash blocks of ``text``: continuations (a trailing ``\\``)
    joined, comments and blank lines dropped."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        joined = re.sub(r"\\\n", " ", block)
        for line in joined.splitlines():
            if shlex.split(line, comments=True):
                commands.append(line.strip())
    return commands


def make_targets() -> set[str]:
    """The targets the Makefile defines (``name:`` rules, variable assignments left out)."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, re.MULTILINE))


def _override_sets(args: list[str]) -> list[list[str]]:
    """The override lists to compose: one, or under ``-m`` one per swept value (``k=a,b``
    composes ``k=a`` then ``k=b``, the other overrides at their first value)."""
    if not any(a in MULTIRUN_FLAGS for a in args):
        return [args]
    swept = [a.split("=", 1) for a in args if a not in MULTIRUN_FLAGS]  # [key, "a,b"] pairs
    swept = [(key, value.split(",")) for key, value in swept]
    width = max(len(values) for _, values in swept)
    return [[f"{k}={v[min(i, len(v) - 1)]}" for k, v in swept] for i in range(width)]


def _check_overrides(script: str, args: list[str], compose: Callable) -> list[str]:
    problems = [
        f"{a!r} after {script} is not a key=value override"
        for a in args
        if a not in MULTIRUN_FLAGS and ("=" not in a or a.startswith("-"))
    ]
    if problems:
        return problems
    for overrides in _override_sets(args):
        try:
            compose(HYDRA_SCRIPTS[script], overrides)
        except Exception as err:  # every way of failing to compose is the finding
            problems.append(f"{script} {' '.join(overrides)}: {type(err).__name__}: {err}")
    return problems


def _check_python(args: list[str], compose: Callable) -> list[str]:
    if not args:
        return ["python without a script or -m module"]
    if args[0] == "-m":
        module = args[1] if len(args) > 1 else ""
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        return [] if found else [f"python -m {module!r}: no such module"]
    path = (ROOT / args[0]).resolve()
    if path.suffix != ".py" or not path.is_file():
        return [f"{args[0]}: no such .py file"]
    if path.parent not in SCRIPT_DIRS:
        return [f"{args[0]}: not an entry point (a .py at the root, under bench/ or scripts/)"]
    if args[0] in HYDRA_SCRIPTS:
        return _check_overrides(args[0], args[1:], compose)
    return []


def check_command(line: str, compose: Callable) -> list[str]:
    """What is wrong with one README command line (``[]``: nothing). ``compose(name,
    overrides)`` composes ``configs/<name>.yaml`` and raises when the overrides do not."""
    argv = shlex.split(line, comments=True)
    while argv and _ENV.match(argv[0]):  # VAR=value prefixes, as in `BENCH_QUICK=1 make bench`
        argv = argv[1:]
    if not argv:
        return [f"{line!r}: no command"]
    program, args = argv[0], argv[1:]
    if program == "make":
        targets = [a for a in args if not a.startswith("-") and not _ENV.match(a)] or ["<none>"]
        known = make_targets()
        return [f"make {t}: no such Makefile target" for t in targets if t not in known]
    if Path(program).name in ("python", "python3", "python3.11"):
        return _check_python(args, compose)
    return [f"{program}: not an entry point of this repository (python or make)"]


def test_the_readme_shows_the_two_commands_and_both_entry_points():
    commands = bash_commands(README.read_text(encoding="utf-8"))
    assert "make demo" in commands and "make test" in commands
    assert any(" train.py " in f" {c} " for c in commands)
    assert any(" evaluate.py " in f" {c} " for c in commands)


@pytest.mark.parametrize(
    "line", bash_commands(README.read_text(encoding="utf-8")), ids=lambda line: line[:72]
)
def test_every_readme_command_is_an_entry_point_and_its_overrides_compose(make_cfg, line):
    assert check_command(line, make_cfg) == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("make nosuch", "make nosuch: no such Makefile target"),
        ("python nope.py", "nope.py: no such .py file"),
        ("python bench/bench_nope.py --data pq2h", "bench/bench_nope.py: no such .py file"),
        ("python lokg/demo.py", "lokg/demo.py: not an entry point"),
        ("python -m lokg.no_such_module", "python -m 'lokg.no_such_module': no such module"),
        ("python train.py data=pq9h", "train.py data=pq9h: "),
        ("python evaluate.py retriever=typo", "evaluate.py retriever=typo: "),
        ("python evaluate.py budgett=3", "evaluate.py budgett=3: "),
        ("python evaluate.py -m seed=1,x", "evaluate.py seed=x: "),
        ("python train.py show", "'show' after train.py is not a key=value override"),
        ("ls -la", "ls: not an entry point"),
    ],
)
def test_a_missing_entry_point_or_a_non_composing_override_is_found(make_cfg, line, expected):
    problems = check_command(line, make_cfg)
    assert problems and any(p.startswith(expected) for p in problems), problems


def test_commands_are_read_from_bash_blocks_only_with_continuations_and_comments():
    text = (
        "```bash\nmake demo   # a comment\n# only a comment\n\npython train.py \\\n"
        "  data=pq3h\n```\n`python inline.py`\n```python\nimport os\n```\n"
    )
    assert bash_commands(text) == ["make demo   # a comment", "python train.py    data=pq3h"]


def test_a_sweep_composes_each_value(make_cfg):
    assert _override_sets(["-m", "seed=1,2", "llm=qwen"]) == [
        ["seed=1", "llm=qwen"], ["seed=2", "llm=qwen"],
    ]  # fmt: skip
    assert check_command("python evaluate.py -m seed=1,2,3 llm=extractive", make_cfg) == []


def _tables(text: str) -> list[list[str]]:
    """Each Markdown table of ``text`` as its lines."""
    return [m.group(0).splitlines() for m in re.finditer(r"(?:^\|.*\|\n)+", text, re.MULTILINE)]


def test_the_quick_start_table_has_the_columns_the_demo_prints():
    head = demo_table([]).splitlines()
    demo = [t for t in _tables(README.read_text(encoding="utf-8")) if t[0] == head[0]]
    assert len(demo) == 1, "README: one table with the demo's header line"
    assert demo[0][1] == head[1] and len(demo[0]) > 2
    n_cells = head[0].count("|")
    assert all(row.count("|") == n_cells for row in demo[0])


#: a results-table cell: Hits@1 / coverage / evidence tokens, then its ledger line's footnote
_CELL = re.compile(r"(\d\.\d{3}) / (\d\.\d{3}) / (\d+|n/r)\[\^(\d+)\]")


def _ledger_cell(record: dict) -> tuple[str, str, str]:
    """The README's rendering of a ledger line's B = 128 numbers."""
    numbers = record["numbers"]
    n = numbers["128"] if record["bench"] == "bench_budget_curve" else numbers["all"]
    tokens = n.get("mean_tokens", n.get("tok/q"))
    shown = "n/r" if tokens is None else f"{tokens:.0f}"
    return f"{n['hits@1']:.3f}", f"{n['coverage']:.3f}", shown


def test_every_results_cell_is_the_ledger_line_its_footnote_names():
    text = README.read_text(encoding="utf-8")
    ledger = LEDGER.read_text(encoding="utf-8").splitlines()
    cells = _CELL.findall(text.replace("**", ""))
    assert len(cells) >= 12, "the results table: paper, ours and a baseline on four sets"
    for hits, coverage, tokens, line in cells:
        record = json.loads(ledger[int(line) - 1])
        assert (hits, coverage, tokens) == _ledger_cell(record), f"ledger line {line}"
        note = re.search(rf"^\[\^{line}\]: ledger line {line}: (.*)$", text, re.MULTILINE)
        assert note, f"no footnote [^{line}] naming ledger line {line}"
        named = (f"`{record['bench']}`", f"`{record['configuration']}`", record["dataset"])
        assert all(n in note.group(1) for n in named), f"footnote {line}: expected {named}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.*)$", text, re.MULTILINE)}


#: the README and the pages it moved its content to
DOCS = (README, *(ROOT / "docs" / f"{n}.md" for n in ("results", "history", "datasets", "configs")))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_relative_link_resolves_to_a_file_and_a_heading(doc):
    links = re.findall(r"\]\(([^)\s]+)\)", doc.read_text(encoding="utf-8"))
    assert links
    for link in links:
        if re.match(r"^[a-z]+://", link):
            continue
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        assert path.exists(), f"{doc.name} link {link}: no {target}"
        if anchor:
            assert anchor in _anchors(path), f"{doc.name} link {link}: no heading #{anchor}"


def test_slugs_follow_github():
    assert _slug("Your own KG (`data=custom`)") == "your-own-kg-datacustom"
    assert _slug("Retriever-only on PQ-2H at B = 2048") == "retriever-only-on-pq-2h-at-b--2048"
    assert _slug("The README's table") == "the-readmes-table"
