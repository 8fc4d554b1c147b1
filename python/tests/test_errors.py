"""Errors: HloError subclasses with file / line / column; failed calls leave no trace."""

import gc

import pytest

import hilo
from conftest import SMALL

BAD_TEXT = """HloModule bad

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %x = f32[4]{0} bogus(f32[4]{0} %p)
}
"""

INVALID = """HloModule invalid

ENTRY %main (p: f32[4], q: f32[8]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[8]{0} parameter(1)
  ROOT %x = f32[4]{0} add(f32[4]{0} %p, f32[8]{0} %q)
}
"""


def test_parse_error_has_location():
    with pytest.raises(hilo.ParseError) as info:
        hilo.parse(BAD_TEXT, filename="bad.hlo")
    error = info.value
    assert isinstance(error, hilo.HloError)
    assert error.file == "bad.hlo"
    assert error.line == 5
    assert error.column == 23
    assert "bogus" in error.message
    assert str(error).startswith("bad.hlo:5:23: error: ")
    assert "^" in str(error)  # the caret line
    assert error.code == "INVALID_ARGUMENT"


def test_load_parse_error_names_the_file(tmp_path):
    path = tmp_path / "bad.hlo"
    path.write_text(BAD_TEXT)
    with pytest.raises(hilo.ParseError) as info:
        hilo.load(str(path))
    assert info.value.file == str(path)
    assert (info.value.line, info.value.column) == (5, 23)


def test_load_missing_file(tmp_path):
    with pytest.raises(hilo.LoadError) as info:
        hilo.load(str(tmp_path / "nope.hlo"))
    assert isinstance(info.value, OSError)
    assert "nope.hlo" in str(info.value)


def test_verify_error_is_located():
    with pytest.raises(hilo.VerifyError) as info:
        hilo.parse(INVALID, filename="invalid.hlo")
    error = info.value
    assert error.file == "invalid.hlo"
    assert error.line == 6
    assert error.column == 8  # the name in `ROOT %x = ...`
    module = hilo.parse(INVALID, filename="invalid.hlo", verify=False)
    with pytest.raises(hilo.VerifyError) as info:
        hilo.verify(module)
    assert (info.value.line, info.value.column) == (6, 8)
    # Passes and the interpreter refuse an unverified invalid module.
    with pytest.raises(hilo.VerifyError):
        hilo.run_passes(module, ["dce"])
    with pytest.raises(hilo.VerifyError):
        hilo.run(module)


def test_located_after_the_file_changed(tmp_path):
    # The module keeps its own copy of the text its errors point into: the file may be
    # rewritten or truncated meanwhile (a mapped file would crash on reading).
    path = tmp_path / "invalid.hlo"
    path.write_text(INVALID)
    module = hilo.load(str(path), verify=False)
    path.write_text("")
    with pytest.raises(hilo.VerifyError) as info:
        hilo.verify(module)
    assert (info.value.line, info.value.column) == (6, 8)
    assert "ROOT %x" in str(info.value)


def test_verify_ok(small):
    assert hilo.verify(small) is None


def test_unknown_pass_changes_nothing(small):
    before = small.to_text()
    with pytest.raises(hilo.PassError) as info:
        hilo.run_passes(small, ["dce", "no-such-pass"])
    assert "no-such-pass" in str(info.value)
    assert "valid passes" in str(info.value)
    assert info.value.report is None
    assert small.to_text() == before


def test_unknown_pass_option():
    module = hilo.parse(SMALL)
    with pytest.raises(TypeError, match="no_such_option"):
        hilo.run_passes(module, ["dce"], no_such_option=True)
    with pytest.raises(TypeError, match="'sb_to_sb_threshold_mb' must be an int, not str"):
        hilo.run_passes(module, ["dce"], sb_to_sb_threshold_mb="x")
    with pytest.raises(TypeError, match="'collective_matmul_nxd' must be a bool, not int"):
        hilo.run_passes(module, ["dce"], collective_matmul_nxd=1)
    assert "dead" in module.to_text()  # nothing ran


def test_pass_error_raises_with_report(send_recv_path):
    module = hilo.load(str(send_recv_path))
    with pytest.raises(hilo.PassError) as info:
        hilo.run_passes(module, ["neuron_unique_channel_id_enforcer"])
    error = info.value
    assert "module is invalid after pass 'neuron_unique_channel_id_enforcer'" in str(error)
    assert error.code == "INTERNAL"
    assert error.report is not None
    assert [entry["name"] for entry in error.report] == ["neuron_unique_channel_id_enforcer"]
    assert any("no longer pairs" in w for w in error.report.warnings)
    # The module is still usable: the failed call left no busy flag behind, and the
    # views see what the pass did.
    assert "channel_id=3" in module.to_text()
    with pytest.raises(hilo.VerifyError):
        hilo.verify(module)
    # The same module with the option the warning names goes through.
    module = hilo.load(str(send_recv_path))
    report = hilo.run_passes(module, ["neuron_unique_channel_id_enforcer"],
                             unique_channel_ids_skip_send_recv=True)
    assert report.changed
    assert report[0]["skip_send_recv"] is True


def test_failed_calls_do_not_leak():
    import resource
    import sys
    # A failed parse drops its text: no reference is left behind...
    text = BAD_TEXT + "\n"
    references = sys.getrefcount(text)
    for _ in range(10):
        with pytest.raises(hilo.ParseError):
            hilo.parse(text)
        with pytest.raises(hilo.VerifyError):
            hilo.parse(INVALID + "\n")
    assert sys.getrefcount(text) == references
    # ...and many failing calls on fresh 1 MB texts do not grow the process.
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for k in range(200):
        big_bad = BAD_TEXT.replace("bogus", f"bogus{k}" + "x" * 1_000_000)
        with pytest.raises(hilo.ParseError):
            hilo.parse(big_bad)
        big_invalid = INVALID.replace("HloModule invalid", f"HloModule invalid{k}" + " " * 1_000_000)
        with pytest.raises(hilo.VerifyError):
            hilo.parse(big_invalid)
    del big_bad, big_invalid
    gc.collect()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # 400 leaked 1 MB texts would be 400 MB.
    assert after - before < 50_000  # KiB


def test_interpreter_error(small):
    with pytest.raises(hilo.InterpreterError) as info:
        hilo.run(small, devices=3)  # the groups {0,1} do not cover device 2
    assert isinstance(info.value, hilo.HloError)
