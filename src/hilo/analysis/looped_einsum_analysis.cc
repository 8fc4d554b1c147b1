#include "hilo/analysis/looped_einsum_analysis.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "hilo/analysis/looped_einsum_matchers.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/primitive_type.h"

namespace hilo {
namespace {

std::string Name(const HloInstruction* inst) {
  return inst == nullptr ? std::string("<none>") : absl::StrCat("%", inst->name());
}

// The ops WeightInLHS/RHS walk, for the explanations.
std::string WeightChainOps(const LoopedEinsumSettings& settings) {
  return settings.weight_chain_copy_bitcast
             ? "reshape/convert/bitcast/copy/get-tuple-element/all-gather"
             : "reshape/convert/get-tuple-element/all-gather";
}

std::string DimsToString(absl::Span<const int64_t> dims) {
  return absl::StrCat("{", absl::StrJoin(dims, ","), "}");
}

// "convert(all-gather)": the opcodes from `start` up to the first
// all-gather within kRootAllGatherDepth operand-0 hops.
std::string ChainToAllGather(const HloInstruction* start) {
  std::vector<std::string> ops;
  const HloInstruction* inst = start;
  for (int hop = 0; inst != nullptr; ++hop) {
    ops.push_back(std::string(HloOpcodeString(inst->opcode())));
    if (inst->opcode() == HloOpcode::kAllGather || hop >= kRootAllGatherDepth ||
        inst->operand_count() == 0) {
      break;
    }
    inst = inst->operand(0);
  }
  std::string out;
  for (size_t i = 0; i < ops.size(); ++i) absl::StrAppend(&out, ops[i], i + 1 < ops.size() ? "(" : "");
  for (size_t i = 1; i < ops.size(); ++i) out.push_back(')');
  return out;
}

// The collective geometry of the all-gather's replica groups.
struct Geometry {
  std::string error;  // non-empty: unknown or unusable, do not fold
  int64_t tp_degree = 0;
  int64_t num_groups = 0;
  std::string note;
  // Empty when contiguous ([i*tp, (i+1)*tp) in order); else why not.
  std::string not_contiguous;
};

Geometry ReadGeometry(const HloInstruction* ag) {
  Geometry g;
  // Explicit groups are read where they are (no copy per candidate).
  std::vector<std::vector<int64_t>> expanded_groups;
  const std::vector<std::vector<int64_t>>* groups_in = &expanded_groups;
  const std::optional<ReplicaGroups>& written = ag->replica_groups();
  if (written.has_value() && written->form() == ReplicaGroups::Form::kExplicit) {
    groups_in = &written->explicit_groups();
  } else if (written.has_value()) {
    absl::StatusOr<std::vector<std::vector<int64_t>>> expanded = written->Expand();
    if (!expanded.ok()) {
      g.error = absl::StrCat("replica_groups=", written->ToString(),
                             " can not be read as explicit groups (", expanded.status().message(),
                             "), so tp_degree and num_groups are unknown");
      return g;
    }
    expanded_groups = *std::move(expanded);
  }
  const std::vector<std::vector<int64_t>>& groups = *groups_in;
  if (groups.empty()) {
    // XLA: no groups means one group of every participant of the op's
    // group mode. An all-gather's use_global_device_ids is a plain bool
    // (absent = false), so with a channel_id the mode is
    // cross-replica-and-partition (false) or flattened ids (true).
    const HloComputation* computation = ag->parent();
    const HloModule* module = computation == nullptr ? nullptr : computation->parent();
    const bool global_ids = ag->use_global_device_ids().value_or(false);
    const std::string what = absl::StrCat(
        written.has_value() ? "replica_groups={}" : "no replica_groups attribute");
    if (!ag->channel_id().has_value()) {
      if (global_ids) {
        g.error = absl::StrCat(what, " with use_global_device_ids=true and no channel_id is not a valid group mode");
        return g;
      }
      if (module == nullptr || !module->replica_count().has_value()) {
        g.error = absl::StrCat(what, " (cross-replica: one group of every replica), but the module header does not give replica_count, so tp_degree is unknown");
        return g;
      }
      g.tp_degree = *module->replica_count();
      g.note = absl::StrCat(what, ": one group of replica_count=", g.tp_degree, " replicas");
    } else if (global_ids) {
      g.error = absl::StrCat(what, " with use_global_device_ids=true (flattened ids): XLA requires explicit groups in that mode, so the group is unknown");
      return g;
    } else {
      if (module == nullptr || !module->replica_count().has_value() ||
          !module->num_partitions().has_value()) {
        g.error = absl::StrCat(what, " with a channel_id (cross-replica-and-partition: one group of every replica and partition), but the module header does not give both replica_count and num_partitions, so tp_degree is unknown");
        return g;
      }
      if (__builtin_mul_overflow(*module->replica_count(), *module->num_partitions(), &g.tp_degree)) {
        g.error = "replica_count * num_partitions overflows";
        return g;
      }
      g.note = absl::StrCat(what, ": one group of replica_count*num_partitions=", g.tp_degree,
                            " devices");
    }
    if (g.tp_degree <= 0) {
      g.error = absl::StrCat(g.note, ", which is not a positive group size");
      return g;
    }
    g.num_groups = 1;
    return g;  // one group [0, n): contiguous
  }
  g.tp_degree = static_cast<int64_t>(groups[0].size());
  g.num_groups = static_cast<int64_t>(groups.size());
  if (g.tp_degree == 0) {
    g.error = "the first replica group is empty, so tp_degree would be 0";
    return g;
  }
  for (size_t i = 1; i < groups.size(); ++i) {
    if (static_cast<int64_t>(groups[i].size()) != g.tp_degree) {
      g.error = absl::StrCat("replica groups have unequal sizes (group 0 has ", g.tp_degree,
                             " ids, group ", i, " has ", groups[i].size(),
                             "), so no single tp_degree describes them");
      return g;
    }
  }
  for (size_t i = 0; i < groups.size() && g.not_contiguous.empty(); ++i) {
    for (size_t j = 0; j < groups[i].size(); ++j) {
      if (groups[i][j] != static_cast<int64_t>(i) * g.tp_degree + static_cast<int64_t>(j)) {
        g.not_contiguous = absl::StrCat("replica group ", i, " is {", absl::StrJoin(groups[i], ","),
                                        "}, not the contiguous [", i * g.tp_degree, ", ",
                                        (i + 1) * g.tp_degree, ") in order");
        break;
      }
    }
  }
  return g;
}

// ReadGeometry, or the geometry it read last when `ag` shares that
// all-gather's explicit, non-empty group list (the parser gives every list
// written with the same text one shared, immutable contents, and a module's
// all-gathers repeat one or two lists). For such a list ReadGeometry reads
// the groups and nothing else, so the answer is the same; an empty or
// non-explicit list also reads the module and is read every time. The kept
// copy holds the shared contents alive, so their address can not be reused
// by another list while it is the key. Per thread: the passes may run on
// several modules at once.
Geometry ReadGeometryOf(const HloInstruction* ag, bool memo_on) {
  const std::optional<ReplicaGroups>& written = ag->replica_groups();
  if (!memo_on || !written.has_value() || written->form() != ReplicaGroups::Form::kExplicit ||
      written->explicit_groups().empty()) {
    return ReadGeometry(ag);
  }
  struct Memo {
    ReplicaGroups groups;  // empty: nothing kept yet (never a key: see above)
    Geometry geometry;
  };
  thread_local Memo memo;
  if (!written->SharesContentsWith(memo.groups)) {
    memo.geometry = ReadGeometry(ag);
    memo.groups = *written;
  }
  return memo.geometry;
}

// MakeCollectiveMatmulBackendConfig, or a copy of the text it gave last
// when the four values are those it was given then (the text depends on
// them alone). Per thread, as ReadGeometryOf's memo.
std::string BackendConfigOf(int64_t rhs_contracting_dim, int64_t tp_degree, int64_t num_groups,
                            bool use_sb_to_sb, bool memo_on) {
  if (!memo_on) {
    return MakeCollectiveMatmulBackendConfig(rhs_contracting_dim, tp_degree, num_groups,
                                             use_sb_to_sb);
  }
  struct Memo {
    int64_t values[3] = {0, 0, 0};
    bool use_sb_to_sb = false;
    std::string text;  // empty: nothing kept yet
  };
  thread_local Memo memo;
  if (memo.text.empty() || memo.values[0] != rhs_contracting_dim ||
      memo.values[1] != tp_degree || memo.values[2] != num_groups ||
      memo.use_sb_to_sb != use_sb_to_sb) {
    memo.text = MakeCollectiveMatmulBackendConfig(rhs_contracting_dim, tp_degree, num_groups,
                                                  use_sb_to_sb);
    memo.values[0] = rhs_contracting_dim;
    memo.values[1] = tp_degree;
    memo.values[2] = num_groups;
    memo.use_sb_to_sb = use_sb_to_sb;
  }
  return memo.text;
}

bool ContractingDimInRange(const HloInstruction* operand, int64_t dim) {
  return dim >= 0 && dim < operand->shape().rank();
}

}  // namespace

absl::string_view LoopedEinsumMatcherName(LoopedEinsumMatcher matcher) {
  switch (matcher) {
    case LoopedEinsumMatcher::kNone:
      return "none";
    case LoopedEinsumMatcher::kLhs:
      return "LHS";
    case LoopedEinsumMatcher::kLhsRS:
      return "LHS-RS";
    case LoopedEinsumMatcher::kRhs:
      return "RHS";
    case LoopedEinsumMatcher::kRhsRS:
      return "RHS-RS";
    case LoopedEinsumMatcher::kLhsNxD:
      return "LHS-NxD";
  }
  return "none";
}

namespace {

// Whether the first `positions[i]` instructions of operand i's chain of
// operand-0 ancestors (i < 2) have unique ids below `ids_end`.
bool ChainIdsBelow(const HloInstruction* dot, int64_t ids_end, const int (&positions)[2]) {
  if (dot == nullptr) return true;
  const absl::Span<HloInstruction* const> operands = dot->operands().span();
  for (size_t i = 0; i < operands.size() && i < 2; ++i) {
    const HloInstruction* inst = operands[i];
    for (int position = 0; position < positions[i] && inst != nullptr; ++position) {
      if (inst->unique_id() >= ids_end) return false;
      const absl::Span<HloInstruction* const> next = inst->operands().span();
      inst = next.empty() ? nullptr : next[0];
    }
  }
  return true;
}

// ChainIdsBelow's first walk (operand 0's chain, `positions` of it), also
// telling in `*shard_within_depth` whether `shard` is at one of its first
// kRootAllGatherDepth + 2 positions; the rest is for ChainIdsBelow's second.
bool FirstChainIdsBelow(const HloInstruction* inst, int64_t ids_end, int positions,
                        const HloInstruction* shard, bool* shard_within_depth) {
  int position = 0;
  for (; position < positions && inst != nullptr; ++position) {
    if (inst->unique_id() >= ids_end) return false;
    if (inst == shard && position <= kRootAllGatherDepth + 1) {
      *shard_within_depth = true;
      break;
    }
    const absl::Span<HloInstruction* const> next = inst->operands().span();
    inst = next.empty() ? nullptr : next[0];
  }
  // Past the shard (checked above): the same walk without the comparison.
  if (*shard_within_depth) {
    const absl::Span<HloInstruction* const> next = inst->operands().span();
    inst = next.empty() ? nullptr : next[0];
    for (++position; position < positions && inst != nullptr; ++position) {
      if (inst->unique_id() >= ids_end) return false;
      const absl::Span<HloInstruction* const> after = inst->operands().span();
      inst = after.empty() ? nullptr : after[0];
    }
  }
  return true;
}

}  // namespace

bool LoopedEinsumReadsOnlyIdsBelow(const HloInstruction* dot, int64_t ids_end) {
  return ChainIdsBelow(dot, ids_end, {kLoopedEinsumChainRead, kLoopedEinsumChainRead});
}

bool LoopedEinsumReadsOnlyIdsBelow(const HloInstruction* dot, int64_t ids_end,
                                   LoopedEinsumMatcher matcher) {
  const bool lhs = matcher == LoopedEinsumMatcher::kLhs || matcher == LoopedEinsumMatcher::kLhsRS;
  return ChainIdsBelow(dot, ids_end, {kLoopedEinsumChainRead, lhs ? 1 : kLoopedEinsumChainRead});
}

bool LoopedEinsumReadsOnlyIdsBelow(const HloInstruction* dot, int64_t ids_end,
                                   LoopedEinsumMatcher matcher, const HloInstruction* shard,
                                   bool* shard_within_depth) {
  *shard_within_depth = false;
  if (dot == nullptr) return true;
  const bool lhs = matcher == LoopedEinsumMatcher::kLhs || matcher == LoopedEinsumMatcher::kLhsRS;
  const absl::Span<HloInstruction* const> operands = dot->operands().span();
  if (operands.empty()) return true;
  if (!FirstChainIdsBelow(operands[0], ids_end, kLoopedEinsumChainRead, shard,
                          shard_within_depth)) {
    return false;
  }
  if (operands.size() < 2) return true;
  const HloInstruction* inst = operands[1];
  const int positions = lhs ? 1 : kLoopedEinsumChainRead;
  for (int position = 0; position < positions && inst != nullptr; ++position) {
    if (inst->unique_id() >= ids_end) return false;
    const absl::Span<HloInstruction* const> next = inst->operands().span();
    inst = next.empty() ? nullptr : next[0];
  }
  return true;
}

std::string MakeCollectiveMatmulBackendConfig(int64_t rhs_contracting_dim, int64_t tp_degree,
                                              int64_t num_groups, bool use_sb_to_sb) {
  // Written on the stack, then one allocation of the exact size (no reserve
  // of 128 bytes kept by every fold's custom call). absl::StrCat of these
  // seven pieces took ~690 instructions a fold, a third of the match.
  constexpr absl::string_view kPieces[] = {"rhs_contracting_dim=", ",tp_degree=", ",num_groups="};
  const int64_t values[] = {rhs_contracting_dim, tp_degree, num_groups};
  char buffer[128];  // the pieces (47 bytes), three int64 (20 each) and the flag (15)
  char* out = buffer;
  for (int i = 0; i < 3; ++i) {
    std::memcpy(out, kPieces[i].data(), kPieces[i].size());
    out = std::to_chars(out + kPieces[i].size(), buffer + sizeof(buffer), values[i]).ptr;
  }
  const absl::string_view flag = use_sb_to_sb ? ",use_sb_to_sb=1" : ",use_sb_to_sb=0";
  std::memcpy(out, flag.data(), flag.size());
  return std::string(buffer, out + flag.size());
}

bool FitsSbToSb(PrimitiveType element_type, int64_t elements, int64_t threshold_mb) {
  // 2 * bytes * elements / 2^20 <= threshold, without rounding: compare
  // 2 * bytes * elements against threshold * 2^20 in 128-bit integers.
  const __int128 need = static_cast<__int128>(2) * ByteWidth(element_type) * elements;
  const __int128 limit = static_cast<__int128>(threshold_mb) * 1048576;
  return need <= limit;
}

namespace {

// AnalyzeLoopedEinsumDot's work, into a plan the caller made (so that the
// plan is built in place, not copied out of an early return).
void AnalyzeInto(HloInstruction* dot, const LoopedEinsumSettings& settings, bool with_reason,
                 LoopedEinsumPlan& plan) {
  if (dot == nullptr || dot->opcode() != HloOpcode::kDot) return;

  // The matchers in the order the weight side is decided below, each run
  // only while none before it applied (that branch never reads the later
  // ones): most dots match the first.
  const bool lhs = MatchAllGatherInDotLhs(dot);
  const bool lhs_rs = !lhs && MatchAllGatherInDotLhsRS(dot);
  const bool rhs = !lhs && !lhs_rs && MatchAllGatherInDotRhs(dot);
  const bool rhs_rs = !lhs && !lhs_rs && !rhs && MatchAllGatherInDotRhsRS(dot);
  const bool lhs_nxd = !lhs && !lhs_rs && !rhs && !rhs_rs && MatchAllGatherInDotLhsNxD(dot);
  const bool any_matcher = lhs || lhs_rs || rhs || rhs_rs || lhs_nxd;
  // An operand an all-gather reaches: without a matcher, what makes the
  // dot a candidate, and the explanation's subject.
  int64_t reaching_operand = -1;
  for (int64_t i = 0; !any_matcher && i < dot->operand_count() && i < 2; ++i) {
    if (GetRootAllGather(dot->operand(i), kRootAllGatherDepth) != nullptr) {
      reaching_operand = i;
      break;
    }
  }
  if (!any_matcher && reaching_operand < 0) return;
  plan.candidate = true;

  // `reason` builds the text only when the caller wants it: most
  // candidates that are not fused are never explained.
  auto fail = [&plan, with_reason](const auto& reason) {
    plan.fold = false;
    if (with_reason) plan.reason = reason();
  };

  // The original's first checks: one contracting dimension per side
  // (rhs first, as it reads them).
  const DotDimensionNumbers& dnums = dot->dot_dimension_numbers();
  if (dnums.rhs_contracting_dimensions.size() != 1) {
    return fail([&] {
      return absl::StrCat("the dot has ", dnums.rhs_contracting_dimensions.size(),
                          " rhs contracting dimensions ",
                          DimsToString(dnums.rhs_contracting_dimensions),
                          "; the collective matmul takes exactly 1");
    });
  }
  if (dnums.lhs_contracting_dimensions.size() != 1) {
    return fail([&] {
      return absl::StrCat("the dot has ", dnums.lhs_contracting_dimensions.size(),
                          " lhs contracting dimensions ",
                          DimsToString(dnums.lhs_contracting_dimensions),
                          "; the collective matmul takes exactly 1");
    });
  }

  if (!any_matcher) {
    return fail([&] {
      return absl::StrCat(
          "no matcher applies: operand ", reaching_operand, " reaches an all-gather as ",
          ChainToAllGather(dot->operand(reaching_operand)),
          ", but the matchers take all-gather or reshape(all-gather) on either operand, or "
          "reshape(get-tuple-element(all-gather)) on operand 0");
    });
  }

  // Weight side (the coherent reading of the seed's branch, issue 5).
  if (lhs || lhs_rs) {
    plan.matcher = lhs ? LoopedEinsumMatcher::kLhs : LoopedEinsumMatcher::kLhsRS;
    plan.weight_operand = 0;
    plan.weight_parameter = WeightInLHS(dot, settings.weight_chain_copy_bitcast);
    if (plan.weight_parameter == nullptr) {
      return fail([&] {
        return absl::StrCat(
            LoopedEinsumMatcherName(plan.matcher),
            " matched, but operand 0 does not reach a parameter through ", WeightChainOps(settings),
            " within ", kWeightSearchHops,
            " hops (WeightInLHS); the LHS branch is decided first and has no aggressive fallback");
      });
    }
  } else if (rhs) {
    plan.matcher = LoopedEinsumMatcher::kRhs;
    plan.weight_operand = 1;
    plan.weight_parameter = WeightInRHS(dot, settings.weight_chain_copy_bitcast);
    if (plan.weight_parameter == nullptr && !settings.aggressive) {
      return fail([&] {
        return absl::StrCat(
            "RHS matched, but operand 1 does not reach a parameter through ",
            WeightChainOps(settings), " within ", kWeightSearchHops,
            " hops (WeightInRHS) and NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE is not 1");
      });
    }
  } else if (rhs_rs) {
    plan.matcher = LoopedEinsumMatcher::kRhsRS;
    plan.weight_operand = 1;
    // Informative only: the seed's `else if rhsRS || lhsNxD: ok = true`.
    plan.weight_parameter = WeightInRHS(dot, settings.weight_chain_copy_bitcast);
  } else {
    // LHS-NxD: accepted as is, as RHS-RS (the seed's `else if rhsRS ||
    // lhsNxD: ok = true`): the token-threaded all-gather of NeuronX
    // Distributed gathers activations, not a weight parameter.
    plan.matcher = LoopedEinsumMatcher::kLhsNxD;
    plan.weight_operand = 0;
    plan.weight_parameter = WeightInLHS(dot, settings.weight_chain_copy_bitcast);  // informative only
  }
  const absl::string_view matcher_name = LoopedEinsumMatcherName(plan.matcher);

  HloInstruction* weight = dot->mutable_operand(plan.weight_operand);
  HloInstruction* ag = GetRootAllGather(weight, kRootAllGatherDepth);
  plan.all_gather = ag;
  if (ag == nullptr) {
    return fail([&] {
      return absl::StrCat(matcher_name, " matched, but no all-gather is within ",
                          kRootAllGatherDepth, " operand-0 hops of the weight operand ",
                          Name(weight));
    });
  }
  if (ag->operand_count() == 0) {
    return fail([&] { return absl::StrCat("the all-gather ", Name(ag), " has no operands"); });
  }
  if (settings.nxd && ag->operand_count() > 5) {
    return fail([&] {
      return absl::StrCat("NEURON_COLLECTIVE_MATMUL_NXD is 1 and the all-gather ", Name(ag),
                          " has ", ag->operand_count(), " operands (more than 5)");
    });
  }
  const int64_t gather_dim = ag->collective_dimension();
  const Shape& gathered_operand_shape = ag->operand(0)->shape();
  const int64_t gathered_operand_rank =
      gathered_operand_shape.IsArray() ? gathered_operand_shape.rank() : 0;
  if (gather_dim <= 1 && gathered_operand_rank != 3) {
    return fail([&] {
      return absl::StrCat("all-gather dimension ", gather_dim, " <= 1 and its operand has rank ",
                          gathered_operand_rank, ", not 3");
    });
  }
  plan.pattern_matches = true;

  // --- Can the rewrite be built? -------------------------------------------
  for (int64_t i = 0; i < 2; ++i) {
    if (i >= dot->operand_count()) {
      return fail(
          [&] { return absl::StrCat("the dot has ", dot->operand_count(), " operands, not 2"); });
    }
    if (!dot->operand(i)->shape().IsArray()) {
      return fail([&] {
        return absl::StrCat("dot operand ", i, " ", Name(dot->operand(i)), " is not an array (",
                            dot->operand(i)->shape().ToString(false), ")");
      });
    }
  }
  if (dot->operand_count() != 2) {
    return fail(
        [&] { return absl::StrCat("the dot has ", dot->operand_count(), " operands, not 2"); });
  }
  const int64_t lhs_c = dnums.lhs_contracting_dimensions[0];
  const int64_t rhs_c = dnums.rhs_contracting_dimensions[0];
  if (!ContractingDimInRange(dot->operand(0), lhs_c) ||
      !ContractingDimInRange(dot->operand(1), rhs_c)) {
    return fail([&] {
      return absl::StrCat("the dot's contracting dimensions (lhs ", lhs_c, ", rhs ", rhs_c,
                          ") are out of range for its operands");
    });
  }
  plan.rhs_contracting_dim = rhs_c;
  plan.activation = dot->mutable_operand(1 - plan.weight_operand);
  plan.shard = ag->mutable_operand(0);
  if (plan.shard->parent() != dot->parent() || plan.activation->parent() != dot->parent()) {
    return fail([&] {
      return std::string("the weight shard or the activation is not in the dot's computation");
    });
  }
  const Shape& w = plan.shard->shape();
  if (!w.IsArray() || !w.is_static()) {
    return fail([&] {
      return absl::StrCat("the all-gather's operand 0 ", Name(plan.shard), " (", w.ToString(false),
                          ") is not a static array, so it can not be reshaped");
    });
  }
  const int64_t weight_c = plan.weight_operand == 0 ? lhs_c : rhs_c;
  const Shape& weight_shape = weight->shape();
  if (weight_shape.is_dynamic_dimension(weight_c)) {
    return fail([&] {
      return absl::StrCat("the contracting dimension ", weight_c, " of the weight operand ",
                          Name(weight), " is dynamic");
    });
  }
  plan.k = weight_shape.dimensions(weight_c);
  std::optional<int64_t> w_elements = w.checked_elements();
  if (!w_elements.has_value()) {
    return fail(
        [&] { return absl::StrCat("the element count of ", Name(plan.shard), " overflows"); });
  }
  if (plan.k <= 0 || *w_elements % plan.k != 0) {
    return fail([&] {
      return absl::StrCat("W ", Name(plan.shard), " ", w.ToString(false), " has ", *w_elements,
                          " elements, which the contracting extent k=", plan.k,
                          " does not divide, so W can not be reshaped to [elements/k, k]");
    });
  }
  Geometry geometry = ReadGeometryOf(ag, settings.memo_geometry);
  if (!geometry.error.empty()) return fail([&] { return geometry.error; });
  plan.tp_degree = geometry.tp_degree;
  plan.num_groups = geometry.num_groups;
  plan.groups_note = geometry.note;

  plan.reshaped_weight_shape = Shape::MakeArray(w.element_type(), {*w_elements / plan.k, plan.k});
  if (w.has_layout()) {
    Layout layout;
    layout.minor_to_major = {1, 0};
    plan.reshaped_weight_shape.set_layout(std::move(layout));
  }
  plan.use_sb_to_sb = FitsSbToSb(w.element_type(), *w_elements, settings.sb_to_sb_threshold_mb);
  plan.weight_mb = 2.0 * static_cast<double>(ByteWidth(w.element_type())) *
                   static_cast<double>(*w_elements) / 1048576.0;
  plan.backend_config =
      BackendConfigOf(plan.rhs_contracting_dim, plan.tp_degree, plan.num_groups,
                      plan.use_sb_to_sb, settings.memo_config);

  // --- Exactness under the kernel contract -----------------------------------
  // Kernel: operand 0 [M, K] gathered by rows over a contiguous group,
  // operand 1 [K, N] / [N, K], result [M*tp, N] with row block r from rank r.
  std::vector<std::string>& why = plan.inexact_reasons;
  if (plan.weight_operand != 0) {
    why.push_back(
        "the weight is dot operand 1: the kernel gathers its operand 0 into the rows of an "
        "[M*tp, N] result, while this dot puts the gathered dimensions last");
  }
  if (!dnums.lhs_batch_dimensions.empty() || !dnums.rhs_batch_dimensions.empty()) {
    why.push_back(absl::StrCat("the dot has batch dimensions (lhs ",
                               DimsToString(dnums.lhs_batch_dimensions), ", rhs ",
                               DimsToString(dnums.rhs_batch_dimensions), "); the kernel has none"));
  }
  if (weight_c != weight_shape.rank() - 1) {
    why.push_back(absl::StrCat("the weight operand's contracting dimension ", weight_c,
                               " is not its last (rank ", weight_shape.rank(),
                               "), so a row of [elements/k, k] is not a row of the dot operand"));
  }
  if (plan.activation->shape().rank() != 2) {
    why.push_back(absl::StrCat("the activation ", Name(plan.activation), " has rank ",
                               plan.activation->shape().rank(),
                               "; the kernel's operand 1 is rank 2 ([K, N] or [N, K])"));
  }
  // Which gathered value the dot reads: the all-gather's result, or for
  // LHS-NxD the tuple element its get-tuple-element selects.
  const Shape* gathered = &ag->shape();
  if (plan.matcher == LoopedEinsumMatcher::kLhsNxD) {
    const HloInstruction* gte = dot->operand(0)->operand(0);
    const int64_t index = gte->tuple_index();
    if (index != 0) {
      why.push_back(absl::StrCat("the dot reads tuple element ", index, " of the all-gather ",
                                 Name(ag), ", but the custom-call takes its operand 0"));
    }
    gathered = ag->shape().IsTuple() && index >= 0 && index < ag->shape().tuple_shapes_size()
                   ? &ag->shape().tuple_shapes(index)
                   : nullptr;
  }
  if (gather_dim < 0 || gather_dim >= w.rank()) {
    why.push_back(absl::StrCat("the all-gather dimension ", gather_dim,
                               " is not a dimension of W ", w.ToString(false)));
  } else {
    int64_t leading = 1;
    for (int64_t i = 0; i < gather_dim; ++i) leading *= w.dimensions(i);
    if (leading != 1) {
      why.push_back(absl::StrCat("the all-gather concatenates along dimension ", gather_dim, " of W ",
                                 w.ToString(false), ", not along its rows: each rank's shard is ",
                                 leading, " separate blocks, not one row block"));
    }
    if (gathered != nullptr && gathered->IsArray() && gathered->rank() == w.rank() &&
        gathered->dimensions(gather_dim) != w.dimensions(gather_dim) * plan.tp_degree) {
      why.push_back(absl::StrCat("the all-gather grows dimension ", gather_dim, " from ",
                                 w.dimensions(gather_dim), " to ", gathered->dimensions(gather_dim),
                                 ", not by tp_degree=", plan.tp_degree));
    }
  }
  if (!geometry.not_contiguous.empty()) why.push_back(geometry.not_contiguous);
  plan.exact = why.empty();

  if (settings.strict && !plan.exact) {
    return fail([&] {
      return absl::StrCat("matched ", matcher_name,
                          ", but --collective-matmul-strict refuses a fold that is not exact "
                          "under the kernel contract: ",
                          absl::StrJoin(why, "; "));
    });
  }
  plan.fold = true;
}

}  // namespace

LoopedEinsumPlan AnalyzeLoopedEinsumDot(HloInstruction* dot, const LoopedEinsumSettings& settings,
                                        bool with_reason) {
  LoopedEinsumPlan plan;
  AnalyzeInto(dot, settings, with_reason, plan);
  return plan;
}

std::optional<bool> LoopedEinsumRefusedEarly(HloInstruction* dot) {
  if (dot == nullptr || dot->opcode() != HloOpcode::kDot) return std::nullopt;
  const DotDimensionNumbers& dnums = dot->dot_dimension_numbers();
  if (dnums.rhs_contracting_dimensions.size() == 1 &&
      dnums.lhs_contracting_dimensions.size() == 1) {
    return std::nullopt;
  }
  // AnalyzeInto's candidacy: a matcher applies or operand 0 or 1 reaches
  // an all-gather; which one does not matter before this refusal. Operand
  // 1 first: a weight gathered there is found at once, where operand 0
  // (the activation) is walked kRootAllGatherDepth hops in vain.
  for (int64_t i = std::min<int64_t>(dot->operand_count(), 2) - 1; i >= 0; --i) {
    if (GetRootAllGather(dot->operand(i), kRootAllGatherDepth) != nullptr) return true;
  }
  return MatchAllGatherInDotLhs(dot) || MatchAllGatherInDotLhsRS(dot) ||
         MatchAllGatherInDotRhs(dot) || MatchAllGatherInDotRhsRS(dot) ||
         MatchAllGatherInDotLhsNxD(dot);
}

bool LoopedEinsumFoldMemo::BuildKey(HloInstruction* dot) {
  key_.valid = false;
  if (dot == nullptr || dot->opcode() != HloOpcode::kDot) return false;
  const absl::Span<HloInstruction* const> operands = dot->operands().span();
  if (operands.size() != 2) return false;
  // LHS or LHS-RS: the analysis decides the weight side from these first
  // and then reads operand 1 itself only.
  HloInstruction* const op0 = operands[0];
  if (!MatchAllGatherInDotLhs(dot) && !MatchAllGatherInDotLhsRS(dot)) return false;
  const HloComputation* const parent = dot->parent();
  int length = 0;
  int root = -1;
  for (HloInstruction* inst = op0; inst != nullptr && length < kLoopedEinsumChainRead; ++length) {
    Link& link = key_.links[length];
    const absl::Span<HloInstruction* const> next = inst->operands().span();
    link.inst = inst;
    link.operand_count = static_cast<int64_t>(next.size());
    link.opcode = inst->opcode();
    link.same_parent = inst->parent() == parent;
    link.dimension = -1;
    if (link.opcode == HloOpcode::kAllGather) {
      link.dimension = inst->collective_dimension();
      if (root < 0 && length <= kRootAllGatherDepth) root = length;
    }
    inst = next.empty() ? nullptr : next[0];
  }
  if (root < 0) return false;
  const std::optional<ReplicaGroups>& groups = key_.links[root].inst->replica_groups();
  if (!groups.has_value() || groups->form() != ReplicaGroups::Form::kExplicit ||
      groups->explicit_groups().empty()) {
    return false;
  }
  key_.dnums = &dot->dot_dimension_numbers();
  key_.length = length;
  key_.root = root;
  key_.activation = operands[1];
  key_.activation_same_parent = operands[1]->parent() == parent;
  key_.valid = true;
  return true;
}

namespace {

// DotDimensionNumbers::operator== without a memcmp call a list (the lists
// have one or two elements).
bool SameDims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

bool SameDotDimensionNumbers(const DotDimensionNumbers& a, const DotDimensionNumbers& b) {
  return SameDims(a.lhs_contracting_dimensions, b.lhs_contracting_dimensions) &&
         SameDims(a.rhs_contracting_dimensions, b.rhs_contracting_dimensions) &&
         SameDims(a.lhs_batch_dimensions, b.lhs_batch_dimensions) &&
         SameDims(a.rhs_batch_dimensions, b.rhs_batch_dimensions);
}

}  // namespace

bool LoopedEinsumFoldMemo::HasKey(HloInstruction* dot, const Entry& entry,
                                  HloInstruction** shard) const {
  // BuildKey's walk, compared with the kept key as it goes.
  if (dot->opcode() != HloOpcode::kDot) return false;
  const absl::Span<HloInstruction* const> operands = dot->operands().span();
  if (operands.size() != 2) return false;
  const HloComputation* const parent = dot->parent();
  const HloInstruction* const activation = operands[1];
  if (&activation->shape() != &entry.activation_shape.get() ||
      (activation->parent() == parent) != entry.activation_same_parent) {
    return false;
  }
  HloInstruction* inst = operands[0];
  // Equal operand counts end both walks at the same position.
  for (int k = 0; k < entry.length; ++k) {
    const Link& kept = entry.links[k];
    const absl::Span<HloInstruction* const> next = inst->operands().span();
    if (inst->opcode() != kept.opcode ||
        static_cast<int64_t>(next.size()) != kept.operand_count ||
        &inst->shape() != &entry.shapes[k].get() ||
        (inst->parent() == parent) != kept.same_parent) {
      return false;
    }
    if (kept.opcode == HloOpcode::kAllGather && inst->collective_dimension() != kept.dimension) {
      return false;
    }
    if (k == entry.root) {
      const std::optional<ReplicaGroups>& groups = inst->replica_groups();
      if (!groups.has_value() || !groups->SharesContentsWith(entry.groups)) return false;
    }
    if (k == entry.shard_position) *shard = inst;
    if (next.empty()) break;  // the last position (operand counts are equal)
    inst = next[0];
  }
  return lean_ ? SameDotDimensionNumbers(entry.dnums, dot->dot_dimension_numbers())
               : entry.dnums == dot->dot_dimension_numbers();
}

bool LoopedEinsumFoldMemo::Find(HloInstruction* dot, Hit* hit) {
  key_.valid = false;
  if (lean_) {
    // A kept key's chain starts with the opcodes that made its dot match
    // LHS or LHS-RS: a dot with an equal key matches too, so the matchers
    // run only for a miss.
    if (FindEntry(dot, hit)) return true;
    ++matcher_runs_;
    if (!MatchAllGatherInDotLhs(dot) && !MatchAllGatherInDotLhsRS(dot)) return false;
    BuildKey(dot);  // for Keep
    return false;
  }
  // Only LHS and LHS-RS dots have a key; others (as a layer's second dot)
  // are not looked up.
  ++matcher_runs_;
  if (!MatchAllGatherInDotLhs(dot) && !MatchAllGatherInDotLhsRS(dot)) return false;
  if (FindEntry(dot, hit)) return true;
  BuildKey(dot);  // for Keep
  return false;
}

bool LoopedEinsumFoldMemo::FindEntry(HloInstruction* dot, Hit* hit) {
  // The entry that served last first.
  for (size_t i = 0; i < entries_.size(); ++i) {
    const size_t e = (last_hit_ + i) % entries_.size();
    HloInstruction* shard = nullptr;
    if (!HasKey(dot, entries_[e], &shard)) continue;
    last_hit_ = e;
    ++hits_;
    const Entry& entry = entries_[e];
    hit->matcher = entry.matcher;
    hit->shard = shard;
    hit->activation = dot->operands().span()[1];
    hit->reshaped_weight_shape = &entry.reshaped_weight_shape;
    hit->backend_config = &entry.backend_config;
    return true;
  }
  return false;
}

void LoopedEinsumFoldMemo::Keep(const LoopedEinsumPlan& plan,
                                const SharedShape& reshaped_weight_shape) {
  if (!key_.valid || !plan.fold || !plan.exact || plan.activation != key_.activation ||
      (plan.matcher != LoopedEinsumMatcher::kLhs && plan.matcher != LoopedEinsumMatcher::kLhsRS)) {
    return;
  }
  // The shard is the root all-gather's operand 0: the next position.
  const int shard_position = key_.root + 1;
  if (shard_position >= key_.length || key_.links[shard_position].inst != plan.shard ||
      key_.links[key_.root].inst != plan.all_gather) {
    return;
  }
  constexpr size_t kEntries = 2;
  if (entries_.size() < kEntries) {
    entries_.emplace_back();
    next_ = entries_.size() - 1;
  }
  Entry& entry = entries_[next_];
  next_ = (next_ + 1) % kEntries;
  entry.dnums = *key_.dnums;
  entry.length = key_.length;
  entry.root = key_.root;
  for (int k = 0; k < key_.length; ++k) {
    entry.links[k] = key_.links[k];
    entry.links[k].inst = nullptr;
    entry.shapes[k] = key_.links[k].inst->shared_shape();
  }
  for (int k = key_.length; k < kLoopedEinsumChainRead; ++k) entry.shapes[k] = SharedShape();
  entry.groups = *key_.links[key_.root].inst->replica_groups();
  entry.activation_shape = key_.activation->shared_shape();
  entry.activation_same_parent = key_.activation_same_parent;
  entry.matcher = plan.matcher;
  entry.shard_position = shard_position;
  entry.reshaped_weight_shape = reshaped_weight_shape;
  entry.backend_config = plan.backend_config;
}

void LoopedEinsumFoldMemo::Clear() {
  ClearEntries();
  hits_ = 0;
  matcher_runs_ = 0;
}

void LoopedEinsumFoldMemo::ClearEntries() {
  key_ = Key();
  entries_.clear();
  next_ = 0;
  last_hit_ = 0;
}

std::string ExplainLoopedEinsumPlan(const HloInstruction& dot, const LoopedEinsumPlan& plan) {
  std::string where = Name(&dot);
  if (dot.parent() != nullptr) absl::StrAppend(&where, " in ", dot.parent()->name());
  if (!plan.fold) return absl::StrCat(where, ": not fused: ", plan.reason);
  std::string weight = absl::StrCat("weight = operand ", plan.weight_operand);
  if (plan.matcher == LoopedEinsumMatcher::kLhsNxD) {
    // Why it folded: this branch has no weight check.
    absl::StrAppend(&weight,
                    ", accepted without a weight check: the seed's RHS/NxD branch sets "
                    "ok = true for LHS-NxD");
    if (plan.weight_parameter != nullptr) {
      absl::StrAppend(&weight, "; it reaches parameter ", Name(plan.weight_parameter));
    }
  } else if (plan.weight_parameter != nullptr) {
    absl::StrAppend(&weight, " from parameter ", Name(plan.weight_parameter));
  } else if (plan.matcher == LoopedEinsumMatcher::kRhsRS) {
    absl::StrAppend(&weight, ", accepted without WeightInRHS");
  } else {
    absl::StrAppend(&weight, ", not proven a parameter; NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE is 1");
  }
  std::string out = absl::StrCat(
      where, ": fused as ", LoopedEinsumMatcherName(plan.matcher), " (", weight, ", all-gather ",
      Name(plan.all_gather), "): ", kCollectiveMatmulTarget, " backend_config=\"",
      plan.backend_config, "\"");
  absl::StrAppend(&out, absl::StrFormat(" (2 x W %s = %.3f MiB)",
                                        plan.shard->shape().ToString(false), plan.weight_mb));
  if (!plan.groups_note.empty()) absl::StrAppend(&out, " (", plan.groups_note, ")");
  if (plan.exact) {
    absl::StrAppend(&out, "; exact under the kernel contract");
  } else {
    absl::StrAppend(&out, "; not exact under the kernel contract: ",
                    absl::StrJoin(plan.inexact_reasons, "; "));
  }
  return out;
}

}  // namespace hilo
