#!/usr/bin/env python3
"""Notebook-style tour of the hilo Python package (docs/python.md).

Loads the bundled TP x FSDP MLP block, runs the Neuron collective pipeline and dce,
lists the dots folded into AwsNeuronCollectiveMatmul and the collectives stamped with a
stream id, and checks on 8 simulated devices that the rewritten module computes the
same outputs. Each `# %%` cell can be pasted into a notebook.

    PYTHONPATH=build/python python3 examples/neuron_pipeline.py [module.hlo]
"""

# %% Load a module (what JAX's `.as_text(dialect="hlo")` or torch-xla dump).
import pathlib
import sys

import hilo

path = sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path(__file__).with_name("tp_fsdp_mlp.hlo"))
module = hilo.load(path)
print(f"{module.name}: {module.instruction_count} instructions, "
      f"{module.num_partitions} partitions")
for instruction in module.entry_computation.instructions:
    if instruction.opcode in ("all-gather", "reduce-scatter", "all-reduce"):
        print(f"  {instruction.opcode:15} {instruction.name:20} channel_id={instruction.channel_id}"
              f" groups={instruction.replica_groups}")

# %% Run the Neuron collective pipeline, then dce, on a copy.
before = module.clone()
report = hilo.run_passes(module, ["neuron-collective-pipeline", "dce"], explain=True)
for entry in report:
    print(f"pass {entry['name']}: changed={entry['changed']}")
for line in report.explanations:
    print("  explain:", line)

# %% The dots the looped-einsum replacer folded into the collective matmul kernel.
fused = [i for i in module.instructions
         if i.opcode == "custom-call" and i.custom_call_target == "AwsNeuronCollectiveMatmul"]
for instruction in fused:
    operands = ", ".join(f"{o.name}: {o.shape}" for o in instruction.operands)
    print(f"fused dot {instruction.name} = {instruction.shape} ({operands})")
    print(f"  backend_config={instruction.attributes['backend_config']}")

# %% The collectives the stream-id injector stamped.
stamped = {i.name: i.frontend_attributes["stream_id"] for i in module.instructions
           if "stream_id" in i.frontend_attributes}
for name, stream in stamped.items():
    print(f"stream {stream}: {name}")

# %% Check on simulated devices that the rewrite computes the same outputs.
result = hilo.check_equivalence(before, module)
print(result, end="")
outputs = hilo.run(module)
print(f"device 0 output: {outputs[0][0].dtype}{list(outputs[0][0].shape)}")

if not (fused and stamped and result.equivalent):
    sys.exit("expected a fused dot, stamped streams and an equivalent module")
