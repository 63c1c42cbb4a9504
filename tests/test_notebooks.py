"""notebooks/walkthrough.ipynb runs top to bottom on the bundled data (a real Jupyter kernel,
nbclient), in a fresh project root, and is committed without outputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
WALKTHROUGH = NOTEBOOKS / "walkthrough.ipynb"


def test_walkthrough_is_committed_with_outputs_stripped():
    nb = json.loads(WALKTHROUGH.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(not c["outputs"] and c["execution_count"] is None for c in code)


@pytest.mark.slow
def test_walkthrough_executes_on_the_bundled_data(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("LOKG_ROOT", str(tmp_path))
    # the kernel starts in notebooks/: import this checkout's lokg, not another install's
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join([str(NOTEBOOKS.parent), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    nb_check = "import lokg, pathlib; print('lokg from', pathlib.Path(lokg.__file__).parent.parent)"
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    nb = nbformat.read(WALKTHROUGH, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(nb_check))
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    text = "\n".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    # each part printed what it measured: SCOS's merges, TAIMR's paths, ITTC's table, the curve
    assert "planted pairs found:" in text and "-> |R*| =" in text
    assert "candidate triples" in text and "S_final" in text
    assert "at B = 48:" in text and "tokens/q, coverage" in text
    assert "walkthrough ran in" in text
    assert f"lokg from {NOTEBOOKS.parent}" in text
