"""The documented install command (cmake --install BUILD --component python) installs a
package that imports and works from where it was installed."""

import os
import pathlib
import subprocess
import sys

import pytest


def test_install_into_destdir(tmp_path):
    build = os.environ.get("HILO_BUILD_DIR")
    site = os.environ.get("HILO_PYTHON_INSTALL_DIR")
    if not build or not site:
        pytest.fail("HILO_BUILD_DIR and HILO_PYTHON_INSTALL_DIR are set by ctest")
    env = dict(os.environ, DESTDIR=str(tmp_path))
    subprocess.run(["cmake", "--install", build, "--component", "python"], check=True, env=env,
                   capture_output=True)
    installed = tmp_path / pathlib.Path(site).relative_to("/")
    assert (installed / "hilo" / "__init__.py").exists()
    assert (installed / "hilo" / "_hilo.pyi").exists()
    assert list((installed / "hilo").glob("_hilo*.so"))
    script = ("import hilo, sys; m = hilo.parse('HloModule m\\n\\nENTRY %e {\\n  ROOT %c = f32[] "
              "constant(1)\\n}\\n'); print(hilo.__file__); print(hilo.run(m)[0][0])")
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(installed)}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(str(installed))
    assert lines[1] == "1.0"
