"""The layering of docs/DESIGN.md ("Layout and layering"), checked on the imports of every
module of lokg/ (imports inside functions included: ``ast.walk`` sees them).

Every module belongs to a *unit*: a package (``lokg.taimr``) or a root module
(``lokg.pipeline``). :data:`ALLOWED` gives each unit its floor, the units it may import besides
itself; a module that fits no unit fails :func:`test_every_module_has_a_floor`, so a new module
gets its place in the table. Lower floors never import higher ones; the method never imports
Lightning (only the training side does, :data:`LIGHTNING`); ITTC never imports TAIMR; the
graph of lokg's imports has no cycle.
"""

import ast
from pathlib import Path

import pytest

LOKG = Path(__file__).resolve().parent.parent / "lokg"

# Floors, lowest first (docs/DESIGN.md numbers them 1-9).
#: 1. the leaves every layer shares: they import nothing of lokg but each other (atomic writes
#: write the manifest that loads check, which raises the shared error)
LEAVES = {"lokg.typing", "lokg.errors", "lokg.manifest", "lokg.atomic_io"}
#: the graph and the leaves under it
BASE = LEAVES | {"lokg.kg"}
#: 3. the networks' floor: shared types, the graph, the sentence encoder, token counting
NN = BASE | {"lokg.embed", "lokg.tokens"}
#: 2. the shared services below the method
SHARED = BASE | {"lokg.tokens", "lokg.embed", "lokg.retrieval", "lokg.normalize"}
#: 4. what the method (SCOS, TAIMR, ITTC) stands on
METHOD = SHARED | {"lokg.nn"}
#: the method itself and all below it
WITH_METHOD = METHOD | {"lokg.scos", "lokg.ittc", "lokg.taimr"}
#: 9. what the jobs stand on: every unit below them
BELOW_JOBS = WITH_METHOD | {
    "lokg.config", "lokg.console", "lokg.paper_settings",  # settings and printing
    "lokg.llm", "lokg.baselines", "lokg.eval",  # 5-6
    "lokg.data", "lokg.models", "lokg.callbacks",  # 7, the Lightning side
    "lokg.artifacts", "lokg.assemble", "lokg.pipeline", "lokg.show", "lokg.labels",  # 8
}  # fmt: skip

#: unit -> the lokg units (prefixes) it may import besides itself
ALLOWED = {
    # 1. the leaves, and the graph
    "lokg.typing": set(),
    "lokg.errors": set(),
    "lokg.manifest": {"lokg.errors"},
    "lokg.atomic_io": {"lokg.manifest", "lokg.errors"},
    "lokg.kg": LEAVES,
    # 2. shared services and settings: token counting (the one budget rule), answer
    # normalisation, the sentence encoder, the config schemas, the console, the paper's
    # settings; the retrieval contract over a graph
    "lokg.tokens": LEAVES,
    "lokg.normalize": LEAVES,
    "lokg.embed": LEAVES,
    "lokg.config": LEAVES,
    "lokg.console": LEAVES,
    "lokg.paper_settings": LEAVES,
    "lokg.retrieval": BASE | {"lokg.normalize"},
    # 3. the networks: no retrieval, no Lightning
    "lokg.nn": NN,
    # 4. the method: none imports another (ITTC encodes any candidate set)
    "lokg.scos": METHOD,
    "lokg.ittc": METHOD,
    "lokg.taimr": METHOD,
    # 5. the LLM client knows no method; the baselines stand on the method's parts
    "lokg.llm": {"lokg.tokens", "lokg.errors", "lokg.normalize"},
    "lokg.baselines": METHOD | {"lokg.taimr", "lokg.ittc", "lokg.llm"},
    # 6. evaluation: method-agnostic
    "lokg.eval": {
        "lokg.typing",
        "lokg.tokens",
        "lokg.llm",
        "lokg.errors",
        "lokg.normalize",
        "lokg.atomic_io",
    },
    # 7. the Lightning side: the DataModule and datasets, the LightningModules, early stopping
    "lokg.data": WITH_METHOD,
    "lokg.models": WITH_METHOD | {"lokg.data"},
    "lokg.callbacks": LEAVES,
    # 8. the offline artifacts, the LOKG API (no eval, no Lightning), the views of its output
    "lokg.artifacts": WITH_METHOD,
    # the composition root (the parts of a LOKG from a config) sits below the pipeline
    "lokg.assemble": WITH_METHOD | {"lokg.llm", "lokg.baselines", "lokg.artifacts", "lokg.config"},
    "lokg.pipeline": WITH_METHOD
    | {"lokg.llm", "lokg.baselines", "lokg.artifacts", "lokg.config", "lokg.assemble"},
    "lokg.show": WITH_METHOD | {"lokg.llm", "lokg.eval"},
    "lokg.labels": LEAVES
    | {"lokg.paper_settings", "lokg.artifacts", "lokg.baselines", "lokg.eval"},
    # 9. the jobs and their helpers
    "lokg.preemption": LEAVES | {"lokg.artifacts", "lokg.callbacks"},
    "lokg.train_stages": WITH_METHOD
    | {"lokg.artifacts", "lokg.assemble", "lokg.pipeline", "lokg.callbacks"},
    "lokg.train": BELOW_JOBS | {"lokg.train_stages", "lokg.preemption"},
    "lokg.evaluate": BELOW_JOBS,
    "lokg.demo": BELOW_JOBS,
    "lokg.cli": LEAVES | {"lokg.config", "lokg.console", "lokg.llm"},
    # tools over the jobs' files: the corrupt-file sweep loads artifacts as the jobs do
    "lokg.tools": BELOW_JOBS | {"lokg.cli"},
}

#: The modules that may import Lightning (``pytorch_lightning`` or ``lightning``): the
#: LightningModules and their DDP helpers, the DataModule, and the training job with its
#: helpers (lokg/callbacks.py's EarlyStopping and lokg/preemption.py's SIGTERM checkpoint are
#: Lightning callbacks train.py installs); lokg/evaluate.py seeds with Lightning's
#: ``seed_everything`` (STYLE 13). Nothing else: the method,
#: the networks, retrieval, the LLM client, evaluation and the pipeline stay plain.
LIGHTNING = (
    "lokg/models/*_module.py",
    "lokg/models/ddp.py",
    "lokg/data/datamodule.py",
    "lokg/train.py",
    "lokg/train_stages.py",
    "lokg/callbacks.py",
    "lokg/preemption.py",
    "lokg/evaluate.py",
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(LOKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(LOKG.rglob("*.py"))}


def resolve(name: str) -> str:
    """The lokg module ``name`` loads: itself, or the longest module its dotted name starts
    with (``lokg.kg.graph.KnowledgeGraph`` -> ``lokg.kg.graph``)."""
    parts = name.split(".")
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    return ".".join(parts) or name


def imports_of(path: Path) -> set[str]:
    """Every name ``path`` imports, at module level or inside a function;
    ``from a import b`` gives ``a.b`` (a submodule or a name in ``a``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def lokg_imports(path: Path) -> set[str]:
    """The lokg modules ``path`` imports (itself excluded)."""
    own = module_name(path)
    found = {resolve(n) for n in imports_of(path) if n == "lokg" or n.startswith("lokg.")}
    return found - {own, "lokg"}


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def unit_of(module: str) -> str | None:
    """The unit (key of :data:`ALLOWED`) ``module`` belongs to, or ``None``."""
    units = [u for u in ALLOWED if under(module, u)]
    return max(units, key=len) if units else None


def allowed(name: str, unit: str) -> bool:
    return any(under(name, p) for p in ALLOWED[unit] | {unit})


def may_import_lightning(path: str) -> bool:
    return any(Path(path).match(pattern) for pattern in LIGHTNING)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (``[a, b, ..., a]``), or ``None`` when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_every_module_has_a_floor():
    homeless = [name for name in MODULES if name != "lokg" and unit_of(name) is None]
    assert not homeless, f"add these to ALLOWED (and docs/DESIGN.md's layers): {homeless}"


def test_the_package_root_imports_nothing():
    assert not lokg_imports(LOKG / "__init__.py")


@pytest.mark.parametrize("unit", sorted(ALLOWED))
def test_unit_imports_only_lower_floors(unit):
    paths = [p for name, p in MODULES.items() if unit_of(name) == unit]
    assert paths, f"{unit}: no module"
    bad = [
        f"{path.relative_to(LOKG.parent)} imports {name}"
        for path in paths
        for name in sorted(lokg_imports(path))
        if not allowed(name, unit)
    ]
    assert not bad, "\n".join(bad)


def test_only_the_training_side_imports_lightning():
    bad = [
        str(path.relative_to(LOKG.parent))
        for path in MODULES.values()
        if not may_import_lightning(str(path.relative_to(LOKG.parent)))
        and any(n.split(".")[0] in ("pytorch_lightning", "lightning") for n in imports_of(path))
    ]
    assert not bad, bad


def test_the_import_graph_has_no_cycle():
    """Over every import, those inside functions included (a lazy import does not make a
    cycle harmless: the layers above already forbid the upward edge it would need)."""
    cycle = find_cycle({name: lokg_imports(path) for name, path in MODULES.items()})
    assert cycle is None, " -> ".join(cycle)


def test_the_rule_itself():
    assert not allowed("lokg.taimr.build", "lokg.ittc")  # ITTC encodes any candidate set
    assert allowed("lokg.nn.rel_gat", "lokg.taimr")
    assert not allowed("lokg.models.gat_module", "lokg.taimr")  # the Lightning wrapper is above
    assert not allowed("lokg.scos", "lokg.kg")
    assert not allowed("lokg.retrieval", "lokg.nn")  # the networks sit below retrieval
    assert not allowed("lokg.eval.records", "lokg.pipeline")  # pipeline -> eval, never back
    assert allowed("lokg.data.loaders", "lokg.models") and not allowed("lokg.models", "lokg.data")
    assert not allowed("lokg.evaluate", "lokg.train")
    assert unit_of("lokg.taimr.walk.net") == "lokg.taimr"
    assert unit_of("lokg.pipeline") == "lokg.pipeline" and unit_of("lokg.pipelines") is None
    assert resolve("lokg.kg.graph.KnowledgeGraph") == "lokg.kg.graph"
    assert resolve("lokg.train_stages") == "lokg.train_stages"  # `from lokg import train_stages`
    assert may_import_lightning("lokg/models/walk_module.py")
    assert not may_import_lightning("lokg/models/__init__.py")
    assert not may_import_lightning("lokg/pipeline.py")
    assert not may_import_lightning("lokg/taimr/walk/net.py")


def test_find_cycle_by_hand():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": set(), "c": {"c"}}) == ["c", "c"]


def test_models_holds_only_lightning_modules():
    """The networks live in lokg/nn (and the walk's in lokg/taimr/walk): lokg/models holds the
    LightningModules and their DDP helpers, nothing else."""
    names = sorted(p.name for p in (LOKG / "models").iterdir() if p.name != "__pycache__")
    assert all(n.endswith("_module.py") or n in ("__init__.py", "ddp.py") for n in names), names
