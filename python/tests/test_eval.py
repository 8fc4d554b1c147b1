"""hilo.run and hilo.check_equivalence."""

import numpy as np
import pytest

import hilo
from conftest import SMALL

TYPES = """HloModule types

ENTRY %main (a: bf16[2], b: f16[2], c: f32[2], d: f64[2], e: s8[2], f: u64[2], g: pred[2], h: s64[2]) -> (bf16[2], f16[2], f32[2], f64[2], s8[2], u64[2], pred[2], s64[2]) {
  %a = bf16[2]{0} parameter(0)
  %b = f16[2]{0} parameter(1)
  %c = f32[2]{0} parameter(2)
  %d = f64[2]{0} parameter(3)
  %e = s8[2]{0} parameter(4)
  %f = u64[2]{0} parameter(5)
  %g = pred[2]{0} parameter(6)
  %h = s64[2]{0} parameter(7)
  ROOT %t = (bf16[2]{0}, f16[2]{0}, f32[2]{0}, f64[2]{0}, s8[2]{0}, u64[2]{0}, pred[2]{0}, s64[2]{0}) tuple(%a, %b, %c, %d, %e, %f, %g, %h)
}
"""


def test_run_random_inputs(small):
    outputs = hilo.run(small)
    assert len(outputs) == 2  # num_partitions=2
    for device in outputs:
        assert len(device) == 1
        assert device[0].dtype == np.float32 and device[0].shape == (4,)
    # all-reduce: every device has the same sum.
    np.testing.assert_array_equal(outputs[0][0], outputs[1][0])
    # Deterministic per seed.
    np.testing.assert_array_equal(hilo.run(small, seed=0)[0][0], outputs[0][0])
    assert not np.array_equal(hilo.run(small, seed=1)[0][0], outputs[0][0])


def test_run_given_inputs(small):
    p = [np.array([1, 2, 3, 4], np.float32), np.array([10, 20, 30, 40], np.float32)]
    q = [np.ones(4, np.float32), np.zeros(4, np.float32)]
    outputs = hilo.run(small, inputs=[[p[0], q[0]], [p[1], q[1]]])
    expected = p[0] + q[0] + p[1] + q[1]
    np.testing.assert_array_equal(outputs[0][0], expected)
    np.testing.assert_array_equal(outputs[1][0], expected)
    # None keeps a parameter's random value; lists are array-likes.
    hilo.run(small, inputs=[[[1, 2, 3, 4], None], [[0, 0, 0, 0], None]])


def test_run_inputs_text(small):
    text = "param 0 device * : 1 1 1 1\nparam 1 device * : 2 2 2 2\n"
    outputs = hilo.run(small, inputs=text)
    np.testing.assert_array_equal(outputs[0][0], np.full(4, 6, np.float32))


def test_run_input_errors(small):
    with pytest.raises(ValueError, match="expected shape f32\\[4\\]"):
        hilo.run(small, inputs=[[np.zeros(3), None], [None, None]])
    with pytest.raises(ValueError, match="devices"):
        hilo.run(small, inputs=[[None, None]])
    with pytest.raises(TypeError):
        hilo.run(small, inputs=5)
    with pytest.raises(hilo.InterpreterError):
        hilo.run(small, inputs="param 9 device * : 1\n")


def test_dtypes_and_zero_copy():
    module = hilo.parse(TYPES)
    a = np.array([1.5, -2.015625], np.float32)  # bf16-representable
    inputs = [[a, [0.5, 1.0], [1.25, 2.5], [3.0, 4.0], [-3, 7], [2**64 - 1, 5], [True, False],
               [-(2**62), 9]]]
    (outputs,) = hilo.run(module, inputs=inputs, devices=1)
    dtypes = [o.dtype for o in outputs]
    assert dtypes == [np.float32, np.float16, np.float32, np.float64, np.int8, np.uint64,
                      np.bool_, np.int64]
    np.testing.assert_array_equal(outputs[0], a)
    assert outputs[5].tolist() == [2**64 - 1, 5]
    assert outputs[6].tolist() == [True, False]
    assert outputs[7].tolist() == [-(2**62), 9]
    # f64 / s64 / u64: views of the interpreter's buffers, read-only; others copies.
    for zero_copy in (outputs[3], outputs[5], outputs[7]):
        assert not zero_copy.flags.writeable
        assert zero_copy.base is not None
    assert outputs[2].flags.writeable
    # bf16 rounds: 1.00390625 is not a bf16 value.
    (rounded,) = hilo.run(module, inputs=[[[1.00390625, 1.0]] + inputs[0][1:]], devices=1)
    assert rounded[0].tolist() == [1.0, 1.0]


def test_check_equivalence(example_path):
    before = hilo.load(str(example_path))
    after = before.clone()
    hilo.run_passes(after, ["neuron-collective-pipeline", "dce"])
    result = hilo.check_equivalence(before, after)
    assert isinstance(result, hilo.EquivalenceResult)
    assert result.equivalent and bool(result)
    assert result.grid.devices == 8
    assert result.seed == 0
    assert result.after_error == ""
    assert len(result.outputs) == 1
    output = result.outputs[0]
    assert output.ok and output.shape == "bf16[64,2,512]" and output.mismatches == 0
    assert output.tolerance.rtol == pytest.approx(1e-2)
    assert str(result).endswith("EQUIVALENT\n")
    assert hilo.check_equivalence(before, after, devices=8, seed=3, rtol=0.0, atol=0.0)


def test_check_equivalence_detects_a_difference(small):
    changed = hilo.parse(SMALL.replace("add(f32[4]{0} %p", "subtract(f32[4]{0} %p"))
    result = hilo.check_equivalence(small, changed)
    assert not result.equivalent and not result
    assert result.outputs[0].mismatches > 0
    assert result.outputs[0].worst_device in (0, 1)
    with pytest.raises(TypeError):
        hilo.check_equivalence(small, changed, inputs=[[None, None]])


def test_complex_outputs_and_inputs():
    module = hilo.parse("""HloModule c

ENTRY %main (p: c64[2]) -> (c64[], c128[], c64[2]) {
  %a = c64[] constant((1, 2))
  %b = c64[] constant((3, -1))
  %m = c64[] multiply(%a, %b)
  %w = c128[] convert(%m)
  %p = c64[2]{0} parameter(0)
  ROOT %t = (c64[], c128[], c64[2]{0}) tuple(%m, %w, %p)
}
""")
    (outputs,) = hilo.run(module, devices=1)
    assert [o.dtype for o in outputs] == [np.complex64, np.complex128, np.complex64]
    assert outputs[0] == 5 + 5j and outputs[1] == 5 + 5j
    assert np.all(outputs[2].imag != 0)  # random complex parameters fill both parts
    with pytest.raises(ValueError, match="complex inputs are not supported"):
        hilo.run(module, inputs=[[np.zeros(2, np.complex64)]], devices=1)
