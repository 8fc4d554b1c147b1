"""hilo: XLA's HLO substrate and Neuron's collective passes, from Python.

    import hilo
    module = hilo.load("model.hlo")            # or hilo.parse(text)
    for instruction in module.entry_computation.instructions:
        print(instruction.name, instruction.opcode, instruction.shape)
    report = hilo.run_passes(module, ["neuron-collective-pipeline", "dce"])
    outputs = hilo.run(module, devices=8)      # per device, a list of numpy arrays

See docs/python.md.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Union

from . import _hilo
from ._errors import (HloError, InterpreterError, LoadError, ModuleBusyError, ParseError,
                      PassError, StaleViewError, VerifyError)
from ._hilo import (Computation, DeviceGrid, EquivalenceResult, Instruction, Module,
                    OutputComparison, Shape, Tolerance, check_equivalence, load, parse, run,
                    verify)
from ._report import PassReport

__all__ = [
    "Computation", "DeviceGrid", "EquivalenceResult", "HloError", "Instruction",
    "InterpreterError", "LoadError", "Module", "ModuleBusyError", "OutputComparison",
    "ParseError", "PassError", "PassReport", "Shape", "StaleViewError", "Tolerance",
    "VerifyError", "check_equivalence", "list_passes", "list_pipelines", "load", "parse",
    "run", "run_passes", "verify",
]


def run_passes(module: Module, passes: Union[str, Iterable[str]], *, verify: bool = True,
               explain: bool = False, **pass_options: Any) -> PassReport:
    """Runs passes and named pipelines on ``module``, in order, changing it in place.

    ``passes`` is a list of names (or one comma-separated string), as ``hilo-opt
    --passes=``. ``pass_options`` are hilo-opt's pass flags with underscores:
    ``collective_matmul_nxd``, ``collective_permute_aggressive``,
    ``sb_to_sb_threshold_mb``, ``collective_matmul_strict``,
    ``unique_channel_ids_skip_send_recv``, ``force_stream_id_injection`` (an option not
    given reads its environment variable, as hilo-opt does). With ``verify`` (the
    default) the module is verified before the passes and after each one.
    ``explain=True`` also gathers the ``--explain`` lines.

    Raises PassError (an unknown name, before anything runs; or a pass failing, whose
    ``report`` holds the entries of the passes that ran) and VerifyError (an invalid
    input module).
    """
    if isinstance(passes, str):
        names = [name.strip() for name in passes.split(",") if name.strip()]
    else:
        names = list(passes)
    return PassReport(_hilo._run_passes(module, names, verify, explain, pass_options))


def list_passes() -> List[str]:
    """The names run_passes accepts: every pass, then every named pipeline (sorted)."""
    listing = _hilo._list_passes()
    return list(listing["passes"]) + list(listing["pipelines"])


def list_pipelines() -> Dict[str, str]:
    """Named pipelines and what each stands for (a pass list or a description)."""
    return dict(_hilo._list_passes()["pipelines"])


def _clone(self: Module) -> Module:
    """A separate copy of the module (printed and parsed again)."""
    return parse(self.to_text(), filename=self.source_file)


Module.clone = _clone
