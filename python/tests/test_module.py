"""parse / load / to_text / save / str, and navigation."""

import pathlib

import pytest

import hilo
from conftest import SMALL


def test_parse_round_trips(small):
    assert small.name == "small"
    assert small.to_text() == SMALL
    assert str(small) == SMALL
    assert small.instruction_count == 8
    assert small.num_partitions == 2
    assert small.replica_count is None
    assert small.source_file == "small.hlo"
    assert repr(small) == "<hilo.Module small, 8 instructions>"


def test_parse_bytes():
    module = hilo.parse(SMALL.encode())
    assert module.to_text() == SMALL
    assert module.source_file == "<string>"


def test_load_and_save(example_path, tmp_path):
    module = hilo.load(str(example_path))
    assert module.name == "tp_fsdp_mlp"
    assert module.source_file == str(example_path)
    out = tmp_path / "out.hlo"
    module.save(str(out))
    assert out.read_text() == module.to_text()
    assert hilo.load(str(out)).to_text() == module.to_text()


@pytest.mark.parametrize("suffix", [".pb", ".pbtxt"])
def test_save_and_load_proto_forms(example_path, tmp_path, suffix):
    # The file's extension picks XLA's HloModuleProto (binary or text), and
    # load() reads it back by content to the same module.
    module = hilo.load(str(example_path))
    out = tmp_path / ("out" + suffix)
    module.save(str(out))
    data = out.read_bytes()
    assert not data.startswith(b"HloModule")
    if suffix == ".pbtxt":
        assert data.startswith(b"name:")
    back = hilo.load(str(out))
    assert back.to_text() == module.to_text()


def test_save_error_leaves_nothing(small, tmp_path):
    target = tmp_path / "missing-dir" / "out.hlo"
    with pytest.raises(hilo.LoadError) as info:
        small.save(str(target))
    assert isinstance(info.value, OSError)
    assert not target.parent.exists()


def test_computations(small):
    names = [c.name for c in small.computations]
    assert names == ["add", "main"]
    entry = small.entry_computation
    assert entry.name == "main" and entry.is_entry
    assert small.computation("add") == small.computations[0]
    assert not small.computation("add").is_entry
    with pytest.raises(KeyError):
        small.computation("nope")
    assert len(entry) == 5
    assert [p.name for p in entry.parameters] == ["p", "q"]
    assert entry.root.name == "ar"
    assert entry.module.name == "small"
    assert [i.name for i in small.instructions] == ["x", "y", "s", "p", "q", "sum", "dead", "ar"]


def test_instruction_fields(small):
    by_name = {i.name: i for i in small.instructions}
    ar = by_name["ar"]
    assert ar.opcode == "all-reduce"
    assert str(ar.shape) == "f32[4]{0}"
    assert ar.shape == "f32[4]{0}"
    assert ar.shape.element_type == "f32"
    assert ar.shape.dimensions == (4,)
    assert ar.shape.rank == 1 and ar.shape.is_array and not ar.shape.is_tuple
    assert ar.shape.layout == (0,)
    assert ar.operands == [by_name["sum"]]
    assert by_name["sum"].users == [ar]
    assert ar.users == []
    assert ar.channel_id == 7
    assert ar.replica_groups == [[0, 1]]
    assert ar.frontend_attributes == {"_xla_stream": "1", "kind": "tp"}
    assert ar.attributes == {
        "channel_id": "7",
        "replica_groups": "{{0,1}}",
        "use_global_device_ids": "true",
        "to_apply": "%add",
        "frontend_attributes": '{_xla_stream="1",kind="tp"}',
    }
    assert list(ar.attributes) == ["channel_id", "replica_groups", "use_global_device_ids",
                                   "to_apply", "frontend_attributes"]
    assert ar.called_computations == [small.computation("add")]
    assert ar.computation == small.entry_computation
    assert ar.metadata is None
    assert by_name["sum"].metadata == 'op_name="jit(f)/add"'
    assert by_name["sum"].channel_id is None
    assert by_name["sum"].replica_groups is None
    assert by_name["sum"].attributes == {"metadata": '{op_name="jit(f)/add"}'}
    assert by_name["p"].parameter_number == 0
    assert by_name["q"].parameter_number == 1
    assert ar.parameter_number is None
    assert ar.custom_call_target is None
    assert str(ar).startswith("%ar = f32[4]{0} all-reduce(f32[4]{0} %sum), channel_id=7")
    assert repr(ar) == "<hilo.Instruction ar>"
    assert isinstance(ar.unique_id, int)
    assert ar.module.name == "small"


def test_views_are_hashable_and_equal(small):
    first = small.instructions
    second = small.instructions
    assert first == second
    assert len({*first, *second}) == len(first)
    assert len(set(small.computations) | set(small.computations)) == 2


def test_tuple_shape_and_iota_groups():
    module = hilo.parse("""HloModule t, replica_count=4

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[2,3]) -> (f32[2,3], s32[]) {
  %p = f32[2,3]{1,0} parameter(0)
  %ar = f32[2,3]{1,0} all-reduce(f32[2,3]{1,0} %p), replica_groups=[2,2]<=[4], to_apply=%add
  %c = s32[] constant(3)
  ROOT %t = (f32[2,3]{1,0}, s32[]) tuple(%ar, %c)
}
""")
    root = module.entry_computation.root
    assert root.shape.is_tuple
    assert [str(s) for s in root.shape.tuple_shapes] == ["f32[2,3]{1,0}", "s32[]"]
    assert root.shape.element_type == "tuple"
    ar = root.operands[0]
    assert ar.replica_groups == [[0, 1], [2, 3]]
    assert ar.attributes["replica_groups"] == "[2,2]<=[4]"


def test_module_clone_is_separate(small):
    copy = small.clone()
    assert copy.to_text() == small.to_text()
    hilo.run_passes(copy, ["dce"])
    assert "dead" not in copy.to_text()
    assert "dead" in small.to_text()
