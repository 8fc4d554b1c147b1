// Structural matchers of the looped-einsum idiom (seed 000, #63): a `dot`
// one of whose operands is an all-gathered weight. These are the free
// helpers the original exposes as xla::hilo functions (MatchAllGatherInDot*,
// GetRootAllGather, IsConvertGetTupleElementParameter, WeightInLHS/RHS).
//
// Every function here is total: any instruction, any operand count, any
// shape (tuples, tokens, dynamic dimensions) gives an answer, never a crash.
// All walks are bounded (a fixed number of operand-0 hops), so the cost per
// dot is O(1) and a pass over a module is linear.
// See docs/passes/looped-einsum.md for the reading of each matcher.
#ifndef HILO_ANALYSIS_LOOPED_EINSUM_MATCHERS_H_
#define HILO_ANALYSIS_LOOPED_EINSUM_MATCHERS_H_

#include "hilo/ir/hlo_instruction.h"

namespace hilo {

// GetRootAllGather's depth in the original (the weight operand itself and at
// most this many operand-0 hops).
inline constexpr int kRootAllGatherDepth = 4;
// How many operand-0 hops WeightInLHS / WeightInRHS follow before giving up.
// The original's pattern builders are finite; 8 covers every chain the
// seed names (reshape -> gte -> convert -> all-gather -> parameter and the
// like) with room to spare. Documented in docs/passes/looped-einsum.md.
inline constexpr int kWeightSearchHops = 8;

// LHS: operand 0 of the dot is an all-gather.
bool MatchAllGatherInDotLhs(const HloInstruction* dot);
// LHS-RS: operand 0 is reshape(all-gather).
bool MatchAllGatherInDotLhsRS(const HloInstruction* dot);
// RHS: operand 1 is an all-gather.
bool MatchAllGatherInDotRhs(const HloInstruction* dot);
// RHS-RS: operand 1 is reshape(all-gather).
bool MatchAllGatherInDotRhsRS(const HloInstruction* dot);
// LHS-NxD: operand 0 is reshape(get-tuple-element(all-gather)), the
// token-threaded form `(data, token) all-gather(weight, token)`, where the
// get-tuple-element selects an array element of rank >= 1 (the data, not
// the rank-0 token). The seed's "reshape -> gte -> reshape -> AG" can not
// be taken literally (a reshape never yields the tuple a gte needs); see
// docs/passes/looped-einsum.md.
bool MatchAllGatherInDotLhsNxD(const HloInstruction* dot);

// `inst` or the first all-gather among its operand-0 ancestors, looking at
// most `depth` hops up; nullptr if there is none (or `inst` is null).
HloInstruction* GetRootAllGather(HloInstruction* inst, int depth);
const HloInstruction* GetRootAllGather(const HloInstruction* inst, int depth);

// convert(get-tuple-element(x)) with x's operand 0 a parameter: the
// loop-carried weight signature the seed names.
bool IsConvertGetTupleElementParameter(const HloInstruction* inst);

// From the dot's operand 0 (LHS) / operand 1 (RHS), following operand 0
// through reshape, convert, get-tuple-element (the seed's pattern set
// {parameter, gte, convert, reshape}) and the all-gather the matcher found,
// for at most kWeightSearchHops hops: the parameter reached (or, for
// IsConvertGetTupleElementParameter, that parameter), else nullptr. With
// `copy_bitcast` (opt-in, beyond the original) bitcast and copy are
// followed too. The returned node is the original's "captured" weight node.
const HloInstruction* WeightInLHS(const HloInstruction* dot, bool copy_bitcast = false);
const HloInstruction* WeightInRHS(const HloInstruction* dot, bool copy_bitcast = false);
// The same walk from any instruction.
const HloInstruction* FindWeightParameter(const HloInstruction* start, bool copy_bitcast = false);

}  // namespace hilo

#endif  // HILO_ANALYSIS_LOOPED_EINSUM_MATCHERS_H_
