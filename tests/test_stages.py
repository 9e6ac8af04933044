"""The stages as the workflow runs them, on one op, where a verdict depends on more than one stage."""
import json

from autoperfect import artifacts, stages
from autoperfect.judge import Settings
from autoperfect.spec import parse_op


def test_an_op_the_backend_cannot_render_is_recorded_unsupported(tmp_path):
    """Integer arithmetic, which the CPU renderer does not write yet: validation.json fails the op
    with generation's reason and says it is unsupported (the report's UNSUPPORTED, not FAILED)."""
    spec = parse_op("count", {"fn": "def count(x, i):\n    return x * i.astype(mx.float32)\n",
                              "inputs": {"x": {"shape": [4, 8], "dtype": "float32"},
                                         "i": {"shape": [4, 8], "dtype": "int32"}}})
    text = json.dumps(spec.to_json(), sort_keys=True)
    stages.trace(text, tmp_path / "graph.json")
    stages.canon(tmp_path / "graph.json", tmp_path / "canonical.json")
    stages.fuse_stage(tmp_path / "canonical.json", tmp_path / "regions.json")
    stages.lower(tmp_path / "canonical.json", tmp_path / "regions.json", tmp_path / "kernels.json")
    stages.generate(tmp_path / "kernels.json", "cpu", "compiler", tmp_path / "candidates")
    stages.compile_stage(tmp_path / "candidates", tmp_path / "cache", tmp_path / "compile.json")
    settings = {k: v for k, v in Settings().__dict__.items()}
    stages.validate(text, tmp_path / "kernels.json", tmp_path / "compile.json", settings, tmp_path / "validation.json")
    verdict = artifacts.read_json(tmp_path / "validation.json")
    assert verdict["passed"] is False and verdict["unsupported"] is True
    assert "can't render it: integer arithmetic" in verdict["reason"]
