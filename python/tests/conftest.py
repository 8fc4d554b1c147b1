"""Shared fixtures of the hilo Python tests (run by ctest's python_tests)."""

import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("HILO_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))

# A small module with a collective, frontend attributes, metadata and a
# called computation.
SMALL = """HloModule small, num_partitions=2

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[4], q: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[4]{0} parameter(1)
  %sum = f32[4]{0} add(f32[4]{0} %p, f32[4]{0} %q), metadata={op_name="jit(f)/add"}
  %dead = f32[4]{0} multiply(f32[4]{0} %p, f32[4]{0} %q)
  ROOT %ar = f32[4]{0} all-reduce(f32[4]{0} %sum), channel_id=7, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add, frontend_attributes={_xla_stream="1",kind="tp"}
}
"""


@pytest.fixture
def small():
    import hilo
    return hilo.parse(SMALL, filename="small.hlo")


@pytest.fixture
def example_path():
    return SOURCE_DIR / "examples" / "tp_fsdp_mlp.hlo"


@pytest.fixture
def send_recv_path():
    # A module the channel-id enforcer breaks (its verifier then fails it).
    return SOURCE_DIR / "tests" / "lit" / "passes" / "channel-id-send-recv.hlo"
