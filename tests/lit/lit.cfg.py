# lit configuration of hilo's FileCheck tests.
#
# Run through CTest (the `lit` test of any build directory), or by hand:
#   python3 /usr/lib/llvm-14/build/utils/lit/lit.py -v <build>/tests/lit
# which loads <build>/tests/lit/lit.site.cfg.py (written by CMake) and then
# this file. Running lit on this source directory directly also works: the
# tools are then taken from $HILO_BIN_DIR, else <source>/build/bin.
import os

import lit.formats

config.name = "hilo"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".hlo", ".test"]
# Inputs/ holds files that tests read; they are not tests themselves.
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py", "README.md"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

source_root = os.path.dirname(os.path.dirname(config.test_source_root))
hilo_bin_dir = getattr(config, "hilo_bin_dir", None) or os.environ.get(
    "HILO_BIN_DIR", os.path.join(source_root, "build", "bin"))
llvm_bin_dir = getattr(config, "llvm_bin_dir", None) or "/usr/lib/llvm-14/bin"
if getattr(config, "hilo_obj_root", None):
    config.test_exec_root = os.path.join(config.hilo_obj_root, "tests", "lit")

# hilo tools first, then FileCheck / not / split-file, then the usual PATH.
config.environment["PATH"] = os.pathsep.join(
    [hilo_bin_dir, llvm_bin_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
# Passes read these; a developer's shell must not change test results.
for var in ["NEURON_COLLECTIVE_MATMUL_NXD", "NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE",
            "NEURON_COLLECTIVE_MATMUL_SB_TO_SB_THRESHOLD_IN_MB"]:
    config.environment.pop(var, None)

# %shared: the shared folder (the specification's opcode table, the real-HLO
# corpus), which is not part of the repository. As for the unit tests
# (tests/unit/shared_dir.h): $HILO_SHARED_DIR, else the build's default
# (<source>/../shared). Tests that read it say `REQUIRES: shared`; without
# the folder they are UNSUPPORTED (skipped), unless it is required
# (HILO_SHARED_DIR set, HILO_REQUIRE_SHARED set and not 0, or CI=true with
# HILO_REQUIRE_SHARED unset): then the suite fails.
shared_dir = os.environ.get("HILO_SHARED_DIR") or getattr(
    config, "hilo_default_shared_dir", None) or os.path.join(os.path.dirname(source_root), "shared")
require = os.environ.get("HILO_REQUIRE_SHARED")
shared_required = bool(os.environ.get("HILO_SHARED_DIR")) or (
    require != "0" if require else os.environ.get("CI") == "true")
if os.path.isdir(shared_dir):
    config.available_features.add("shared")
elif shared_required:
    lit_config.fatal("hilo: the shared folder (spec/hlo-opcodes.tsv, corpus/) is required here "
                     "(HILO_SHARED_DIR, HILO_REQUIRE_SHARED or CI=true is set) but %s is not a "
                     "folder" % shared_dir)
else:
    lit_config.note("hilo: tests that need the shared folder (REQUIRES: shared) are skipped: "
                    "not found at %s; to run them, set HILO_SHARED_DIR=<folder>" % shared_dir)
config.substitutions.append(("%shared", shared_dir))
# static-tools: the tools are linked fully static (HILO_STATIC_TOOLS,
# cmake/StaticTools.cmake), which tests of their link layout require.
if getattr(config, "hilo_static_tools", "").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("static-tools")
# link-order: the static tools' code is laid out by tools/link-order.txt
# (HILO_LINK_ORDER, cmake/LinkOrder.cmake), which tests of their start-up
# memory require.
if getattr(config, "hilo_link_order", "").upper() in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("link-order")
    # resident-layout: and libprotobuf's code and .eh_frame placed by
    # cmake/resident-layout.ld (HILO_RESIDENT_LAYOUT).
    if getattr(config, "hilo_resident_layout", "").upper() in ("ON", "1", "TRUE", "YES"):
        config.available_features.add("resident-layout")
# %examples: the bundled example modules.
config.substitutions.append(("%examples", os.path.join(source_root, "examples")))
