// The reference SPMD interpreter: runs an HLO module on D simulated devices.
//
// Every device runs the same program. Each device is a resumable evaluation
// (an explicit stack of computation frames, no recursion on graph depth) that
// runs until it reaches a collective; a single-threaded lock-step scheduler
// then executes every collective whose group members are all waiting at it,
// and resumes them. The result is deterministic. A collective that can never
// complete (devices disagree on which collective comes next, a device that is
// in none of its groups, a device that finished while others wait) is an
// error naming the instruction and the devices, never a hang.
//
// See docs/interpreter.md for the group-mode rules, the
// AwsNeuronCollectiveMatmul kernel contract and the input file format.
#ifndef HILO_EVAL_INTERPRETER_H_
#define HILO_EVAL_INTERPRETER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hilo/eval/ops.h"
#include "hilo/eval/value.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {
namespace eval {

// The simulated devices: replica_count x num_partitions; device id (XLA's
// flattened id) = replica_id * num_partitions + partition_id.
struct DeviceGrid {
  int64_t replica_count = 1;
  int64_t num_partitions = 1;
  int64_t devices() const { return replica_count * num_partitions; }
  DeviceIds ids(int64_t device) const { return {device / num_partitions, device % num_partitions}; }
};

struct InterpreterOptions {
  // Total device count. Overrides the module header: see ResolveDeviceGrid.
  std::optional<int64_t> devices;
  // Explicit overrides of the header values (take precedence over `devices`).
  std::optional<int64_t> replica_count;
  std::optional<int64_t> num_partitions;
  // Seed of the pseudo-random parameter values.
  uint64_t seed = 0;
  // Text of an inputs file (see docs/interpreter.md); empty = random only.
  std::string inputs_text;
  // A while loop running more iterations than this is an error (not a hang).
  int64_t max_while_iterations = 1000000;
  // An array (parameter or result) with more elements than this is an error,
  // not an out-of-memory crash (8 bytes per element per device). Checked
  // from the shapes before anything runs (CheckStaticLimits).
  int64_t max_array_elements = kDefaultMaxArrayElements;
  // The values held at once, over all devices (8 bytes per element): a
  // lower bound is checked before the run (CheckStaticLimits), the live
  // total after every instruction.
  int64_t max_memory_bytes = kDefaultMaxMemoryBytes;
  // Work: elements computed over all devices (an instruction counts its
  // output elements; a dot, convolution or collective matmul its output
  // elements times the contraction length). A lower bound (the entry
  // computation once, loops not counted) is checked before the run.
  int64_t max_work = kDefaultMaxWork;
  // Past this instant the run stops with a DeadlineExceeded status.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Called about every 50 ms of a run with its progress (may be empty).
  std::function<void(int64_t instructions_executed, int64_t work)> progress;
  // Threads running the devices between collectives (each device's span up
  // to its next collective is independent of the others'; collectives run
  // on the calling thread, in device order, so results do not depend on it).
  // 0: the environment variable HILO_EVAL_THREADS if set, else 2 (this
  // project's machine has two cores); 1: everything on the calling thread.
  int threads = 0;

  static constexpr int64_t kDefaultMaxArrayElements = int64_t{1} << 27;
  static constexpr int64_t kDefaultMaxMemoryBytes = int64_t{4} << 30;
  static constexpr int64_t kDefaultMaxWork = int64_t{1} << 36;
};

// The checks that can be made from the shapes alone, before anything runs:
// every array of every computation within max_array_elements; the entry
// parameters of all devices, and the largest array on every device, within
// max_memory_bytes; one pass over the entry computation within max_work.
// A failure is ResourceExhausted with a message saying which limit, which
// instruction and which flag raises it.
absl::Status CheckStaticLimits(const HloModule& module, const DeviceGrid& grid,
                               const InterpreterOptions& options);

// replica_count and num_partitions from the header (absent = 1), then the
// overrides. `devices` = N replaces whichever of the two is > 1 (replicas
// when neither is; partitions when neither is and some collective of the
// module has a channel_id, the SPMD-partitioner convention); when both are
// > 1 it must equal their product. With neither a header value nor
// `devices` (XLA's test modules), the grid is sized to the largest id the
// collectives name (replica_groups, source_target_pairs, the collective
// matmul's tp_degree x num_groups), as replicas or as partitions by the
// majority of those collectives' group modes.
absl::StatusOr<DeviceGrid> ResolveDeviceGrid(const HloModule& module,
                                             const InterpreterOptions& options);

// XLA's collective group modes (GetCollectiveOpGroupMode).
enum class GroupMode { kCrossReplica, kCrossPartition, kCrossReplicaAndPartition, kFlattenedId };
absl::string_view GroupModeName(GroupMode mode);
// no channel_id -> cross-replica (use_global_device_ids=true is then an
// error); channel_id and an op without use_global_device_ids (all-to-all,
// collective-permute, collective-broadcast) -> cross-partition; channel_id
// and use_global_device_ids false/absent on all-gather, all-reduce,
// reduce-scatter -> cross-replica-and-partition; true -> flattened ids.
absl::StatusOr<GroupMode> CollectiveGroupMode(const HloInstruction& instruction);
// The groups of global device ids the collective forms on `grid`, in group
// order (each group's order is the rank order). Empty `replica_groups`
// means one group of every id of the mode (replicas, partitions, or every
// device in flattened-id mode). Ids out of range or repeated are an error.
absl::StatusOr<std::vector<std::vector<int64_t>>> CollectiveDeviceGroups(
    const HloInstruction& instruction, const DeviceGrid& grid);

// `rhs_contracting_dim=R,tp_degree=G,num_groups=N,use_sb_to_sb=B`.
struct CollectiveMatmulConfig {
  int64_t rhs_contracting_dim = 0;
  int64_t tp_degree = 0;
  int64_t num_groups = 0;
  int64_t use_sb_to_sb = 0;
};
absl::StatusOr<CollectiveMatmulConfig> ParseCollectiveMatmulConfig(absl::string_view text);
inline constexpr absl::string_view kCollectiveMatmulTarget = "AwsNeuronCollectiveMatmul";
// The kernel contract of an AwsNeuronCollectiveMatmul custom-call checked on
// its shapes alone (docs/interpreter.md): two array operands, operand 0
// [M, K], operand 1 [K, N...] (R=0) or [N, K] (R=1), tp_degree x M x N
// result elements. When it fails, every run of the instruction fails.
absl::Status CheckCollectiveMatmulShapes(const HloInstruction& instr);

// inputs[device][parameter number] of the entry computation.
using ModuleInputs = std::vector<std::vector<Value>>;

// Deterministic pseudo-random values per parameter, tuple leaf and device:
// floats uniform in [-1, 1] (rounded to the type), signed integers in
// [-4, 4], unsigned in [0, 8], pred 0/1. Devices get different values,
// except integer and pred scalars (loop counters, indices, flags), which are
// the same on every device.
absl::StatusOr<ModuleInputs> MakeRandomInputs(const HloModule& module, const DeviceGrid& grid,
                                              uint64_t seed,
                                              int64_t max_array_elements = int64_t{1} << 24);
// Overwrites values named by an inputs file (docs/interpreter.md):
//   param <P>[.<leaf>] device <D|*> : <values, row-major>
absl::Status ApplyInputsText(const HloModule& module, const DeviceGrid& grid,
                             absl::string_view text, ModuleInputs* inputs);

struct RunResult {
  DeviceGrid grid;
  std::vector<Value> outputs;  // per device: the entry root's value
  int64_t collectives_executed = 0;  // group executions
  int64_t instructions_executed = 0;  // over all devices
  int64_t work = 0;                   // see InterpreterOptions::max_work
  // Parts evaluated as uninterpreted functions (uninterpreted.h): kind
  // ("custom-call AwsNeuronTransferWithStaticRing", "elided constant", ...)
  // -> number of distinct instructions.
  std::map<std::string, int64_t> uninterpreted;
};

absl::StatusOr<RunResult> RunSpmd(const HloModule& module, const DeviceGrid& grid,
                                  const ModuleInputs& inputs, const InterpreterOptions& options);
// ResolveDeviceGrid + MakeRandomInputs + ApplyInputsText + RunSpmd.
absl::StatusOr<RunResult> RunModule(const HloModule& module, const InterpreterOptions& options);

}  // namespace eval
}  // namespace hilo

#endif  // HILO_EVAL_INTERPRETER_H_
