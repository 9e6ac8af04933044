"""Op-spec errors that name the op and the field, raised when the config is read (before any job)."""
import pytest

from autoperfect.spec import SpecError, parse_op

BASE = {"fn": "def f(x, w):\n    return x * w\n",
        "inputs": {"x": {"shape": [4, 8], "dtype": "float32"}, "w": {"shape": [8], "dtype": "float32"}}}


@pytest.mark.parametrize("fast, words", [
    ("mx.fast.nonexistent(x, w)", "mx.fast.nonexistent does not exist"),
    ("mx.nope.rms_norm(x, w, 1e-6)", "mx.nope does not exist"),
    ("mx.fast.rms_norm(y, w, 1e-6)", "names 'y', which is neither an input (x, w) nor mx"),
    ("mx.fast.rms_norm(x, w, 1e-6", "does not parse"),
])
def test_a_fast_expression_that_cannot_run_is_refused_when_read(fast, words):
    with pytest.raises(SpecError) as e:
        parse_op("f", {**BASE, "fast": fast})
    assert "op 'f', field 'fast'" in str(e.value) and words in str(e.value)


def test_a_fast_expression_over_the_inputs_mx_and_builtins_is_accepted():
    assert parse_op("f", {**BASE, "fast": "mx.fast.rms_norm(x, w, float(1e-6))"}).fast


@pytest.mark.parametrize("ref, words", [
    ("numpy:add", "'numpy:add' is a ufunc, not a Python function written with def"),
    ("numpy:nonexistent_function", "cannot import 'numpy:nonexistent_function'"),
    ("no_such_module_here:f", "cannot import 'no_such_module_here:f'"),
])
def test_a_reference_to_something_that_is_not_a_def_names_what_it_found(ref, words):
    op = parse_op("f", {**BASE, "fn": ref})
    with pytest.raises(SpecError) as e:
        op.function()
    assert "op 'f', field 'fn'" in str(e.value) and words in str(e.value)
