// HloOpcode: the opcode enum of the HLO IR.
//
// The numeric value of every enumerator is exactly the one in
// shared/spec/hlo-opcodes.tsv (the order of XLA's HloOpcode enum that the
// specification's opcode bytes index). Opcodes XLA added after that table
// follow it, from 0x7b on. tests/unit/hlo_opcode_test.cc reads the
// file and checks every value, text name and arity.
#ifndef HILO_IR_HLO_OPCODE_H_
#define HILO_IR_HLO_OPCODE_H_

#include <cstdint>
#include <optional>
#include "absl/strings/string_view.h"

namespace hilo {

// Arity value meaning "any number of operands".
inline constexpr int kVariadic = -1;

// V(enumerator, value, text name, arity)
#define HILO_OPCODE_LIST(V) \
  V(kAbs, 0x00, "abs", 1) \
  V(kAdd, 0x01, "add", 2) \
  V(kAddDependency, 0x02, "add-dependency", 2) \
  V(kAfterAll, 0x03, "after-all", kVariadic) \
  V(kAllGather, 0x04, "all-gather", kVariadic) \
  V(kAllGatherDone, 0x05, "all-gather-done", 1) \
  V(kAllGatherStart, 0x06, "all-gather-start", kVariadic) \
  V(kAllReduce, 0x07, "all-reduce", kVariadic) \
  V(kAllReduceDone, 0x08, "all-reduce-done", 1) \
  V(kAllReduceStart, 0x09, "all-reduce-start", kVariadic) \
  V(kAllToAll, 0x0a, "all-to-all", kVariadic) \
  V(kAnd, 0x0b, "and", 2) \
  V(kAsyncDone, 0x0c, "async-done", 1) \
  V(kAsyncStart, 0x0d, "async-start", kVariadic) \
  V(kAsyncUpdate, 0x0e, "async-update", 1) \
  V(kAtan2, 0x0f, "atan2", 2) \
  V(kBatchNormGrad, 0x10, "batch-norm-grad", 5) \
  V(kBatchNormInference, 0x11, "batch-norm-inference", 5) \
  V(kBatchNormTraining, 0x12, "batch-norm-training", 3) \
  V(kBitcast, 0x13, "bitcast", 1) \
  V(kBitcastConvert, 0x14, "bitcast-convert", 1) \
  V(kBroadcast, 0x15, "broadcast", 1) \
  V(kCall, 0x16, "call", kVariadic) \
  V(kCbrt, 0x17, "cbrt", 1) \
  V(kCeil, 0x18, "ceil", 1) \
  V(kCholesky, 0x19, "cholesky", 1) \
  V(kClamp, 0x1a, "clamp", 3) \
  V(kClz, 0x1b, "count-leading-zeros", 1) \
  V(kCollectiveBroadcast, 0x1c, "collective-broadcast", kVariadic) \
  V(kCollectivePermute, 0x1d, "collective-permute", kVariadic) \
  V(kCollectivePermuteDone, 0x1e, "collective-permute-done", 1) \
  V(kCollectivePermuteStart, 0x1f, "collective-permute-start", kVariadic) \
  V(kCompare, 0x20, "compare", 2) \
  V(kComplex, 0x21, "complex", 2) \
  V(kConcatenate, 0x22, "concatenate", kVariadic) \
  V(kConditional, 0x23, "conditional", kVariadic) \
  V(kConstant, 0x24, "constant", 0) \
  V(kConvert, 0x25, "convert", 1) \
  V(kConvolution, 0x26, "convolution", 2) \
  V(kCopy, 0x27, "copy", 1) \
  V(kCopyDone, 0x28, "copy-done", 1) \
  V(kCopyStart, 0x29, "copy-start", 1) \
  V(kCos, 0x2a, "cosine", 1) \
  V(kCustomCall, 0x2b, "custom-call", kVariadic) \
  V(kDivide, 0x2c, "divide", 2) \
  V(kDomain, 0x2d, "domain", 1) \
  V(kDot, 0x2e, "dot", 2) \
  V(kDynamicReshape, 0x2f, "dynamic-reshape", kVariadic) \
  V(kDynamicSlice, 0x30, "dynamic-slice", kVariadic) \
  V(kDynamicUpdateSlice, 0x31, "dynamic-update-slice", kVariadic) \
  V(kErf, 0x32, "erf", 1) \
  V(kExp, 0x33, "exponential", 1) \
  V(kExpm1, 0x34, "exponential-minus-one", 1) \
  V(kFft, 0x35, "fft", 1) \
  V(kFloor, 0x36, "floor", 1) \
  V(kFusion, 0x37, "fusion", kVariadic) \
  V(kGather, 0x38, "gather", 2) \
  V(kGetDimensionSize, 0x39, "get-dimension-size", 1) \
  V(kGetTupleElement, 0x3a, "get-tuple-element", 1) \
  V(kImag, 0x3b, "imag", 1) \
  V(kInfeed, 0x3c, "infeed", 1) \
  V(kIota, 0x3d, "iota", 0) \
  V(kIsFinite, 0x3e, "is-finite", 1) \
  V(kLog, 0x3f, "log", 1) \
  V(kLog1p, 0x40, "log-plus-one", 1) \
  V(kLogistic, 0x41, "logistic", 1) \
  V(kMap, 0x42, "map", kVariadic) \
  V(kMaximum, 0x43, "maximum", 2) \
  V(kMinimum, 0x44, "minimum", 2) \
  V(kMultiply, 0x45, "multiply", 2) \
  V(kNegate, 0x46, "negate", 1) \
  V(kNot, 0x47, "not", 1) \
  V(kOptimizationBarrier, 0x48, "opt-barrier", 1) \
  V(kOr, 0x49, "or", 2) \
  V(kOutfeed, 0x4a, "outfeed", 2) \
  V(kPad, 0x4b, "pad", 2) \
  V(kParameter, 0x4c, "parameter", 0) \
  V(kPartitionId, 0x4d, "partition-id", 0) \
  V(kPopulationCount, 0x4e, "popcnt", 1) \
  V(kPower, 0x4f, "power", 2) \
  V(kRaggedAllToAll, 0x50, "ragged-all-to-all", 6) \
  V(kRaggedDot, 0x51, "ragged-dot", 3) \
  V(kReal, 0x52, "real", 1) \
  V(kRecv, 0x53, "recv", 1) \
  V(kRecvDone, 0x54, "recv-done", 1) \
  V(kReduce, 0x55, "reduce", kVariadic) \
  V(kReducePrecision, 0x56, "reduce-precision", 1) \
  V(kReduceScatter, 0x57, "reduce-scatter", kVariadic) \
  V(kReduceWindow, 0x58, "reduce-window", kVariadic) \
  V(kRemainder, 0x59, "remainder", 2) \
  V(kReplicaId, 0x5a, "replica-id", 0) \
  V(kReshape, 0x5b, "reshape", 1) \
  V(kReverse, 0x5c, "reverse", 1) \
  V(kRng, 0x5d, "rng", kVariadic) \
  V(kRngBitGenerator, 0x5e, "rng-bit-generator", 1) \
  V(kRngGetAndUpdateState, 0x5f, "rng-get-and-update-state", 0) \
  V(kRoundNearestAfz, 0x60, "round-nearest-afz", 1) \
  V(kRoundNearestEven, 0x61, "round-nearest-even", 1) \
  V(kRsqrt, 0x62, "rsqrt", 1) \
  V(kScatter, 0x63, "scatter", kVariadic) \
  V(kSelect, 0x64, "select", 3) \
  V(kSelectAndScatter, 0x65, "select-and-scatter", 3) \
  V(kSend, 0x66, "send", 2) \
  V(kSendDone, 0x67, "send-done", 1) \
  V(kSetDimensionSize, 0x68, "set-dimension-size", 2) \
  V(kShiftLeft, 0x69, "shift-left", 2) \
  V(kShiftRightArithmetic, 0x6a, "shift-right-arithmetic", 2) \
  V(kShiftRightLogical, 0x6b, "shift-right-logical", 2) \
  V(kSign, 0x6c, "sign", 1) \
  V(kSin, 0x6d, "sine", 1) \
  V(kSlice, 0x6e, "slice", 1) \
  V(kSort, 0x6f, "sort", kVariadic) \
  V(kSqrt, 0x70, "sqrt", 1) \
  V(kStochasticConvert, 0x71, "stochastic-convert", 2) \
  V(kSubtract, 0x72, "subtract", 2) \
  V(kTan, 0x73, "tan", 1) \
  V(kTanh, 0x74, "tanh", 1) \
  V(kTopK, 0x75, "topk", 1) \
  V(kTranspose, 0x76, "transpose", 1) \
  V(kTriangularSolve, 0x77, "triangular-solve", 2) \
  V(kTuple, 0x78, "tuple", kVariadic) \
  V(kWhile, 0x79, "while", 1) \
  V(kXor, 0x7a, "xor", 2) \
  /* Opcodes XLA added after the specification's table; values follow it. */ \
  V(kAcos, 0x7b, "acos", 1) \
  V(kAcosh, 0x7c, "acosh", 1) \
  V(kAsin, 0x7d, "asin", 1) \
  V(kAsinh, 0x7e, "asinh", 1) \
  V(kAtanh, 0x7f, "atanh", 1) \
  V(kCosh, 0x80, "cosh", 1) \
  V(kSinh, 0x81, "sinh", 1) \
  V(kScan, 0x82, "scan", kVariadic) \
  V(kScaledDot, 0x83, "scaled-dot", 4) \

enum class HloOpcode : uint8_t {
#define HILO_DECLARE_OPCODE(enumerator, value, text, arity) enumerator = value,
  HILO_OPCODE_LIST(HILO_DECLARE_OPCODE)
#undef HILO_DECLARE_OPCODE
};

// Opcodes of the specification's table (0x00..0x7a): the values its
// bitmasks index.
inline constexpr int kSpecOpcodeCount = 0x7b;
// All opcodes: the table's, then the few XLA added later (acos, sinh, scan,
// scaled-dot...), numbered after it so that no table value moves. See
// docs/text-format.md.
inline constexpr int kHloOpcodeCount = 0x84;

// The text name XLA prints, e.g. "all-gather".
absl::string_view HloOpcodeString(HloOpcode opcode);

// Inverse of HloOpcodeString; nullopt for an unknown name.
std::optional<HloOpcode> StringToHloOpcode(absl::string_view name);

// Number of operands the opcode takes, or kVariadic.
int HloOpcodeArity(HloOpcode opcode);

// The opcodes of the instructions that carry a channel_id (XLA's
// HloChannelInstruction): all-gather, all-gather-start, all-reduce,
// all-reduce-start, all-to-all, collective-broadcast, collective-permute,
// collective-permute-start, ragged-all-to-all, recv, recv-done,
// reduce-scatter, send, send-done (recv-done: see the decision in
// docs/passes/stream-and-channel-ids.md). The widest of the collective
// sets (analysis/collective_predicates.h): the module's channel generation
// (hlo_module.h) follows the instructions of these opcodes.
// In the header: AddInstruction and RemoveInstruction ask on every call.
inline bool IsChannelOpcode(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kRaggedAllToAll:
    case HloOpcode::kRecv:
    case HloOpcode::kRecvDone:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kSend:
    case HloOpcode::kSendDone:
      return true;
    default:
      return false;
  }
}

// The underlying byte, the value the specification's bitmasks index.
constexpr uint8_t HloOpcodeByte(HloOpcode opcode) { return static_cast<uint8_t>(opcode); }

}  // namespace hilo

#endif  // HILO_IR_HLO_OPCODE_H_
