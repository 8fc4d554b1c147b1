# Writes an HLO module of about 3 MB whose names and texts the parser
# resolves late (tests/lit/hilo-opt/drop-input.test): operands used before
# they are defined (so every operand of the entry waits for its end), a
# control predecessor, a call to a computation defined later, a signature
# written differently from XLA's, instruction names another computation
# already took, and repeated shapes and replica groups.
import sys

n = int(sys.argv[1])
out = ["HloModule late_names", "", "ENTRY main (x:  f32[8]) -> f32[8] {",
       "  x = f32[8]{0} parameter(0)",
       "  first = f32[8]{0} add(f32[8]{0} x, f32[8]{0} later), control-predecessors={x}"]
for i in range(n):
    prev = "x" if i == 0 else f"a{i - 1}"
    out.append(f"  a{i} = f32[8]{{0}} all-reduce(f32[8]{{0}} {prev}), replica_groups={{{{0,1}},{{2,3}}}}, "
               f"to_apply=add, metadata={{op_name=\"layer/{i}\"}}")
out += ["  later = f32[8]{0} call(x), to_apply=sub",
        f"  ROOT r = f32[8]{{0}} multiply(a{n - 1}, first)", "}", "",
        "sub  (x: f32[8]) -> f32[8] {", "  x = f32[8]{0} parameter(0)", "  ROOT first = f32[8]{0} negate(x)", "}", "",
        "add {", "  x = f32[] parameter(0)", "  y = f32[] parameter(1)", "  ROOT s = f32[] add(x, y)", "}"]
sys.stdout.write("\n".join(out) + "\n")
