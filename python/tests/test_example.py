"""The notebook-style example runs and finds what it is about."""

import os
import subprocess
import sys

from conftest import SOURCE_DIR


def test_example_runs():
    env = dict(os.environ)
    result = subprocess.run([sys.executable, str(SOURCE_DIR / "examples" / "neuron_pipeline.py")],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "fused dot custom-call" in result.stdout
    assert result.stderr == ""
    assert "stream 1: all-gather.w_up" in result.stdout
    assert "stream 0: reduce-scatter.out" in result.stdout
    assert "\nEQUIVALENT\n" in result.stdout
