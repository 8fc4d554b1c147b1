"""run_passes and list_passes: the report is hilo-opt --report's content."""

import json
import os
import subprocess

import pytest

import hilo


def test_list_passes():
    names = hilo.list_passes()
    for name in ["dce", "collective-stream-id-checker", "neuron_unique_channel_id_enforcer",
                 "neuron-collective-pipeline"]:
        assert name in names
    pipelines = hilo.list_pipelines()
    assert "neuron-collective-pipeline" in pipelines
    assert "dce" not in pipelines


def test_run_passes_report(small):
    report = hilo.run_passes(small, ["dce"])
    assert isinstance(report, hilo.PassReport)
    assert report.changed
    assert len(report) == 1
    entry = report[0]
    assert entry["name"] == "dce" and entry["changed"] is True and entry["module"] == "small"
    assert report.entries("dce") == [entry]
    assert report.to_json() == {"passes": report.passes}
    assert "dead" not in small.to_text()
    # Nothing left to remove: unchanged.
    assert not hilo.run_passes(small, "dce").changed


def test_report_matches_hilo_opt(example_path, tmp_path):
    hilo_opt = os.path.join(os.environ.get("HILO_BUILD_DIR", ""), "bin", "hilo-opt")
    if not os.path.exists(hilo_opt):
        pytest.fail(f"hilo-opt not built at {hilo_opt} (HILO_BUILD_DIR)")
    passes = ["neuron-collective-pipeline", "dce"]
    report_file = tmp_path / "report.json"
    result = subprocess.run([hilo_opt, str(example_path), "--passes=" + ",".join(passes),
                             "--report", str(report_file)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    module = hilo.load(str(example_path))
    report = hilo.run_passes(module, passes)
    assert report.to_json() == json.loads(report_file.read_text())
    assert module.to_text() == result.stdout


def test_pass_options_and_explain(example_path):
    module = hilo.load(str(example_path))
    report = hilo.run_passes(module, ["neuron-collective-pipeline"], explain=True,
                             collective_matmul_nxd=False, force_stream_id_injection=True,
                             sb_to_sb_threshold_mb=16)
    assert report.explanations
    assert all(": " in line for line in report.explanations)


def test_no_verify():
    module = hilo.parse("""HloModule m

ENTRY %main (p: f32[4], q: f32[8]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[8]{0} parameter(1)
  ROOT %x = f32[4]{0} add(f32[4]{0} %p, f32[8]{0} %q)
}
""", verify=False)
    report = hilo.run_passes(module, ["dce"], verify=False)
    assert not report.changed
