#include "hilo/eval/cone.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hilo/eval/structural.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"

namespace hilo {
namespace eval {
namespace {

bool IsPassedThroughToken(const HloInstruction& c, int64_t j);

bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-'; }

// `text` (an instruction as the printer writes it) with the names in its
// operand list passed through `rename` (nullopt: kept). Names are written
// with or without `%`; only the operand list is touched, so a called
// computation or attribute of the same spelling is left alone.
template <typename Rename>
std::string MapOperandNames(const std::string& text, const HloInstruction& instr, Rename rename) {
  const size_t eq = text.find(" = ");
  const std::string open = absl::StrCat(HloOpcodeString(instr.opcode()), "(");
  const size_t list = text.find(open, eq == std::string::npos ? 0 : eq);
  if (list == std::string::npos) return text;
  std::string out = text.substr(0, list + open.size());
  int depth = 0;
  size_t k = list + open.size();
  while (k < text.size()) {
    const char c = text[k];
    if (c == ')' && depth == 0) break;
    if (!IsNameChar(c) || (k > 0 && IsNameChar(text[k - 1]))) {
      if (c == '(' || c == '{' || c == '[') ++depth;
      if (c == ')' || c == '}' || c == ']') --depth;
      out += c;
      ++k;
      continue;
    }
    size_t end = k;
    while (end < text.size() && IsNameChar(text[end])) ++end;
    std::optional<std::string> replacement = rename(absl::string_view(text).substr(k, end - k));
    if (replacement.has_value()) {
      out += *replacement;
    } else {
      out.append(text, k, end - k);
    }
    k = end;
  }
  out.append(text, k, std::string::npos);
  return out;
}

// The canonical text without the instruction's own name and with every
// operand name replaced by `_`: equal for two instructions that compute the
// same function of their operands.
std::string MaskedText(const HloInstruction& instr, int64_t num_partitions) {
  const std::string text = CanonicalInstructionText(instr, num_partitions);
  absl::flat_hash_set<absl::string_view> operands;
  for (const HloInstruction* op : instr.operands()) operands.insert(op->name());
  std::string masked = MapOperandNames(text, instr, [&](absl::string_view name) -> std::optional<std::string> {
    if (operands.contains(name)) return std::string("_");
    return std::nullopt;
  });
  const size_t eq = masked.find(" = ");
  return eq == std::string::npos ? masked : masked.substr(eq + 3);
}

std::vector<std::string> CalledNames(const HloInstruction& instr) {
  std::vector<std::string> names;
  for (const HloComputation* c : instr.called_computations()) names.emplace_back(c->name());
  return names;
}

// Per instruction of `computation`: computed from no parameter.
absl::flat_hash_set<const HloInstruction*> ParameterFree(const HloComputation& computation) {
  absl::flat_hash_set<const HloInstruction*> free;
  for (const HloInstruction* i : computation.MakeInstructionPostOrder()) {
    if (i->opcode() == HloOpcode::kParameter) continue;
    bool all = true;
    for (const HloInstruction* op : i->operands()) all = all && free.contains(op);
    if (all) free.insert(i);
  }
  return free;
}

// Every computation `roots` call, at any depth, callees before callers.
std::vector<const HloComputation*> CalledClosure(const std::vector<const HloInstruction*>& roots) {
  std::vector<const HloComputation*> order;
  absl::flat_hash_set<const HloComputation*> seen;
  // Explicit stack: (computation, children pushed).
  std::vector<std::pair<const HloComputation*, bool>> stack;
  for (const HloInstruction* i : roots) {
    for (const HloComputation* c : i->called_computations()) {
      if (seen.insert(c).second) stack.push_back({c, false});
    }
    while (!stack.empty()) {
      auto& [c, expanded] = stack.back();
      if (expanded) {
        order.push_back(c);
        stack.pop_back();
        continue;
      }
      expanded = true;
      const HloComputation* current = c;
      for (const HloInstruction* j : current->instructions()) {
        for (const HloComputation* callee : j->called_computations()) {
          if (seen.insert(callee).second) stack.push_back({callee, false});
        }
      }
    }
  }
  return order;
}

// The instruction's text with the operand names in `rename` replaced.
std::string RenamedText(const HloInstruction& instr,
                        const absl::flat_hash_map<std::string, std::string>& rename) {
  std::string text = InstructionTextForExtraction(instr);
  if (rename.empty()) return text;
  return MapOperandNames(text, instr, [&](absl::string_view name) -> std::optional<std::string> {
    auto it = rename.find(name);
    if (it == rename.end()) return std::nullopt;
    return it->second;
  });
}

// One side's cone module as text.
std::string ConeModuleText(absl::string_view name, const DeviceGrid& grid,
                           const std::vector<std::pair<std::string, const Shape*>>& params,
                           const std::vector<const HloInstruction*>& body,
                           const std::vector<const HloInstruction*>& outputs,
                           const absl::flat_hash_map<std::string, std::string>& rename) {
  std::string text = absl::StrCat("HloModule ", name, ", replica_count=", grid.replica_count,
                                  ", num_partitions=", grid.num_partitions, "\n\n");
  for (const HloComputation* c : CalledClosure(body)) {
    absl::StrAppend(&text, "%", c->name(), " {\n");
    for (const HloInstruction* i : c->MakeInstructionPostOrder()) {
      absl::StrAppend(&text, i == c->root_instruction() ? "  ROOT " : "  ", InstructionTextForExtraction(*i),
                      "\n");
    }
    text += "}\n\n";
  }
  text += "ENTRY %cone {\n";
  absl::flat_hash_set<std::string> names;
  for (size_t k = 0; k < params.size(); ++k) {
    absl::StrAppend(&text, "  %", params[k].first, " = ", params[k].second->ToString(), " parameter(", k,
                    ")\n");
    names.insert(params[k].first);
  }
  for (const HloInstruction* i : body) {
    absl::StrAppend(&text, "  ", RenamedText(*i, rename), "\n");
    names.insert(std::string(i->name()));
  }
  std::vector<std::string> shapes, refs;
  for (const HloInstruction* o : outputs) {
    shapes.push_back(o->shape().ToString());
    auto it = rename.find(o->name());
    refs.push_back(absl::StrCat("%", it != rename.end() ? it->second : o->name()));
  }
  std::string root = "cone.outputs";
  while (names.contains(root)) root += "_";
  absl::StrAppend(&text, "  ROOT %", root, " = (", absl::StrJoin(shapes, ", "), ") tuple(",
                  absl::StrJoin(refs, ", "), ")\n}\n");
  return text;
}

// Cuts the cones of the pair of computations (eb, ea) of the same name into
// `result`. Every other computation the two call is assumed equivalent to
// its namesake: the caller checks each pair that differs (induction on the
// acyclic call graph).
// `coarse`: cut only at unchanged instructions and parameters (no induction
// over pairs and other region outputs, so no cycle is possible; larger cones).
absl::Status ExtractInComputation(const HloComputation* eb, const HloComputation* ea, const DeviceGrid& grid,
                                  bool coarse, const std::function<void()>& tick, ChangedCone* out) {
  const int64_t P = grid.num_partitions;
  const std::string where = ea->IsEntryComputation() ? "" : absl::StrCat(" in ", ea->name());
  absl::flat_hash_map<absl::string_view, const HloInstruction*> before_by_name;
  for (const HloInstruction* b : eb->instructions()) before_by_name[b->name()] = b;

  // Bottom-up: the unchanged instructions of `after`, each with its namesake.
  const std::vector<HloInstruction*> order_a = ea->MakeInstructionPostOrder();
  const std::vector<HloInstruction*> order_b = eb->MakeInstructionPostOrder();
  absl::flat_hash_map<const HloInstruction*, const HloInstruction*> same;  // after -> before
  for (const HloInstruction* a : order_a) {
    auto it = before_by_name.find(a->name());
    if (it == before_by_name.end()) continue;
    bool operands_same = true;
    for (const HloInstruction* op : a->operands()) operands_same = operands_same && same.contains(op);
    if (!operands_same || CanonicalInstructionText(*a, P) != CanonicalInstructionText(*it->second, P)) {
      continue;
    }
    same[a] = it->second;
  }

  // Top-down: pairs computing the same function of paired operands; the
  // first pairs that do not are the region outputs.
  absl::flat_hash_map<const HloInstruction*, const HloInstruction*> pair_a, pair_b;
  std::vector<std::pair<const HloInstruction*, const HloInstruction*>> outputs;  // (before, after)
  absl::flat_hash_set<std::pair<const HloInstruction*, const HloInstruction*>> output_set;
  auto add_output = [&](const HloInstruction* a, const HloInstruction* b) {
    if (output_set.insert({b, a}).second) outputs.push_back({b, a});
  };
  std::vector<std::pair<const HloInstruction*, const HloInstruction*>> descended;  // (after, before)
  std::vector<std::pair<const HloInstruction*, const HloInstruction*>> work = {
      {ea->root_instruction(), eb->root_instruction()}};
  pair_a[ea->root_instruction()] = eb->root_instruction();
  pair_b[eb->root_instruction()] = ea->root_instruction();
  while (!work.empty()) {
    auto [a, b] = work.back();
    work.pop_back();
    auto s = same.find(a);
    if (s != same.end() && s->second == b) continue;  // an unchanged value
    const bool similar = a->operand_count() == b->operand_count() && CalledNames(*a) == CalledNames(*b) &&
                         MaskedText(*a, P) == MaskedText(*b, P);
    if (!similar) {
      add_output(a, b);
      continue;
    }
    descended.push_back({a, b});
    for (int64_t k = 0; k < a->operand_count(); ++k) {
      const HloInstruction* oa = a->operand(k);
      const HloInstruction* ob = b->operand(k);
      auto pa = pair_a.find(oa);
      auto pb = pair_b.find(ob);
      if (pa != pair_a.end() && pa->second == ob) continue;
      if (pa != pair_a.end() || pb != pair_b.end()) {
        // Already paired with another instruction: compare this pair too.
        add_output(oa, ob);
        continue;
      }
      pair_a[oa] = ob;
      pair_b[ob] = oa;
      work.push_back({oa, ob});
    }
  }
  for (const auto& [b, a] : outputs) {
    if (!a->shape().Compatible(b->shape())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the changed region's output %", a->name(), " ", a->shape().ToString(false),
          " replaces %", b->name(), " ", b->shape().ToString(false), " of another shape"));
    }
  }

  // Cut points, in classes of instructions asserted equal (union-find on
  // instruction pointers; both modules' instructions are distinct).
  const absl::flat_hash_set<const HloInstruction*> free_a = ParameterFree(*ea);
  const absl::flat_hash_set<const HloInstruction*> free_b = ParameterFree(*eb);
  absl::flat_hash_map<const HloInstruction*, const HloInstruction*> uf;
  auto find = [&](const HloInstruction* x) {
    auto it = uf.find(x);
    if (it == uf.end()) return x;
    while (uf.at(x) != x) x = uf[x] = uf.at(uf.at(x));
    return x;
  };
  auto unite = [&](const HloInstruction* x, const HloInstruction* y) {
    uf.try_emplace(x, x);
    uf.try_emplace(y, y);
    x = find(x);
    y = find(y);
    if (x != y) uf[x] = y;
  };
  absl::flat_hash_set<const HloInstruction*> cut;  // either side
  for (const auto& [a, b] : same) {
    unite(a, b);
    if (!free_a.contains(a)) cut.insert(a), cut.insert(b);
  }
  for (const auto& [a, b] : descended) {
    unite(a, b);
    if (!coarse) cut.insert(a), cut.insert(b);
  }
  for (const auto& [b, a] : outputs) {
    unite(a, b);
    if (!coarse) cut.insert(a), cut.insert(b);
  }
  for (int64_t k = 0; k < ea->num_parameters() && k < eb->num_parameters(); ++k) {
    unite(ea->parameter_instruction(k), eb->parameter_instruction(k));
    cut.insert(ea->parameter_instruction(k));
    cut.insert(eb->parameter_instruction(k));
  }

  // Per output, the cone on each side: from the output back to cut points.
  struct Walk {
    std::vector<const HloInstruction*> body;  // both sides
    std::vector<const HloInstruction*> cuts;  // cut points used, in order
  };
  std::vector<Walk> walks(outputs.size());
  absl::flat_hash_map<const HloInstruction*, size_t> owner;  // body instruction -> first output
  std::vector<size_t> region_of(outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) region_of[k] = k;
  auto region_root = [&](size_t k) {
    while (region_of[k] != k) k = region_of[k] = region_of[region_of[k]];
    return k;
  };
  // Whether `from`'s value is computed from a member of a class in
  // `classes` other than its own, looking back at most kDependencyReach
  // instructions (a bound on the cost, not on the distance: a token threaded
  // through a chain of collectives is found however long the chain).
  constexpr size_t kDependencyReach = 512;
  auto depends_on = [&](const HloInstruction* from,
                        const absl::flat_hash_set<const HloInstruction*>& classes) {
    const HloInstruction* own = find(from);
    absl::flat_hash_set<const HloInstruction*> visited = {from};
    std::vector<const HloInstruction*> stack(from->operands().begin(), from->operands().end());
    while (!stack.empty() && visited.size() < kDependencyReach) {
      const HloInstruction* i = stack.back();
      stack.pop_back();
      if (!visited.insert(i).second) continue;
      if (find(i) != own && classes.contains(find(i))) return true;
      // A passed-through token feeds only its own result element, whose
      // uses read the token itself (WithTokensForwarded): not a dependency.
      for (int64_t k = 0; k < i->operand_count(); ++k) {
        if (!IsPassedThroughToken(*i, k)) stack.push_back(i->operand(k));
      }
    }
    return false;
  };
  // Cut points must be consistent and independent. A class is not cut but
  // computed, on both sides and in every cone ("expanded"), when
  // - one of its members is computed in some cone anyway (a region output
  //   that another cone uses): a parameter on one side and a computed value
  //   on the other would be unrelated values;
  // - a member used as a cut point is computed from another class cut in the
  //   same cone: random values at both would be values the program cannot
  //   produce (a gathered weight and the weight itself).
  // Repeated until nothing changes (at most 64 rounds; then the remaining cut
  // points stay as they are: false alarms possible, never a false verdict).
  absl::flat_hash_set<const HloInstruction*> expanded;  // classes
  auto walk = [&](size_t k) {
    walks[k] = Walk();
    absl::flat_hash_set<const HloInstruction*> seen;
    for (const HloInstruction* start : {outputs[k].second, outputs[k].first}) {
      seen.insert(start);
      if (start->opcode() == HloOpcode::kParameter) {  // compared as it is
        walks[k].cuts.push_back(start);
        continue;
      }
      std::vector<const HloInstruction*> stack = {start};
      while (!stack.empty()) {
        const HloInstruction* i = stack.back();
        stack.pop_back();
        walks[k].body.push_back(i);
        for (const HloInstruction* op : i->operands()) {
          if (!seen.insert(op).second) continue;
          if (cut.contains(op) && (op->opcode() == HloOpcode::kParameter || !expanded.contains(find(op)))) {
            walks[k].cuts.push_back(op);
          } else {
            stack.push_back(op);
          }
        }
      }
    }
  };
  for (int round = 0;; ++round) {
    if (tick) tick();
    absl::flat_hash_set<const HloInstruction*> computed;  // classes with a member in some body
    for (size_t k = 0; k < outputs.size(); ++k) {
      walk(k);
      for (const HloInstruction* i : walks[k].body) {
        if (uf.contains(i)) computed.insert(find(i));
      }
    }
    if (round == 64) break;
    bool more = false;
    for (size_t k = 0; k < outputs.size(); ++k) {
      absl::flat_hash_set<const HloInstruction*> classes;
      for (const HloInstruction* c : walks[k].cuts) classes.insert(find(c));
      for (const HloInstruction* c : walks[k].cuts) {
        if (c->opcode() == HloOpcode::kParameter || expanded.contains(find(c))) continue;
        if (computed.contains(find(c)) || depends_on(c, classes)) {
          expanded.insert(find(c));
          more = true;
        }
      }
    }
    if (!more) break;
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    for (const HloInstruction* i : walks[k].body) {
      // Copied constants (computed from no parameter) are the same in every
      // cone: sharing them joins nothing (every layer's norm shares its
      // epsilon, which made one region of a whole model).
      if (free_a.contains(i) || free_b.contains(i)) continue;
      auto [it, inserted] = owner.try_emplace(i, k);
      if (!inserted) {
        const size_t x = region_root(it->second), y = region_root(k);
        if (x != y) region_of[std::max(x, y)] = std::min(x, y);
      }
    }
  }

  // Justification graph (checked acyclic below): a pair asserted equal is
  // a node; an unchanged pair is an axiom (no node); a paired instruction
  // depends on its operand pairs; a region output on the pairs its region
  // assumes at its cut points; a class used with members that are not
  // themselves a pair on all the pairs in it.
  using Pair = std::pair<const HloInstruction*, const HloInstruction*>;  // (after, before)
  absl::flat_hash_map<Pair, int64_t> pair_node;
  absl::flat_hash_map<const HloInstruction*, int64_t> class_node;
  std::vector<std::vector<int64_t>> edges;
  auto new_node = [&]() {
    edges.emplace_back();
    return static_cast<int64_t>(edges.size()) - 1;
  };
  auto node_of = [&](const HloInstruction* a, const HloInstruction* b) -> int64_t {
    auto s = same.find(a);
    if (s != same.end() && s->second == b) return -1;
    auto [it, inserted] = pair_node.try_emplace(Pair{a, b}, 0);
    if (inserted) it->second = new_node();
    return it->second;
  };
  auto class_of = [&](const HloInstruction* x) {
    auto [it, inserted] = class_node.try_emplace(find(x), 0);
    if (inserted) it->second = new_node();
    return it->second;
  };
  for (const auto& [a, b] : descended) {
    const int64_t n = node_of(a, b);
    edges[class_of(a)].push_back(n);
    for (int64_t k = 0; k < a->operand_count(); ++k) {
      const int64_t m = node_of(a->operand(k), b->operand(k));
      if (m >= 0) edges[n].push_back(m);
    }
  }
  for (const auto& [b, a] : outputs) {
    const int64_t n = node_of(a, b);
    if (n >= 0) edges[class_of(a)].push_back(n);
  }

  // One module pair per region.
  absl::flat_hash_map<size_t, size_t> region_index;
  std::vector<std::vector<size_t>> region_outputs;
  for (size_t k = 0; k < outputs.size(); ++k) {
    auto [it, inserted] = region_index.try_emplace(region_root(k), region_outputs.size());
    if (inserted) region_outputs.emplace_back();
    region_outputs[it->second].push_back(k);
  }
  absl::flat_hash_map<const HloInstruction*, int64_t> position;
  for (const auto* order : {&order_a, &order_b}) {
    for (size_t p = 0; p < order->size(); ++p) position[(*order)[p]] = static_cast<int64_t>(p);
  }
  auto module_of = [&](const HloInstruction* i) { return i->parent() == ea ? 0 : 1; };
  ChangedCone result;  // appended to *out when no cycle is found
  for (const std::vector<size_t>& members : region_outputs) {
    if (tick) tick();
    ConeRegion region;
    // Region inputs: cut classes in order of first use.
    std::vector<const HloInstruction*> classes;
    absl::flat_hash_map<const HloInstruction*, int64_t> class_number;
    // Per side: the first member of each class reached (the parameter), and
    // what the other members are renamed to.
    std::vector<const HloInstruction*> first[2];
    std::vector<std::vector<const HloInstruction*>> used;  // per class: the distinct members used
    absl::flat_hash_map<std::string, std::string> rename[2];
    absl::flat_hash_set<const HloInstruction*> body[2];
    for (size_t k : members) {
      for (const HloInstruction* i : walks[k].body) body[module_of(i)].insert(i);
    }
    for (size_t k : members) {
      for (const HloInstruction* c : walks[k].cuts) {
        // Computed in this region already (another of its outputs).
        if (body[module_of(c)].contains(c)) continue;
        auto [it, inserted] = class_number.try_emplace(find(c), classes.size());
        if (inserted) {
          classes.push_back(c);
          first[0].push_back(nullptr);
          first[1].push_back(nullptr);
          used.emplace_back();
        }
        const HloInstruction* rep = classes[it->second];
        if (!c->shape().Compatible(rep->shape())) {
          return absl::FailedPreconditionError(absl::StrCat(
              "the cut point %", c->name(), " ", c->shape().ToString(false), " is paired with %",
              rep->name(), " ", rep->shape().ToString(false), " of another shape"));
        }
        const int side = module_of(c);
        const HloInstruction*& f = first[side][it->second];
        if (f == nullptr) {
          f = c;
          used[it->second].push_back(c);
        } else if (f != c && rename[side].try_emplace(c->name(), f->name()).second) {
          used[it->second].push_back(c);
        }
      }
    }
    // What this region assumes: members of a class used as one value.
    for (size_t c = 0; c < classes.size(); ++c) {
      const std::vector<const HloInstruction*>& u = used[c];
      if (u.size() <= 1) continue;  // one value, nothing asserted
      int64_t needs;
      if (u.size() == 2 && module_of(u[0]) != module_of(u[1])) {
        const HloInstruction* a = module_of(u[0]) == 0 ? u[0] : u[1];
        const HloInstruction* b = module_of(u[0]) == 0 ? u[1] : u[0];
        auto sm = same.find(a);
        if (sm != same.end() && sm->second == b) continue;  // an unchanged pair: an axiom
        auto known = pair_node.find(Pair{a, b});
        needs = known != pair_node.end() ? known->second : class_of(a);
      } else {
        needs = class_of(u[0]);
      }
      for (size_t k : members) {
        const int64_t n = node_of(outputs[k].second, outputs[k].first);
        if (n >= 0) edges[n].push_back(needs);
      }
    }
    std::string texts[2];
    for (int side = 0; side < 2; ++side) {
      std::vector<const HloInstruction*> ordered(body[side].begin(), body[side].end());
      std::sort(ordered.begin(), ordered.end(),
                [&](const HloInstruction* x, const HloInstruction* y) { return position[x] < position[y]; });
      std::vector<std::pair<std::string, const Shape*>> params;
      for (size_t c = 0; c < classes.size(); ++c) {
        params.push_back({first[side][c] != nullptr ? std::string(first[side][c]->name()) : absl::StrCat("cone.input.", c),
                          &classes[c]->shape()});
      }
      std::vector<const HloInstruction*> outs;
      for (size_t k : members) outs.push_back(side == 0 ? outputs[k].second : outputs[k].first);
      texts[side] = ConeModuleText(side == 0 ? "cone_after" : "cone_before", grid, params, ordered, outs,
                                   rename[side]);
      (side == 0 ? region.instructions_after : region.instructions_before) =
          static_cast<int64_t>(ordered.size());
    }
    for (size_t k : members) {
      const auto& [b, a] = outputs[k];
      region.outputs.push_back(absl::StrCat("%", b->name(), a->name() == b->name() ? "" : " / %",
                                            a->name() == b->name() ? "" : a->name(), where));
    }
    region.inputs = static_cast<int64_t>(classes.size());
    for (int side = 0; side < 2; ++side) {
      auto parsed = ParseHloModule(texts[side]);
      if (!parsed.ok()) {
        return absl::FailedPreconditionError(absl::StrCat("the cone of the module ",
                                                          side == 0 ? "after" : "before",
                                                          " does not parse: ", parsed.status().message()));
      }
      (side == 0 ? region.after : region.before) = *std::move(parsed);
    }
    result.instructions_before += region.instructions_before;
    result.instructions_after += region.instructions_after;
    result.inputs += region.inputs;
    result.outputs.insert(result.outputs.end(), region.outputs.begin(), region.outputs.end());
    result.regions.push_back(std::move(region));
  }
  // No assumption may rest on itself (Kahn's algorithm on the graph above).
  std::vector<int64_t> indegree(edges.size(), 0);
  for (const auto& out_edges : edges) {
    for (int64_t to : out_edges) ++indegree[to];
  }
  std::vector<int64_t> ready;
  for (size_t n = 0; n < edges.size(); ++n) {
    if (indegree[n] == 0) ready.push_back(static_cast<int64_t>(n));
  }
  size_t done = 0;
  while (!ready.empty()) {
    const int64_t n = ready.back();
    ready.pop_back();
    ++done;
    for (int64_t to : edges[n]) {
      if (--indegree[to] == 0) ready.push_back(to);
    }
  }
  if (done != edges.size()) {
    return absl::AbortedError(absl::StrCat(
        "the changed regions", where, " depend on each other in a cycle through their cut points"));
  }
  for (ConeRegion& region : result.regions) out->regions.push_back(std::move(region));
  out->instructions_before += result.instructions_before;
  out->instructions_after += result.instructions_after;
  out->inputs += result.inputs;
  out->outputs.insert(out->outputs.end(), result.outputs.begin(), result.outputs.end());
  return absl::OkStatus();
}

// Whether operand j of `c` is the token of a token-threaded collective
// (Neuron NxD's all-gather, reduce-scatter, all-reduce with a trailing rank-0
// token; docs/interpreter.md, "Collectives"): element j of the result is
// that operand, passed through on every device, and no other element
// depends on it.
bool IsPassedThroughToken(const HloInstruction& c, int64_t j) {
  const bool gather = c.opcode() == HloOpcode::kAllGather;
  if (!gather && c.opcode() != HloOpcode::kAllReduce && c.opcode() != HloOpcode::kReduceScatter) return false;
  if (!c.shape().IsTuple() || j < 0 || j >= c.operand_count() || j >= c.shape().tuple_shapes_size()) return false;
  const Shape& in = c.operand(j)->shape();
  if (in.IsToken()) return true;
  const Shape& out = c.shape().tuple_shapes(j);
  if (!in.IsArray() || in.rank() != 0 || !out.IsArray() || out.rank() != 0) return false;
  if (gather) return true;
  if (j != c.operand_count() - 1 || j == 0) return false;
  for (int64_t k = 0; k < j; ++k) {
    if (!c.operand(k)->shape().IsArray() || c.operand(k)->shape().rank() == 0) return false;
  }
  return true;
}

// A get-tuple-element of a passed-through token is the token operand itself
// (nullptr for any other instruction).
const HloInstruction* ForwardedToken(const HloInstruction& gte) {
  if (gte.opcode() != HloOpcode::kGetTupleElement || !IsPassedThroughToken(*gte.operand(0), gte.tuple_index())) {
    return nullptr;
  }
  return gte.operand(0)->operand(gte.tuple_index());
}

// A copy of `m` in which every use of a forwarded token reads the token
// operand itself; nullptr when `m` has none (nothing to change). A chain of
// such collectives otherwise makes each token depend on every data operand
// before it, which joins the cones of a whole model.
absl::StatusOr<std::unique_ptr<HloModule>> WithTokensForwarded(const HloModule& m) {
  bool any = false;
  for (const HloComputation* c : m.computations()) {
    for (const HloInstruction* i : c->instructions()) any = any || ForwardedToken(*i) != nullptr;
  }
  if (!any) return std::unique_ptr<HloModule>();
  auto copy = ParseHloModule(PrintHloModule(m));
  if (!copy.ok()) return copy.status();
  for (HloComputation* c : (*copy)->computations()) {
    for (HloInstruction* i : c->MakeInstructionPostOrder()) {  // operands first: chains collapse
      const HloInstruction* token = ForwardedToken(*i);
      if (token == nullptr || i == c->root_instruction()) continue;
      if (auto st = i->ReplaceAllUsesWith(const_cast<HloInstruction*>(token)); !st.ok()) return st;
    }
  }
  return copy;
}

}  // namespace

absl::StatusOr<ChangedCone> ExtractChangedCone(const HloModule& original_before, const HloModule& original_after,
                                               const DeviceGrid& grid, const std::function<void()>& tick) {
  auto forwarded_before = WithTokensForwarded(original_before);
  auto forwarded_after = WithTokensForwarded(original_after);
  if (!forwarded_before.ok()) return forwarded_before.status();
  if (!forwarded_after.ok()) return forwarded_after.status();
  const HloModule& before = *forwarded_before != nullptr ? **forwarded_before : original_before;
  const HloModule& after = *forwarded_after != nullptr ? **forwarded_after : original_after;
  if (before.entry_computation() == nullptr || after.entry_computation() == nullptr ||
      before.entry_computation()->root_instruction() == nullptr ||
      after.entry_computation()->root_instruction() == nullptr) {
    return absl::FailedPreconditionError("a module has no entry computation or root");
  }
  if (before.entry_computation()->name() != after.entry_computation()->name()) {
    return absl::FailedPreconditionError("the entry computations have different names");
  }
  // Every pair of same-named computations that differ is cut on its own; a
  // computation on one side only is reached through a caller that differs
  // (it names it), whose cone copies it whole.
  absl::flat_hash_map<std::string, const HloComputation*> in_after;
  for (const HloComputation* c : after.computations()) in_after[c->name()] = c;
  ChangedCone result;
  for (const HloComputation* b : before.computations()) {
    auto it = in_after.find(b->name());
    if (it == in_after.end()) continue;
    if (tick) tick();
    if (b->root_instruction() == nullptr || it->second->root_instruction() == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("computation ", b->name(), " has no root"));
    }
    if (!ComputationDifference(*b, *it->second, grid.num_partitions).has_value()) continue;
    absl::Status st = ExtractInComputation(b, it->second, grid, /*coarse=*/false, tick, &result);
    // A cycle of assumptions (possible in principle, or from classes merged
    // coarsely): cut again where no assumption is needed.
    if (absl::IsAborted(st)) st = ExtractInComputation(b, it->second, grid, /*coarse=*/true, tick, &result);
    if (!st.ok()) return absl::FailedPreconditionError(st.message());
  }
  return result;
}

}  // namespace eval
}  // namespace hilo
