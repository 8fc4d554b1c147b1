"""Views never outlive what they point to: they keep the module alive, and a view
of something a pass removed raises StaleViewError instead of reading freed memory."""

import gc
import threading
import weakref

import pytest

import hilo
from conftest import SMALL

# dce removes %dead and the computation %unused, whose instructions go with it.
WITH_DEAD_COMPUTATION = """HloModule m

%unused (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %n = f32[] negate(f32[] %x)
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %dead = f32[4]{0} negate(f32[4]{0} %p)
  ROOT %r = f32[4]{0} abs(f32[4]{0} %p)
}
"""


def test_views_keep_the_module_alive():
    module = hilo.parse(SMALL)
    entry = module.entry_computation
    root = entry.root
    shape = root.shape
    del module
    gc.collect()
    assert root.name == "ar"
    assert root.operands[0].name == "sum"
    assert entry.name == "main"
    assert str(shape) == "f32[4]{0}"
    assert root.module.name == "small"  # and a new Module object for it


def test_module_freed_once_views_are_gone():
    module = hilo.parse(SMALL)
    views = module.instructions
    ref = weakref.ref(module)
    del module
    gc.collect()
    # pybind11's Module object may go; the C++ module stays while views exist.
    assert views[-1].name == "ar"
    del views
    gc.collect()
    assert ref() is None


def test_removed_instruction_raises_not_crashes():
    module = hilo.parse(WITH_DEAD_COMPUTATION)
    by_name = {i.name: i for i in module.instructions}
    unused = module.computation("unused")
    report = hilo.run_passes(module, ["dce"])
    assert report.changed
    # dce removed %dead (kept allocated) and %unused with its instructions (freed).
    for name in ["dead", "x", "n"]:
        with pytest.raises(hilo.StaleViewError, match=f"instruction '{name}'"):
            by_name[name].opcode
        with pytest.raises(hilo.StaleViewError):
            str(by_name[name])
    with pytest.raises(hilo.StaleViewError, match="computation 'unused'"):
        unused.instructions
    # What survived still works, and sees the change.
    assert by_name["p"].users == [by_name["r"]]
    assert by_name["r"].opcode == "abs"
    assert [i.name for i in module.instructions] == ["p", "r"]
    # New objects at freed addresses are not mistaken for the old ones.
    for _ in range(20):
        hilo.parse(WITH_DEAD_COMPUTATION)
    with pytest.raises(hilo.StaleViewError):
        by_name["n"].name


def test_removed_after_module_dropped():
    module = hilo.parse(WITH_DEAD_COMPUTATION)
    dead = [i for i in module.instructions if i.name == "dead"][0]
    hilo.run_passes(module, "dce")
    del module
    gc.collect()
    with pytest.raises(hilo.StaleViewError):
        dead.shape


def chain_module(length):
    lines = ["HloModule chain", "", "ENTRY %main (p: f32[4]) -> f32[4] {", "  %p = f32[4]{0} parameter(0)"]
    previous = "p"
    for k in range(length):
        lines.append(f"  %n{k} = f32[4]{{0}} negate(f32[4]{{0}} %{previous})")
        previous = f"n{k}"
    lines.append(f"  ROOT %r = f32[4]{{0}} abs(f32[4]{{0}} %{previous})")
    lines.append("}")
    return "\n".join(lines) + "\n"


def busy_errors(background, foreground):
    """Runs background() on another thread, and foreground() here while it runs, until
    foreground raised ModuleBusyError (20 attempts); returns those errors."""
    refused = []
    for _ in range(20):
        thread = threading.Thread(target=background)
        thread.start()
        while thread.is_alive():
            try:
                foreground()
            except hilo.ModuleBusyError as error:
                refused.append(error)
        thread.join()
        if refused:
            break
    return refused


def test_busy_module_is_refused():
    # While run_passes changes a module on one thread (without the GIL: this thread
    # could not run otherwise), the others are refused with ModuleBusyError, never
    # let in to race.
    module = hilo.parse(chain_module(50_000))

    def read():
        module.to_text()
        module.entry_computation.root.opcode

    refused = busy_errors(lambda: hilo.run_passes(module, ["dce"]), read)
    assert refused, "never saw the module busy"
    assert "run_passes on another thread" in str(refused[0])
    assert module.entry_computation.root.opcode == "abs"


@pytest.mark.parametrize("read", [lambda m: m.to_text(), lambda m: hilo.run(m)])
def test_module_being_read_is_not_changed(read):
    # to_text and run read the module without the GIL (which is why another thread
    # gets to call run_passes meanwhile); run_passes then refuses it.
    module = hilo.parse(chain_module(50_000))
    refused = busy_errors(lambda: read(module), lambda: hilo.run_passes(module, ["dce"]))
    assert refused, "never saw the module being read"
    assert "being read on another thread" in str(refused[0])


def test_concurrent_readers_and_writer_do_not_crash():
    module = hilo.parse(chain_module(2_000))
    outcomes = []

    def reader():
        for _ in range(200):
            try:
                [i.opcode for i in module.instructions]
                outcomes.append("read")
            except (hilo.ModuleBusyError, hilo.StaleViewError):
                outcomes.append("refused")

    thread = threading.Thread(target=reader)
    thread.start()
    for _ in range(50):
        try:
            hilo.run_passes(module, ["dce"])
        except hilo.ModuleBusyError:
            pass
    thread.join()
    assert len(outcomes) == 200
    assert module.to_text().count("negate") == 2_000
