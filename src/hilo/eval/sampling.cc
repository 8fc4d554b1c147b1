#include "hilo/eval/sampling.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "hilo/eval/interpreter.h"
#include "hilo/eval/ops_internal.h"
#include "hilo/eval/uninterpreted.h"

namespace hilo {
namespace eval {
namespace {

// Where the axis lies in an array: dimension `dim` of size outer * S * inner,
// the axis index s at positions o * S * inner + s * inner + i.
struct Loc {
  int64_t dim = 0;
  int64_t outer = 1;
  int64_t inner = 1;
  bool operator==(const Loc&) const = default;
};

// An array value: an instruction (leaf -1) or element `leaf` of its tuple.
using Node = std::pair<const HloInstruction*, int64_t>;

const Shape* LeafShape(const Node& n) {
  const Shape& s = n.first->shape();
  if (n.second < 0) return s.IsArray() ? &s : nullptr;
  if (!s.IsTuple() || n.second >= s.tuple_shapes_size() || !s.tuple_shapes(n.second).IsArray()) return nullptr;
  return &s.tuple_shapes(n.second);
}

std::string NodeName(const Node& n) {
  return n.second < 0 ? absl::StrCat("%", n.first->name()) : absl::StrCat("%", n.first->name(), "{", n.second, "}");
}

// The axis (S indices at `loc` of an array of dims `from`) in the same
// elements read row-major as an array of dims `to`; nullopt when it spans
// several dimensions of `to`.
std::optional<Loc> Relinearize(const Loc& loc, int64_t S, const std::vector<int64_t>& from,
                               const std::vector<int64_t>& to) {
  int64_t inner = loc.inner;
  for (size_t d = loc.dim + 1; d < from.size(); ++d) inner *= from[d];
  int64_t after = 1;  // product of to[f+1..]
  for (int64_t f = static_cast<int64_t>(to.size()) - 1; f >= 0; --f) {
    if (after > inner) return std::nullopt;
    if (inner % after == 0) {
      const int64_t i = inner / after;
      if (i * S <= to[f] && to[f] % (i * S) == 0) return Loc{f, to[f] / (i * S), i};
    }
    after *= to[f];
  }
  return std::nullopt;
}

std::vector<int64_t> Dims(const Shape& s) { return std::vector<int64_t>(s.dimensions().begin(), s.dimensions().end()); }

bool IsElementwise(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAbs: case HloOpcode::kAdd: case HloOpcode::kAnd: case HloOpcode::kAtan2:
    case HloOpcode::kCbrt: case HloOpcode::kCeil: case HloOpcode::kClamp: case HloOpcode::kClz:
    case HloOpcode::kCompare: case HloOpcode::kConvert: case HloOpcode::kCopy: case HloOpcode::kCos:
    case HloOpcode::kDivide: case HloOpcode::kErf: case HloOpcode::kExp: case HloOpcode::kExpm1:
    case HloOpcode::kFloor: case HloOpcode::kIsFinite: case HloOpcode::kLog: case HloOpcode::kLog1p:
    case HloOpcode::kLogistic: case HloOpcode::kMap: case HloOpcode::kMaximum: case HloOpcode::kMinimum:
    case HloOpcode::kMultiply: case HloOpcode::kNegate: case HloOpcode::kNot: case HloOpcode::kOr:
    case HloOpcode::kPopulationCount: case HloOpcode::kPower: case HloOpcode::kReducePrecision:
    case HloOpcode::kRemainder: case HloOpcode::kRoundNearestAfz: case HloOpcode::kRoundNearestEven:
    case HloOpcode::kRsqrt: case HloOpcode::kSelect: case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightArithmetic: case HloOpcode::kShiftRightLogical: case HloOpcode::kSign:
    case HloOpcode::kSin: case HloOpcode::kSqrt: case HloOpcode::kSubtract: case HloOpcode::kTan:
    case HloOpcode::kTanh: case HloOpcode::kXor:
      return true;
    default:
      return false;
  }
}

// How an instruction carries the axis: operand dimension `in_dim` of `in`
// is output dimension `out_dim` of leaf `leaf`, its outer factor multiplied
// by num / den (an all-gather concatenates G blocks: num = G). Output
// dimensions without an edge are `fresh` (the same values at every index:
// broadcast, iota off its dimension, a region input) or refuse the axis;
// operand dimensions without an edge refuse it (reduced, contracted, mixed).
struct Rule {
  struct Edge {
    Node in;
    int64_t in_dim;
    int64_t leaf;
    int64_t out_dim;
    int64_t num = 1, den = 1;
  };
  std::vector<Edge> edges;
  absl::flat_hash_set<std::pair<int64_t, int64_t>> fresh;  // (leaf, out_dim)
  bool opaque = false;  // nothing may carry the axis
  std::string why;      // for the refusal
};

Node OperandNode(const HloInstruction* i, int64_t k) { return {i->operand(k), -1}; }

void Identity(Rule* r, const Node& in, int64_t leaf, int64_t rank) {
  for (int64_t d = 0; d < rank; ++d) r->edges.push_back({in, d, leaf, d});
}

Rule RuleOf(const HloInstruction* I) {
  Rule r;
  const Shape& out = I->shape();
  const HloOpcode op = I->opcode();
  const std::optional<std::vector<int64_t>>& dims = I->dimensions();
  auto operand_rank = [&](int64_t k) { return I->operand(k)->shape().IsArray() ? I->operand(k)->shape().rank() : -1; };
  if (IsElementwise(op) || (op == HloOpcode::kBitcastConvert && out.IsArray() && operand_rank(0) == out.rank()) ||
      (op == HloOpcode::kCustomCall && IsIdentityCustomCall(*I)) || op == HloOpcode::kAddDependency) {
    if (!out.IsArray()) return Rule{{}, {}, true, "a tuple result"};
    const int64_t n = op == HloOpcode::kAddDependency || op == HloOpcode::kCustomCall ? 1 : I->operand_count();
    for (int64_t k = 0; k < n; ++k) {
      if (operand_rank(k) == out.rank()) Identity(&r, OperandNode(I, k), -1, out.rank());
      else if (operand_rank(k) != 0) return Rule{{}, {}, true, "operands of another rank"};
    }
    return r;
  }
  switch (op) {
    case HloOpcode::kParameter:
      for (int64_t d = 0; out.IsArray() && d < out.rank(); ++d) r.fresh.insert({-1, d});
      if (!out.IsArray()) r.opaque = true;
      return r;
    case HloOpcode::kConstant:
      r.why = "a constant's values differ along it";
      return r;
    case HloOpcode::kIota: {
      auto d = IntAttribute(*I, "iota_dimension");
      for (int64_t f = 0; f < out.rank(); ++f) {
        if (!d.ok() || f != *d) r.fresh.insert({-1, f});
      }
      r.why = "iota counts along it";
      return r;
    }
    case HloOpcode::kBroadcast:
      if (!dims.has_value()) break;
      for (size_t i = 0; i < dims->size(); ++i) r.edges.push_back({OperandNode(I, 0), int64_t(i), -1, (*dims)[i]});
      for (int64_t f = 0; f < out.rank(); ++f) {
        if (std::find(dims->begin(), dims->end(), f) == dims->end()) r.fresh.insert({-1, f});
      }
      return r;
    case HloOpcode::kTranspose:
      if (!dims.has_value()) break;
      for (size_t f = 0; f < dims->size(); ++f) r.edges.push_back({OperandNode(I, 0), (*dims)[f], -1, int64_t(f)});
      return r;
    case HloOpcode::kConcatenate:
    case HloOpcode::kReverse:
    case HloOpcode::kAllToAll: {
      if (!dims.has_value() || !out.IsArray()) break;
      for (int64_t k = 0; k < I->operand_count(); ++k) {
        for (int64_t d = 0; d < out.rank(); ++d) {
          if (std::find(dims->begin(), dims->end(), d) == dims->end()) r.edges.push_back({OperandNode(I, k), d, -1, d});
        }
      }
      r.why = "it concatenates, reverses or splits along it";
      return r;
    }
    case HloOpcode::kReduce: {
      if (!dims.has_value()) break;
      const int64_t n = I->operand_count() / 2;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t leaf = out.IsTuple() ? k : -1;
        int64_t f = 0;
        for (int64_t d = 0; d < operand_rank(k); ++d) {
          if (std::find(dims->begin(), dims->end(), d) != dims->end()) continue;
          r.edges.push_back({OperandNode(I, k), d, leaf, f++});
        }
      }
      r.why = "it reduces over it";
      return r;
    }
    case HloOpcode::kDot: {
      const DotDimensionNumbers& dn = I->dot_dimension_numbers();
      int64_t f = 0;
      for (size_t b = 0; b < dn.lhs_batch_dimensions.size(); ++b, ++f) {
        r.edges.push_back({OperandNode(I, 0), dn.lhs_batch_dimensions[b], -1, f});
        r.edges.push_back({OperandNode(I, 1), dn.rhs_batch_dimensions[b], -1, f});
      }
      for (int k = 0; k < 2; ++k) {
        const auto& batch = k == 0 ? dn.lhs_batch_dimensions : dn.rhs_batch_dimensions;
        const auto& contract = k == 0 ? dn.lhs_contracting_dimensions : dn.rhs_contracting_dimensions;
        for (int64_t d = 0; d < operand_rank(k); ++d) {
          if (std::find(batch.begin(), batch.end(), d) != batch.end() ||
              std::find(contract.begin(), contract.end(), d) != contract.end()) {
            continue;
          }
          r.edges.push_back({OperandNode(I, k), d, -1, f++});
        }
      }
      r.why = "the dot contracts it";
      return r;
    }
    case HloOpcode::kAllGather:
    case HloOpcode::kAllReduce:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectiveBroadcast: {
      const int64_t g = op == HloOpcode::kAllGather || op == HloOpcode::kReduceScatter ? I->collective_dimension() : -1;
      for (int64_t k = 0; k < I->operand_count(); ++k) {
        const int64_t leaf = out.IsTuple() ? k : -1;
        const Shape* o = LeafShape({I, leaf});
        if (o == nullptr || operand_rank(k) != o->rank()) return Rule{{}, {}, true, "a collective of another form"};
        const Shape& in = I->operand(k)->shape();
        for (int64_t d = 0; d < o->rank(); ++d) {
          if (d != g) {
            r.edges.push_back({OperandNode(I, k), d, leaf, d});
          } else if (op == HloOpcode::kAllGather && in.dimensions(d) > 0 && o->dimensions(d) % in.dimensions(d) == 0) {
            r.edges.push_back({OperandNode(I, k), d, leaf, d, o->dimensions(d) / in.dimensions(d), 1});
          } else if (op == HloOpcode::kReduceScatter && o->dimensions(d) > 0 &&
                     in.dimensions(d) % o->dimensions(d) == 0) {
            r.edges.push_back({OperandNode(I, k), d, leaf, d, 1, in.dimensions(d) / o->dimensions(d)});
          }
        }
      }
      return r;
    }
    case HloOpcode::kGetTupleElement: {
      const Node in{I->operand(0), I->tuple_index()};
      if (LeafShape(in) == nullptr || !out.IsArray()) break;
      Identity(&r, in, -1, out.rank());
      return r;
    }
    case HloOpcode::kTuple:
      for (int64_t k = 0; k < I->operand_count(); ++k) {
        if (operand_rank(k) < 0) return Rule{{}, {}, true, "a nested tuple"};
        Identity(&r, OperandNode(I, k), k, operand_rank(k));
      }
      return r;
    case HloOpcode::kOptimizationBarrier:
      if (!out.IsTuple()) break;
      for (int64_t k = 0; k < out.tuple_shapes_size(); ++k) {
        if (LeafShape({I, k}) == nullptr) return Rule{{}, {}, true, "a nested tuple"};
        Identity(&r, {I->operand(0), k}, k, out.tuple_shapes(k).rank());
      }
      return r;
    default:
      break;
  }
  r.opaque = true;
  r.why = "it does not treat the axis independently";
  return r;
}

// The search for one axis of S indices through both sides of a region.
class AxisSearch {
 public:
  AxisSearch(const HloComputation* before, const HloComputation* after, int64_t S)
      : before_(before), after_(after), S_(S) {}

  // Puts the axis at `loc` of `n` and follows it through both sides; false
  // (error()) when some instruction does not carry it independently.
  bool Run(const Node& n, const Loc& loc) {
    if (!Set(n, loc)) return false;
    while (!queue_.empty()) {
      const HloInstruction* i = queue_.back();
      queue_.pop_back();
      queued_.erase(i);
      if (!Step(i)) return false;
    }
    return true;
  }
  const std::string& error() const { return error_; }
  const absl::node_hash_map<Node, std::optional<Loc>>& state() const { return state_; }

 private:
  bool Fail(const HloInstruction* i, absl::string_view why) {
    error_ = absl::StrCat(HloOpcodeString(i->opcode()), " %", i->name(), ": ", why);
    return false;
  }
  void Enqueue(const HloInstruction* i) {
    if (queued_.insert(i).second) queue_.push_back(i);
  }
  // The other side's counterpart of a region input or region output.
  const HloInstruction* Partner(const HloInstruction* i) const {
    const HloComputation* other = i->parent() == before_ ? after_ : before_;
    if (i->opcode() == HloOpcode::kParameter && i->parameter_number() < other->num_parameters()) {
      return other->parameter_instruction(i->parameter_number());
    }
    if (i == i->parent()->root_instruction()) return other->root_instruction();
    return nullptr;
  }
  bool Set(const Node& n, std::optional<Loc> loc) {
    auto [it, inserted] = state_.try_emplace(n, loc);
    if (!inserted) {
      if (it->second == loc) return true;
      return Fail(n.first, absl::StrCat(NodeName(n), " would carry the axis in two ways"));
    }
    if (loc.has_value()) {
      const Shape* s = LeafShape(n);
      if (s == nullptr || loc->dim >= s->rank() || s->dimensions(loc->dim) != loc->outer * S_ * loc->inner) {
        return Fail(n.first, "the axis does not fit its shape");
      }
    }
    Enqueue(n.first);
    for (const HloInstruction* u : n.first->users()) Enqueue(u);
    if (const HloInstruction* p = Partner(n.first); p != nullptr) {
      if (!Set({p, n.second}, loc)) return false;
    }
    return true;
  }
  const std::optional<Loc>* Get(const Node& n) const {
    auto it = state_.find(n);
    return it == state_.end() ? nullptr : &it->second;
  }

  bool Step(const HloInstruction* I) {
    if (I->opcode() == HloOpcode::kReshape || I->opcode() == HloOpcode::kBitcast) return StepReshape(I);
    if (I->opcode() == HloOpcode::kCustomCall && I->custom_call_target() == kCollectiveMatmulTarget) {
      return StepCollectiveMatmul(I);
    }
    const Rule r = RuleOf(I);
    // Every value the instruction reads or writes.
    std::vector<Node> ins, outs;
    if (I->opcode() == HloOpcode::kGetTupleElement) ins.push_back({I->operand(0), I->tuple_index()});
    for (int64_t k = 0; k < I->operand_count() && I->opcode() != HloOpcode::kGetTupleElement; ++k) {
      const HloInstruction* o = I->operand(k);
      if (o->shape().IsTuple()) {
        for (int64_t j = 0; j < o->shape().tuple_shapes_size(); ++j) ins.push_back({o, j});
      } else {
        ins.push_back({o, -1});
      }
    }
    if (I->shape().IsTuple()) {
      for (int64_t j = 0; j < I->shape().tuple_shapes_size(); ++j) outs.push_back({I, j});
    } else {
      outs.push_back({I, -1});
    }
    if (r.opaque) {
      for (const auto* list : {&ins, &outs}) {
        for (const Node& n : *list) {
          const std::optional<Loc>* l = Get(n);
          if (l != nullptr && l->has_value()) return Fail(I, r.why);
          if (l == nullptr && LeafShape(n) != nullptr && !Set(n, std::nullopt)) return false;
        }
      }
      return true;
    }
    // Forward: an operand that carries the axis.
    for (const Node& n : ins) {
      const std::optional<Loc>* l = Get(n);
      if (l == nullptr || !l->has_value()) continue;
      bool found = false;
      for (const Rule::Edge& e : r.edges) {
        if (e.in != n || e.in_dim != (*l)->dim) continue;
        found = true;
        if (((*l)->outer * e.num) % e.den != 0) return Fail(I, "the axis does not divide into its blocks");
        if (!Set({I, e.leaf}, Loc{e.out_dim, (*l)->outer * e.num / e.den, (*l)->inner})) return false;
      }
      if (!found) {
        return Fail(I, r.why.empty() ? "it does not treat the axis independently" : r.why);
      }
    }
    // Backward: an output that carries the axis, or does not.
    for (const Node& n : outs) {
      const std::optional<Loc>* l = Get(n);
      if (l == nullptr) continue;
      const std::optional<Loc> loc = *l;
      absl::flat_hash_set<Node> linked, carrying;
      for (const Rule::Edge& e : r.edges) {
        if (e.leaf != n.second) continue;
        linked.insert(e.in);
        if (!loc.has_value() || e.out_dim != loc->dim) continue;
        carrying.insert(e.in);
        if ((loc->outer * e.den) % e.num != 0) return Fail(I, "the axis does not divide into its blocks");
        if (!Set(e.in, Loc{e.in_dim, loc->outer * e.den / e.num, loc->inner})) return false;
      }
      if (loc.has_value() && carrying.empty() && !r.fresh.contains({n.second, loc->dim})) {
        return Fail(I, r.why.empty() ? "it does not treat the axis independently" : r.why);
      }
      for (const Node& in : linked) {
        if (!carrying.contains(in) && !Set(in, std::nullopt)) return false;
      }
    }
    return true;
  }

  // A reshape keeps the row-major order: the axis must lie within one
  // dimension on both sides.
  bool StepReshape(const HloInstruction* I) {
    const Node in{I->operand(0), -1}, out{I, -1};
    if (!I->shape().IsArray() || !I->operand(0)->shape().IsArray()) return Fail(I, "not an array reshape");
    const std::vector<int64_t> from = Dims(I->operand(0)->shape()), to = Dims(I->shape());
    for (auto [a, b, fa, fb] : {std::tuple{in, out, &from, &to}, std::tuple{out, in, &to, &from}}) {
      const std::optional<Loc>* l = Get(a);
      if (l == nullptr) continue;
      if (!l->has_value()) {
        if (!Set(b, std::nullopt)) return false;
        continue;
      }
      std::optional<Loc> mapped = Relinearize(**l, S_, *fa, *fb);
      if (!mapped.has_value()) return Fail(I, "the reshape merges or splits the axis with other dimensions");
      if (!Set(b, mapped)) return false;
    }
    return true;
  }

  // The kernel (docs/interpreter.md): operand 0 [M, K] of the group's G
  // members gathered into [G*M, K] rows, times operand 1 [K, N...] (R=0) or
  // [N, K] (R=1), the [G*M, N...] product read row-major as the result.
  bool StepCollectiveMatmul(const HloInstruction* I) {
    if (!CheckCollectiveMatmulShapes(*I).ok()) return Fail(I, "the kernel contract does not hold");
    auto config = ParseCollectiveMatmulConfig(*I->backend_config());
    const int64_t G = config->tp_degree, R = config->rhs_contracting_dim;
    const Node lhs{I->operand(0), -1}, rhs{I->operand(1), -1}, out{I, -1};
    const std::vector<int64_t> rhs_dims = Dims(I->operand(1)->shape());
    std::vector<int64_t> product = {G * I->operand(0)->shape().dimensions(0)};
    if (R == 0) {
      product.insert(product.end(), rhs_dims.begin() + 1, rhs_dims.end());
    } else {
      product.push_back(rhs_dims[0]);
    }
    const std::vector<int64_t> result = Dims(I->shape());
    auto to_result = [&](const Loc& p) -> bool {
      std::optional<Loc> mapped = Relinearize(p, S_, product, result);
      if (!mapped.has_value()) return Fail(I, "the kernel's result merges the axis with other dimensions");
      return Set(out, mapped);
    };
    if (const std::optional<Loc>* l = Get(lhs); l != nullptr && l->has_value()) {
      if ((*l)->dim != 0) return Fail(I, "the kernel contracts it");
      if (!Set(rhs, std::nullopt) || !to_result(Loc{0, (*l)->outer * G, (*l)->inner})) return false;
    }
    if (const std::optional<Loc>* l = Get(rhs); l != nullptr && l->has_value()) {
      if ((*l)->dim == R) return Fail(I, "the kernel contracts it");
      if (!Set(lhs, std::nullopt) || !to_result(Loc{R == 0 ? (*l)->dim : 1, (*l)->outer, (*l)->inner})) return false;
    }
    if (const std::optional<Loc>* l = Get(out); l != nullptr) {
      if (!l->has_value()) return Set(lhs, std::nullopt) && Set(rhs, std::nullopt);
      std::optional<Loc> p = Relinearize(**l, S_, result, product);
      if (!p.has_value()) return Fail(I, "the kernel's result merges the axis with other dimensions");
      if (p->dim == 0) {
        if (p->outer % G != 0) return Fail(I, "the axis does not divide into the kernel's row blocks");
        return Set(rhs, std::nullopt) && Set(lhs, Loc{0, p->outer / G, p->inner});
      }
      return Set(lhs, std::nullopt) && Set(rhs, Loc{R == 0 ? p->dim : 0, p->outer, p->inner});
    }
    return true;
  }

  const HloComputation* before_;
  const HloComputation* after_;
  int64_t S_;
  // Node-based: Get's pointers stay valid while Set inserts (a flat map
  // rehashed under them: heap use-after-free in CI's ASan run).
  absl::node_hash_map<Node, std::optional<Loc>> state_;
  std::vector<const HloInstruction*> queue_;
  absl::flat_hash_set<const HloInstruction*> queued_;
  std::string error_;
};

void Shrink(const Node& n, const Loc& loc, int64_t kept) {
  HloInstruction* i = const_cast<HloInstruction*>(n.first);
  Shape* s = i->mutable_shape();
  if (n.second >= 0) s = &(*s->mutable_tuple_shapes())[n.second];
  s->set_dimensions(loc.dim, loc.outer * kept * loc.inner);
}

}  // namespace

absl::StatusOr<std::vector<SampledAxis>> SampleRegion(
    HloModule* before, HloModule* after, int64_t samples,
    const std::function<absl::Status(const HloModule&, const HloModule&)>& fits) {
  std::vector<SampledAxis> sampled;
  absl::Status st = fits(*before, *after);
  if (st.ok() || samples <= 0) return st.ok() ? sampled : absl::StatusOr<std::vector<SampledAxis>>(st);
  const HloComputation* eb = before->entry_computation();
  const HloComputation* ea = after->entry_computation();
  absl::flat_hash_set<std::pair<int64_t, int64_t>> refused;  // (parameter, dim)
  std::string first_refusal;
  while (true) {
    // The largest dimension of a region input not yet tried.
    int64_t best_p = -1, best_d = -1, best_size = samples;
    for (int64_t p = 0; p < eb->num_parameters(); ++p) {
      const Shape& s = eb->parameter_instruction(p)->shape();
      for (int64_t d = 0; s.IsArray() && d < s.rank(); ++d) {
        if (s.dimensions(d) > best_size && !refused.contains({p, d})) {
          best_p = p, best_d = d, best_size = s.dimensions(d);
        }
      }
    }
    if (best_p < 0) break;
    const HloInstruction* param = eb->parameter_instruction(best_p);
    const std::string where = absl::StrCat("dim ", best_d, " of region input %", param->name(), " ",
                                           param->shape().ToString(false));
    AxisSearch search(eb, ea, best_size);
    if (!search.Run({param, -1}, Loc{best_d, 1, 1})) {
      refused.insert({best_p, best_d});
      if (first_refusal.empty()) first_refusal = absl::StrCat(where, " cannot be sampled: ", search.error());
      continue;
    }
    for (const auto& [node, loc] : search.state()) {
      if (loc.has_value()) Shrink(node, *loc, samples);
    }
    sampled.push_back({where, best_size, samples});
    st = fits(*before, *after);
    if (st.ok()) return sampled;
  }
  std::string message(st.message());
  if (!sampled.empty()) absl::StrAppend(&message, " (after sampling ", sampled.size(), " axes)");
  if (!first_refusal.empty()) absl::StrAppend(&message, "; ", first_refusal);
  return absl::Status(st.code(), message);
}

}  // namespace eval
}  // namespace hilo
