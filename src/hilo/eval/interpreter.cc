#include "hilo/eval/interpreter.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "hilo/eval/uninterpreted.h"

namespace hilo {
namespace eval {
namespace {

#define EVAL_RETURN_IF_ERROR(expr) \
  do {                             \
    absl::Status _st = (expr);     \
    if (!_st.ok()) return _st;     \
  } while (0)

std::string InstrRef(const HloInstruction& instr) {
  return absl::StrCat(HloOpcodeString(instr.opcode()), " %", instr.name());
}

absl::Status InstrError(const HloInstruction& instr, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(InstrRef(instr), ": ", what));
}

bool IsCollectiveMatmul(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kCustomCall &&
         instr.custom_call_target() == kCollectiveMatmulTarget;
}

// Instructions the scheduler executes across devices.
bool IsScheduledCollective(const HloInstruction& instr) {
  switch (instr.opcode()) {
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kCollectiveBroadcast:
      return true;
    case HloOpcode::kCustomCall:
      return IsCollectiveMatmul(instr);
    default:
      return false;
  }
}

bool HasUseGlobalDeviceIdsField(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kReduceScatter:
      return true;
    default:
      return false;
  }
}

// Calls visit(leaf) for every array leaf of `shape` (no recursion: tuples
// nest as deep as the input writes them).
template <typename Visit>
void ForEachArrayLeaf(const Shape& shape, Visit visit) {
  std::vector<const Shape*> stack = {&shape};
  while (!stack.empty()) {
    const Shape* s = stack.back();
    stack.pop_back();
    if (s->IsTuple()) {
      for (const Shape& e : s->tuple_shapes()) stack.push_back(&e);
    } else if (s->IsArray()) {
      visit(*s);
    }
  }
}

// Every array leaf of `shape` has at most `limit` elements.
absl::Status CheckArraySizes(const Shape& shape, int64_t limit) {
  absl::Status status;
  ForEachArrayLeaf(shape, [&](const Shape& leaf) {
    auto n = leaf.checked_elements();
    if (status.ok() && (!n.has_value() || *n > limit)) {
      status = absl::ResourceExhaustedError(absl::StrCat(
          "array ", leaf.ToString(false), " has more than ", limit,
          " elements (the interpreter's max_array_elements, --max-array-elements)"));
    }
  });
  return status;
}

// Elements in the array leaves of `shape` (saturating).
int64_t ShapeElements(const Shape& shape) {
  int64_t total = 0;
  ForEachArrayLeaf(shape, [&](const Shape& leaf) {
    auto n = leaf.checked_elements();
    total = n.has_value() ? std::min<int64_t>(total + *n, int64_t{1} << 62) : int64_t{1} << 62;
  });
  return total;
}

// The work of one execution of `instr` on one device (InterpreterOptions::max_work).
int64_t InstructionWork(const HloInstruction& instr) {
  int64_t work = std::max<int64_t>(ShapeElements(instr.shape()), 1);
  int64_t contraction = 1;
  if (instr.opcode() == HloOpcode::kDot && instr.operand_count() >= 1 &&
      instr.operand(0)->shape().IsArray()) {
    const Shape& lhs = instr.operand(0)->shape();
    for (int64_t d : instr.dot_dimension_numbers().lhs_contracting_dimensions) {
      if (d >= 0 && d < lhs.rank()) contraction *= std::max<int64_t>(lhs.dimensions(d), 1);
    }
  } else if (IsCollectiveMatmul(instr) && instr.operand_count() >= 1 &&
             instr.operand(0)->shape().IsArray() && instr.operand(0)->shape().rank() == 2) {
    contraction = std::max<int64_t>(instr.operand(0)->shape().dimensions(1), 1);
  } else {
    contraction = WorkPerOutputElement(instr);  // convolution, windows, sort (ops.h)
  }
  if (contraction > 1 && work > (int64_t{1} << 62) / contraction) return int64_t{1} << 62;
  return work * contraction;
}

std::string Bytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) return absl::StrFormat("%.1f GiB", bytes / double(int64_t{1} << 30));
  return absl::StrFormat("%.1f MiB", bytes / double(int64_t{1} << 20));
}

// --- program: per-computation evaluation order -----------------------------

struct CompInfo {
  const HloComputation* computation = nullptr;
  std::vector<const HloInstruction*> order;  // reachable from the root, operands first
  std::vector<std::vector<int32_t>> operand_positions;
  std::vector<std::vector<int32_t>> release_after;  // values dead after position p
  int32_t root = -1;
};

class Program {
 public:
  // Counters and records shared by the devices of one run (devices may run
  // on several threads: the counters are atomic, the rest is under mu).
  std::atomic<int64_t> instructions_executed{0};
  std::atomic<int64_t> work{0};
  std::mutex mu;
  std::map<std::string, absl::flat_hash_set<const HloInstruction*>> uninterpreted;  // under mu
  std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();  // under mu

  absl::StatusOr<const CompInfo*> Get(const HloComputation* computation) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = infos_.find(computation);
    if (it != infos_.end()) return it->second.get();
    auto info = std::make_unique<CompInfo>();
    info->computation = computation;
    const HloInstruction* root = computation->root_instruction();
    if (root == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("computation ", computation->name(), " has no root"));
    }
    absl::flat_hash_set<const HloInstruction*> reachable;
    std::vector<const HloInstruction*> stack = {root};
    reachable.insert(root);
    while (!stack.empty()) {
      const HloInstruction* i = stack.back();
      stack.pop_back();
      for (const HloInstruction* op : i->operands()) {
        if (reachable.insert(op).second) stack.push_back(op);
      }
    }
    absl::flat_hash_map<const HloInstruction*, int32_t> position;
    for (const HloInstruction* i : computation->MakeInstructionPostOrder()) {
      if (!reachable.contains(i)) continue;
      position[i] = static_cast<int32_t>(info->order.size());
      info->order.push_back(i);
    }
    const int32_t n = static_cast<int32_t>(info->order.size());
    info->operand_positions.resize(n);
    info->release_after.resize(n);
    std::vector<int32_t> last_use(n, -1);
    for (int32_t p = 0; p < n; ++p) {
      for (const HloInstruction* op : info->order[p]->operands()) {
        auto pos = position.find(op);
        if (pos == position.end() || pos->second >= p) {
          return absl::InvalidArgumentError(absl::StrCat(
              "computation ", computation->name(), ": operand %", op->name(), " of %",
              info->order[p]->name(), " is not evaluated before it (cycle or foreign operand)"));
        }
        info->operand_positions[p].push_back(pos->second);
        last_use[pos->second] = p;
      }
    }
    info->root = position[root];
    for (int32_t q = 0; q < n; ++q) {
      if (q != info->root && last_use[q] >= 0) info->release_after[last_use[q]].push_back(q);
    }
    const CompInfo* out = info.get();
    infos_[computation] = std::move(info);
    return out;
  }

 private:
  absl::flat_hash_map<const HloComputation*, std::unique_ptr<CompInfo>> infos_;
};

// --- one device -------------------------------------------------------------

class DeviceRun {
 public:
  DeviceRun(Program* program, int64_t device, DeviceIds ids, const InterpreterOptions* options,
            bool allow_collectives)
      : program_(program),
        device_(device),
        ids_(ids),
        options_(options),
        allow_collectives_(allow_collectives) {}

  absl::Status Start(const HloComputation* computation, std::vector<Value> args) {
    return PushFrame(computation, std::move(args), nullptr);
  }

  // Runs until the device finishes or waits at a collective.
  absl::Status Run();

  bool done() const { return done_; }
  const HloInstruction* blocked() const { return blocked_; }
  const Value& result() const { return result_; }
  int64_t device() const { return device_; }

  // Operand values of the collective this device waits at.
  std::vector<const Value*> BlockedOperands() const {
    const Frame& f = frames_.back();
    std::vector<const Value*> ops;
    for (int32_t q : f.info->operand_positions[f.pc]) ops.push_back(&f.values[q]);
    return ops;
  }
  // Completes the collective with this device's result and continues later.
  void Resume(Value result) {
    blocked_ = nullptr;
    Advance(&frames_.back(), std::move(result));
  }

 private:
  enum class Wait : uint8_t { kNone, kCall, kWhileCond, kWhileBody, kAsync };
  struct Frame {
    const CompInfo* info = nullptr;
    std::vector<Value> values;
    std::vector<Value> params;
    int32_t pc = 0;
    Wait wait = Wait::kNone;
    Value loop_state;
    int64_t iterations = 0;
  };

  absl::Status PushFrame(const HloComputation* computation, std::vector<Value> args,
                         const HloInstruction* caller) {
    if (computation == nullptr) {
      return InstrError(*caller, "missing called computation");
    }
    if (frames_.size() > 10000) {
      return absl::InvalidArgumentError(absl::StrCat(
          "computation nesting deeper than 10000 frames at ", computation->name()));
    }
    auto info = program_->Get(computation);
    if (!info.ok()) return info.status();
    if (static_cast<int64_t>(args.size()) != computation->num_parameters()) {
      return absl::InvalidArgumentError(
          absl::StrCat("computation ", computation->name(), " takes ", computation->num_parameters(),
                       " parameters, called with ", args.size(),
                       caller ? absl::StrCat(" by ", InstrRef(*caller)) : std::string()));
    }
    Frame f;
    f.info = *info;
    f.values.resize((*info)->order.size());
    f.params = std::move(args);
    frames_.push_back(std::move(f));
    return absl::OkStatus();
  }

  void Advance(Frame* f, Value v) {
    f->values[f->pc] = std::move(v);
    for (int32_t q : f->info->release_after[f->pc]) f->values[q] = Value();
    f->wait = Wait::kNone;
    ++f->pc;
  }

  absl::Status Step(size_t frame_index);
  absl::Status Return();
  // Counts the instruction's work and checks the budgets (time, work, memory).
  absl::Status Account(const HloInstruction& instr);

  absl::StatusOr<Value> ApplyComputation(const HloComputation* computation, std::vector<Value> args) {
    DeviceRun sub(program_, device_, ids_, options_, /*allow_collectives=*/false);
    EVAL_RETURN_IF_ERROR(sub.Start(computation, std::move(args)));
    EVAL_RETURN_IF_ERROR(sub.Run());
    return sub.result();
  }

  Program* program_;
  int64_t device_;
  DeviceIds ids_;
  const InterpreterOptions* options_;
  bool allow_collectives_;
  std::vector<Frame> frames_;
  const HloInstruction* blocked_ = nullptr;
  bool done_ = false;
  Value result_;
};

absl::Status DeviceRun::Run() {
  while (!frames_.empty() && blocked_ == nullptr) {
    const size_t index = frames_.size() - 1;
    if (frames_[index].pc == static_cast<int32_t>(frames_[index].info->order.size())) {
      EVAL_RETURN_IF_ERROR(Return());
    } else {
      EVAL_RETURN_IF_ERROR(Step(index));
    }
  }
  return absl::OkStatus();
}

absl::Status DeviceRun::Return() {
  Value result = std::move(frames_.back().values[frames_.back().info->root]);
  frames_.pop_back();
  if (frames_.empty()) {
    result_ = std::move(result);
    done_ = true;
    return absl::OkStatus();
  }
  Frame& p = frames_.back();
  const HloInstruction& instr = *p.info->order[p.pc];
  switch (p.wait) {
    case Wait::kCall:
      Advance(&p, std::move(result));
      return absl::OkStatus();
    case Wait::kWhileCond: {
      if (!result.is_array() || result.array().size() != 1 ||
          result.array().type() != PrimitiveType::PRED) {
        return InstrError(instr, "condition did not return pred[]");
      }
      if (result.array().i()[0] != 0) {
        if (++p.iterations > options_->max_while_iterations) {
          return InstrError(instr, absl::StrCat("more than ", options_->max_while_iterations,
                                                " iterations (max_while_iterations)"));
        }
        p.wait = Wait::kWhileBody;
        Value state = p.loop_state;
        return PushFrame(instr.while_body(), {std::move(state)}, &instr);
      }
      Value state = std::move(p.loop_state);
      p.loop_state = Value();
      Advance(&p, std::move(state));
      return absl::OkStatus();
    }
    case Wait::kWhileBody: {
      p.loop_state = std::move(result);
      p.wait = Wait::kWhileCond;
      Value state = p.loop_state;
      return PushFrame(instr.while_condition(), {std::move(state)}, &instr);
    }
    case Wait::kAsync: {
      // async-start's value: ((operands...), result, context...); the
      // context elements are zeros.
      auto value = ZeroValue(instr.shape());
      if (!value.ok() || !instr.shape().IsTuple() || instr.shape().tuple_shapes_size() < 2) {
        return InstrError(instr, "async-start shape must be ((operands), result, ...)");
      }
      std::vector<Value> elements = value->elements();
      std::vector<Value> operands;
      for (int32_t q : p.info->operand_positions[p.pc]) operands.push_back(p.values[q]);
      elements[0] = Value::Tuple(std::move(operands));
      elements[1] = std::move(result);
      Advance(&p, Value::Tuple(std::move(elements)));
      return absl::OkStatus();
    }
    case Wait::kNone:
      break;
  }
  return absl::InternalError("frame returned to a caller that was not waiting");
}

absl::Status DeviceRun::Account(const HloInstruction& instr) {
  const int64_t executed = program_->instructions_executed.fetch_add(1, std::memory_order_relaxed) + 1;
  const int64_t work = InstructionWork(instr);
  const int64_t total_work = program_->work.fetch_add(work, std::memory_order_relaxed) + work;
  if (total_work > options_->max_work) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the run needs more work than the budget of ", options_->max_work,
        " element operations (max_work, --max-work) at ", InstrRef(instr)));
  }
  // Checked before the instruction runs, with its result counted: the limit
  // bounds what is held, not only what was held after the last instruction.
  // Results that only pass arrays on (parameters, tuples, get-tuple-element,
  // bitcast, control flow) share them and add nothing.
  const HloOpcode op = instr.opcode();
  const bool allocates = instr.shape().IsArray() && op != HloOpcode::kParameter &&
                         op != HloOpcode::kGetTupleElement && op != HloOpcode::kBitcast &&
                         op != HloOpcode::kWhile && op != HloOpcode::kCall && op != HloOpcode::kConditional;
  const int64_t live_bytes = (LiveArrayElements() + (allocates ? ShapeElements(instr.shape()) : 0)) * 8;
  if (live_bytes > options_->max_memory_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the values held would reach ", Bytes(live_bytes), " with this instruction's result, more than the limit of ",
        Bytes(options_->max_memory_bytes), " (max_memory_bytes, --max-memory) at ", InstrRef(instr)));
  }
  // The clock is read every 64 instructions, and before any large one (the
  // budget is then overshot by at most one large instruction).
  if ((executed & 63) == 0 || work > (int64_t{1} << 20)) {
    const auto now = std::chrono::steady_clock::now();
    if (options_->deadline.has_value() && now > *options_->deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the time budget ran out after ", executed, " instructions at ", InstrRef(instr)));
    }
    if (options_->progress) {
      std::lock_guard<std::mutex> lock(program_->mu);
      if (now - program_->last_progress > std::chrono::milliseconds(50)) {
        program_->last_progress = now;
        options_->progress(executed, total_work);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status DeviceRun::Step(size_t frame_index) {
  Frame& f = frames_[frame_index];
  const HloInstruction& instr = *f.info->order[f.pc];
  if (auto st = CheckArraySizes(instr.shape(), options_->max_array_elements); !st.ok()) {
    return InstrError(instr, st.message());
  }
  EVAL_RETURN_IF_ERROR(Account(instr));
  std::vector<const Value*> ops;
  ops.reserve(instr.operand_count());
  for (int32_t q : f.info->operand_positions[f.pc]) ops.push_back(&f.values[q]);
  const HloOpcode op = instr.opcode();
  switch (op) {
    case HloOpcode::kParameter: {
      const int64_t n = instr.parameter_number();
      if (n < 0 || n >= static_cast<int64_t>(f.params.size())) {
        return InstrError(instr, "parameter number out of range");
      }
      Advance(&f, f.params[n]);
      return absl::OkStatus();
    }
    case HloOpcode::kWhile: {
      if (ops.size() != 1) return InstrError(instr, "while takes one operand");
      f.loop_state = *ops[0];
      f.iterations = 0;
      f.wait = Wait::kWhileCond;
      Value state = f.loop_state;
      return PushFrame(instr.while_condition(), {std::move(state)}, &instr);
    }
    case HloOpcode::kCall:
    case HloOpcode::kFusion: {
      const HloComputation* callee =
          op == HloOpcode::kCall ? instr.to_apply() : instr.called_computation("calls");
      if (callee == nullptr && instr.called_computations().size() == 1) {
        callee = instr.called_computations()[0];
      }
      std::vector<Value> args;
      for (const Value* v : ops) args.push_back(*v);
      f.wait = Wait::kCall;
      return PushFrame(callee, std::move(args), &instr);
    }
    case HloOpcode::kConditional: {
      if (ops.empty() || !ops[0]->is_array() || ops[0]->array().size() != 1) {
        return InstrError(instr, "branch selector is not a scalar");
      }
      std::vector<HloComputation*> branches;
      auto listed = instr.called_computations("branch_computations");
      if (!listed.empty()) {
        branches.assign(listed.begin(), listed.end());
      } else {
        branches.push_back(instr.called_computation("true_computation"));
        branches.push_back(instr.called_computation("false_computation"));
      }
      const Array& sel = ops[0]->array();
      int64_t branch;
      if (sel.type() == PrimitiveType::PRED) {
        if (branches.size() != 2) return InstrError(instr, "pred selector needs two branches");
        branch = sel.i()[0] != 0 ? 0 : 1;
      } else {
        branch = sel.GetInt(0);
        // XLA: an out-of-range index runs the last branch.
        if (branch < 0 || branch >= static_cast<int64_t>(branches.size())) {
          branch = static_cast<int64_t>(branches.size()) - 1;
        }
      }
      if (static_cast<int64_t>(ops.size()) != static_cast<int64_t>(branches.size()) + 1) {
        return InstrError(instr, "needs one operand per branch");
      }
      f.wait = Wait::kCall;
      Value arg = *ops[1 + branch];
      return PushFrame(branches[branch], {std::move(arg)}, &instr);
    }
    case HloOpcode::kAsyncStart: {
      std::vector<Value> args;
      for (const Value* v : ops) args.push_back(*v);
      const HloComputation* callee = instr.called_computation("calls");
      if (callee == nullptr && instr.called_computations().size() == 1) {
        callee = instr.called_computations()[0];
      }
      f.wait = Wait::kAsync;
      return PushFrame(callee, std::move(args), &instr);
    }
    case HloOpcode::kAsyncUpdate:
    case HloOpcode::kAllReduceDone:
      if (ops.size() != 1) return InstrError(instr, "takes one operand");
      Advance(&f, *ops[0]);
      return absl::OkStatus();
    case HloOpcode::kAsyncDone:
    case HloOpcode::kAllGatherDone:
    case HloOpcode::kCollectivePermuteDone: {
      if (ops.size() != 1 || !ops[0]->is_tuple() || ops[0]->elements().size() < 2) {
        return InstrError(instr, "operand is not the tuple of a -start instruction");
      }
      Value v = ops[0]->elements()[1];
      Advance(&f, std::move(v));
      return absl::OkStatus();
    }
    default:
      break;
  }
  if (IsScheduledCollective(instr)) {
    if (!allow_collectives_) {
      return InstrError(instr, "collective inside a computation applied per element (to_apply)");
    }
    blocked_ = &instr;
    return absl::OkStatus();
  }
  if (IsIdentityCustomCall(instr) && ops[0]->CheckShape(instr.shape()).ok()) {
    Advance(&f, *ops[0]);
    return absl::OkStatus();
  }
  if (IsUninterpreted(instr)) {
    {
      std::lock_guard<std::mutex> lock(program_->mu);
      program_->uninterpreted[UninterpretedKind(instr)].insert(&instr);
    }
    auto v = UninterpretedValue(instr, ops);
    if (!v.ok()) return InstrError(instr, v.status().message());
    Advance(&f, *std::move(v));
    return absl::OkStatus();
  }
  ApplyFn apply = [this](const HloComputation* c, std::vector<Value> args) {
    return ApplyComputation(c, std::move(args));
  };
  auto v = EvaluateLocalInstruction(instr, ops, ids_, apply);
  if (!v.ok()) return v.status();
  if (instr.shape().IsArray() || instr.shape().IsTuple()) {
    if (auto st = v->CheckShape(instr.shape()); !st.ok()) {
      return InstrError(instr, st.message());
    }
  }
  Advance(&f, *std::move(v));
  return absl::OkStatus();
}

// --- collectives --------------------------------------------------------------

// One collective execution: the members of one group, in rank order, with
// their operand values; produces each member's result.
struct GroupExecution {
  const HloInstruction* instr;
  std::vector<int64_t> members;
  std::vector<std::vector<const Value*>> operands;  // per member
};

absl::StatusOr<Array> ArrayOperand(const GroupExecution& g, size_t member, size_t index) {
  if (index >= g.operands[member].size() || !g.operands[member][index]->is_array()) {
    return InstrError(*g.instr, absl::StrCat("operand ", index, " is not an array"));
  }
  return g.operands[member][index]->array();
}

// Shapes of the results, one per operand (the instruction's shape, or its
// tuple elements).
std::vector<const Shape*> ResultShapes(const Shape& shape, size_t operand_count) {
  std::vector<const Shape*> out;
  if (operand_count > 1 || shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes()) out.push_back(&s);
  } else {
    out.push_back(&shape);
  }
  return out;
}

Value PackResults(std::vector<Value> results, bool tuple) {
  if (tuple) return Value::Tuple(std::move(results));
  return std::move(results[0]);
}

absl::Status CheckResult(const HloInstruction& instr, const Value& v, const Shape& shape) {
  if (auto st = v.CheckShape(shape); !st.ok()) return InstrError(instr, st.message());
  return absl::OkStatus();
}

// all-gather and all-gather-start.
absl::StatusOr<std::vector<Value>> ExecuteAllGather(const GroupExecution& g) {
  const HloInstruction& instr = *g.instr;
  const bool is_start = instr.opcode() == HloOpcode::kAllGatherStart;
  const Shape* result_shape = &instr.shape();
  if (is_start) {
    if (!instr.shape().IsTuple() || instr.shape().tuple_shapes_size() != 2) {
      return InstrError(instr, "all-gather-start shape must be (operands, results)");
    }
    result_shape = &instr.shape().tuple_shapes(1);
  }
  const size_t n_ops = g.operands[0].size();
  std::vector<const Shape*> shapes = ResultShapes(*result_shape, n_ops);
  if (shapes.size() != n_ops) return InstrError(instr, "result tuple size differs from operand count");
  const int64_t dim = instr.collective_dimension();
  const size_t n = g.members.size();
  std::vector<std::vector<Value>> per_member(n);
  for (size_t k = 0; k < n_ops; ++k) {
    const Value& own0 = *g.operands[0][k];
    if (!own0.is_array()) {
      // A token operand (token-threaded form) passes through.
      for (size_t m = 0; m < n; ++m) per_member[m].push_back(*g.operands[m][k]);
      continue;
    }
    const Array& a0 = own0.array();
    const std::vector<int64_t> want(shapes[k]->dimensions().begin(), shapes[k]->dimensions().end());
    if (a0.rank() == 0 && want.empty()) {
      // The rank-0 "token" of the token-threaded all-gather (Neuron NxD):
      // nothing to gather; each device keeps its own value.
      for (size_t m = 0; m < n; ++m) per_member[m].push_back(*g.operands[m][k]);
      continue;
    }
    std::vector<const Array*> parts;
    for (size_t m = 0; m < n; ++m) {
      if (!g.operands[m][k]->is_array()) return InstrError(instr, "operand is not an array");
      parts.push_back(&g.operands[m][k]->array());
    }
    auto gathered = ConcatenateArrays(parts, dim);
    if (!gathered.ok()) return InstrError(instr, gathered.status().message());
    Value v = Value::FromArray(*std::move(gathered));
    EVAL_RETURN_IF_ERROR(CheckResult(instr, v, *shapes[k]));
    for (size_t m = 0; m < n; ++m) per_member[m].push_back(v);
  }
  std::vector<Value> out;
  const bool tuple = n_ops > 1 || result_shape->IsTuple();
  for (size_t m = 0; m < n; ++m) {
    Value r = PackResults(std::move(per_member[m]), tuple);
    if (is_start) {
      std::vector<Value> own;
      for (const Value* v : g.operands[m]) own.push_back(*v);
      Value operands = own.size() == 1 && !instr.shape().tuple_shapes(0).IsTuple()
                           ? own[0]
                           : Value::Tuple(std::move(own));
      r = Value::Tuple({std::move(operands), std::move(r)});
    }
    out.push_back(std::move(r));
  }
  return out;
}

// The token of Neuron's token-threaded collectives (NxD's overlapped
// all-gather / reduce-scatter / all-reduce): a token, or a trailing rank-0
// operand whose result is rank 0 after array operands of higher rank. It is
// ordering only: it passes through, each device keeping its own value.
bool IsThreadedToken(const GroupExecution& g, size_t k, const Shape& result) {
  const Value& own = *g.operands[0][k];
  if (own.is_token()) return true;
  const size_t n_ops = g.operands[0].size();
  if (n_ops < 2 || k != n_ops - 1 || !own.is_array() || own.array().rank() != 0) return false;
  if (!result.IsArray() || result.rank() != 0) return false;
  for (size_t j = 0; j + 1 < n_ops; ++j) {
    if (!g.operands[0][j]->is_array() || g.operands[0][j]->array().rank() == 0) return false;
  }
  return true;
}

// all-reduce (and -start) and reduce-scatter.
absl::StatusOr<std::vector<Value>> ExecuteAllReduce(const GroupExecution& g, const ApplyFn& apply,
                                                    bool scatter) {
  const HloInstruction& instr = *g.instr;
  const size_t n_ops = g.operands[0].size();
  const size_t n = g.members.size();
  std::vector<const Shape*> shapes = ResultShapes(instr.shape(), n_ops);
  if (shapes.size() != n_ops) return InstrError(instr, "result tuple size differs from operand count");
  auto reducer = Reducer::Create(instr.to_apply(), 1, apply);
  if (!reducer.ok()) return InstrError(instr, reducer.status().message());
  std::vector<std::vector<Value>> per_member(n);
  for (size_t k = 0; k < n_ops; ++k) {
    if (IsThreadedToken(g, k, *shapes[k])) {
      for (size_t m = 0; m < n; ++m) per_member[m].push_back(*g.operands[m][k]);
      continue;
    }
    auto first = ArrayOperand(g, 0, k);
    if (!first.ok()) return first.status();
    Array acc = *first;
    Array* accp = &acc;
    for (size_t m = 1; m < n; ++m) {
      if (!g.operands[m][k]->is_array() || g.operands[m][k]->array().dims() != acc.dims()) {
        return InstrError(instr, "operands differ in shape across devices");
      }
      const Array* x = &g.operands[m][k]->array();
      for (int64_t e = 0; e < acc.size(); ++e) {
        if (auto st = reducer->Combine({&accp, 1}, e, {&x, 1}, e); !st.ok()) {
          return InstrError(instr, st.message());
        }
      }
    }
    if (!scatter) {
      Value v = Value::FromArray(std::move(acc));
      EVAL_RETURN_IF_ERROR(CheckResult(instr, v, *shapes[k]));
      for (size_t m = 0; m < n; ++m) per_member[m].push_back(v);
      continue;
    }
    for (size_t m = 0; m < n; ++m) {
      auto block = SplitBlock(acc, instr.collective_dimension(), static_cast<int64_t>(n),
                              static_cast<int64_t>(m));
      if (!block.ok()) return InstrError(instr, block.status().message());
      Value v = Value::FromArray(*std::move(block));
      EVAL_RETURN_IF_ERROR(CheckResult(instr, v, *shapes[k]));
      per_member[m].push_back(std::move(v));
    }
  }
  std::vector<Value> out;
  const bool tuple = n_ops > 1 || instr.shape().IsTuple();
  for (size_t m = 0; m < n; ++m) out.push_back(PackResults(std::move(per_member[m]), tuple));
  return out;
}

absl::StatusOr<std::vector<Value>> ExecuteAllToAll(const GroupExecution& g) {
  const HloInstruction& instr = *g.instr;
  const size_t n = g.members.size();
  std::vector<int64_t> dims = InstructionDimensions(instr);
  std::vector<Value> out;
  if (!dims.empty()) {
    if (g.operands[0].size() != 1) return InstrError(instr, "array all-to-all takes one operand");
    const int64_t split = dims[0];
    for (size_t r = 0; r < n; ++r) {
      std::vector<Array> blocks;
      for (size_t j = 0; j < n; ++j) {
        auto a = ArrayOperand(g, j, 0);
        if (!a.ok()) return a.status();
        auto b = SplitBlock(*a, split, static_cast<int64_t>(n), static_cast<int64_t>(r));
        if (!b.ok()) return InstrError(instr, b.status().message());
        blocks.push_back(*std::move(b));
      }
      std::vector<const Array*> parts;
      for (const Array& b : blocks) parts.push_back(&b);
      auto c = ConcatenateArrays(parts, split);
      if (!c.ok()) return InstrError(instr, c.status().message());
      Value v = Value::FromArray(*std::move(c));
      EVAL_RETURN_IF_ERROR(CheckResult(instr, v, instr.shape()));
      out.push_back(std::move(v));
    }
    return out;
  }
  // Tuple form: member r's result element j is member j's operand r.
  for (size_t r = 0; r < n; ++r) {
    if (g.operands[r].size() != n) {
      return InstrError(instr, absl::StrCat("tuple all-to-all needs one operand per group member (",
                                            n, "), has ", g.operands[r].size()));
    }
  }
  for (size_t r = 0; r < n; ++r) {
    std::vector<Value> elements;
    for (size_t j = 0; j < n; ++j) elements.push_back(*g.operands[j][r]);
    Value v = Value::Tuple(std::move(elements));
    EVAL_RETURN_IF_ERROR(CheckResult(instr, v, instr.shape()));
    out.push_back(std::move(v));
  }
  return out;
}

absl::StatusOr<std::vector<Value>> ExecuteCollectiveBroadcast(const GroupExecution& g) {
  std::vector<Value> out;
  if (g.operands[0].size() != 1) return InstrError(*g.instr, "takes one operand");
  Value root = *g.operands[0][0];
  EVAL_RETURN_IF_ERROR(CheckResult(*g.instr, root, g.instr->shape()));
  for (size_t m = 0; m < g.members.size(); ++m) out.push_back(root);
  return out;
}

// collective-permute(-start): `pairs` are global (source, target) ids.
absl::StatusOr<std::vector<Value>> ExecuteCollectivePermute(
    const GroupExecution& g, const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  const HloInstruction& instr = *g.instr;
  const bool is_start = instr.opcode() == HloOpcode::kCollectivePermuteStart;
  if (g.operands[0].size() != 1) {
    return InstrError(instr, "only the single-operand collective-permute is supported");
  }
  const Shape* result_shape = &instr.shape();
  if (is_start) {
    if (!instr.shape().IsTuple() || instr.shape().tuple_shapes_size() < 2) {
      return InstrError(instr, "collective-permute-start shape must be (operand, result, ...)");
    }
    result_shape = &instr.shape().tuple_shapes(1);
  }
  absl::flat_hash_map<int64_t, size_t> rank;
  for (size_t m = 0; m < g.members.size(); ++m) rank[g.members[m]] = m;
  auto zero = ZeroValue(*result_shape);
  if (!zero.ok()) return InstrError(instr, zero.status().message());
  std::vector<Value> results(g.members.size(), *zero);
  for (const auto& [src, dst] : pairs) {
    auto s = rank.find(src), d = rank.find(dst);
    if (s == rank.end() || d == rank.end()) continue;  // another group's pair
    results[d->second] = *g.operands[s->second][0];
  }
  std::vector<Value> out;
  for (size_t m = 0; m < g.members.size(); ++m) {
    EVAL_RETURN_IF_ERROR(CheckResult(instr, results[m], *result_shape));
    if (is_start) {
      auto full = ZeroValue(instr.shape());
      if (!full.ok()) return InstrError(instr, full.status().message());
      std::vector<Value> elements = full->elements();
      elements[0] = *g.operands[m][0];
      elements[1] = std::move(results[m]);
      out.push_back(Value::Tuple(std::move(elements)));
    } else {
      out.push_back(std::move(results[m]));
    }
  }
  return out;
}

// The AwsNeuronCollectiveMatmul kernel (docs/interpreter.md): operand 0
// [M, K] of every member gathered by rows in rank order, contracted with this
// member's operand 1 on its dimension rhs_contracting_dim, reshaped to the
// result shape.
absl::StatusOr<std::vector<Value>> ExecuteCollectiveMatmul(const GroupExecution& g,
                                                           const CollectiveMatmulConfig& config) {
  const HloInstruction& instr = *g.instr;
  EVAL_RETURN_IF_ERROR(CheckCollectiveMatmulShapes(instr));
  std::vector<const Array*> rows;
  for (size_t m = 0; m < g.members.size(); ++m) {
    if (!g.operands[m][0]->is_array() || g.operands[m][0]->array().rank() != 2) {
      return InstrError(instr, "operand 0 must be a rank-2 [M, K] array");
    }
    rows.push_back(&g.operands[m][0]->array());
  }
  auto gathered = ConcatenateArrays(rows, 0);
  if (!gathered.ok()) return InstrError(instr, gathered.status().message());
  std::vector<int64_t> result_dims(instr.shape().dimensions().begin(), instr.shape().dimensions().end());
  std::vector<Value> out;
  for (size_t m = 0; m < g.members.size(); ++m) {
    if (!g.operands[m][1]->is_array()) return InstrError(instr, "operand 1 is not an array");
    const Array& rhs = g.operands[m][1]->array();
    // [K, N] (R=0) or [N, K] (R=1). A higher-rank operand 1 is taken as
    // [K, N] with N its remaining dimensions flattened when R=0 (a row-major
    // reshape, no data movement); R=1 needs a rank-2 operand.
    const bool fits = rhs.rank() >= 2 && (config.rhs_contracting_dim == 0 ||
                                          (config.rhs_contracting_dim == 1 && rhs.rank() == 2));
    if (!fits) {
      return InstrError(instr, absl::StrCat("kernel contract: operand 1 ", rhs.ShapeString(),
                                            " with rhs_contracting_dim=", config.rhs_contracting_dim,
                                            " is neither [K, N] (R=0) nor [N, K] (R=1)"));
    }
    const int64_t lhs_c[] = {1};
    const int64_t rhs_c[] = {config.rhs_contracting_dim};
    auto product = DotGeneral(*gathered, rhs, {}, {}, lhs_c, rhs_c, instr.shape().element_type());
    if (!product.ok()) return InstrError(instr, product.status().message());
    auto reshaped = ReshapeArray(*product, result_dims);
    if (!reshaped.ok()) {
      return InstrError(instr, absl::StrCat("kernel output ", product->ShapeString(),
                                            " does not reshape to the result shape ",
                                            instr.shape().ToString(false)));
    }
    out.push_back(Value::FromArray(*std::move(reshaped)));
  }
  return out;
}

// Synchronisation groups of one collective on the grid: the devices that
// must all be waiting at it before it runs, in rank order.
struct CollectivePlan {
  std::vector<std::vector<int64_t>> groups;
  std::vector<int64_t> group_of;  // per device, -1 when in none
  std::vector<std::pair<int64_t, int64_t>> permute_pairs;  // global ids
  CollectiveMatmulConfig matmul;
};

absl::StatusOr<CollectivePlan> PlanCollective(const HloInstruction& instr, const DeviceGrid& grid) {
  CollectivePlan plan;
  const int64_t D = grid.devices(), R = grid.replica_count, P = grid.num_partitions;
  if (IsCollectiveMatmul(instr)) {
    if (!instr.backend_config().has_value()) return InstrError(instr, "missing backend_config");
    auto config = ParseCollectiveMatmulConfig(*instr.backend_config());
    if (!config.ok()) return InstrError(instr, config.status().message());
    plan.matmul = *config;
    if (config->tp_degree <= 0 || config->num_groups <= 0 ||
        config->tp_degree * config->num_groups != D) {
      return InstrError(instr, absl::StrCat("tp_degree=", config->tp_degree, " x num_groups=",
                                            config->num_groups, " does not cover the ", D,
                                            " devices"));
    }
    for (int64_t i = 0; i < config->num_groups; ++i) {
      std::vector<int64_t> group;
      for (int64_t r = 0; r < config->tp_degree; ++r) group.push_back(i * config->tp_degree + r);
      plan.groups.push_back(std::move(group));
    }
  } else if (instr.opcode() == HloOpcode::kCollectivePermute ||
             instr.opcode() == HloOpcode::kCollectivePermuteStart) {
    auto mode = CollectiveGroupMode(instr);
    if (!mode.ok()) return mode.status();
    if (!instr.source_target_pairs().has_value()) return InstrError(instr, "missing source_target_pairs");
    const bool cross_partition = *mode == GroupMode::kCrossPartition;
    const int64_t slices = cross_partition ? R : P;  // one independent permutation per slice
    const int64_t width = cross_partition ? P : R;
    auto global = [&](int64_t slice, int64_t id) {
      return cross_partition ? slice * P + id : id * P + slice;
    };
    absl::flat_hash_set<int64_t> sources, targets;
    for (const auto& [s, t] : *instr.source_target_pairs()) {
      if (s < 0 || s >= width || t < 0 || t >= width) {
        return InstrError(instr, absl::StrCat("source_target_pairs {", s, ",", t, "} out of range for ",
                                              width, cross_partition ? " partitions" : " replicas"));
      }
      if (!sources.insert(s).second || !targets.insert(t).second) {
        return InstrError(instr, absl::StrCat("id ", !sources.contains(s) ? t : s,
                                              " appears twice as a source or target"));
      }
    }
    for (int64_t slice = 0; slice < slices; ++slice) {
      std::vector<int64_t> group;
      for (int64_t id = 0; id < width; ++id) group.push_back(global(slice, id));
      plan.groups.push_back(std::move(group));
      for (const auto& [s, t] : *instr.source_target_pairs()) {
        plan.permute_pairs.push_back({global(slice, s), global(slice, t)});
      }
    }
  } else {
    auto groups = CollectiveDeviceGroups(instr, grid);
    if (!groups.ok()) return groups.status();
    plan.groups = *std::move(groups);
  }
  plan.group_of.assign(D, -1);
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    for (int64_t d : plan.groups[gi]) {
      if (d < 0 || d >= D) return InstrError(instr, absl::StrCat("device ", d, " out of range"));
      if (plan.group_of[d] != -1) {
        return InstrError(instr, absl::StrCat("device ", d, " appears in more than one group"));
      }
      plan.group_of[d] = static_cast<int64_t>(gi);
    }
  }
  return plan;
}

std::string GroupString(const std::vector<int64_t>& g) {
  return absl::StrCat("{", absl::StrJoin(g, ","), "}");
}

}  // namespace

absl::string_view GroupModeName(GroupMode mode) {
  switch (mode) {
    case GroupMode::kCrossReplica: return "cross-replica";
    case GroupMode::kCrossPartition: return "cross-partition";
    case GroupMode::kCrossReplicaAndPartition: return "cross-replica-and-partition";
    case GroupMode::kFlattenedId: return "flattened-id";
  }
  return "?";
}

absl::StatusOr<GroupMode> CollectiveGroupMode(const HloInstruction& instr) {
  std::optional<bool> use_global;
  if (HasUseGlobalDeviceIdsField(instr.opcode())) {
    use_global = instr.use_global_device_ids().value_or(false);
  }
  if (!instr.channel_id().has_value()) {
    if (use_global.value_or(false)) {
      return InstrError(instr, "use_global_device_ids=true requires a channel_id");
    }
    return GroupMode::kCrossReplica;
  }
  if (!use_global.has_value()) return GroupMode::kCrossPartition;
  return *use_global ? GroupMode::kFlattenedId : GroupMode::kCrossReplicaAndPartition;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> CollectiveDeviceGroups(
    const HloInstruction& instr, const DeviceGrid& grid) {
  auto mode = CollectiveGroupMode(instr);
  if (!mode.ok()) return mode.status();
  const int64_t R = grid.replica_count, P = grid.num_partitions;
  std::vector<std::vector<int64_t>> ids;
  if (instr.replica_groups().has_value() && !instr.replica_groups()->empty()) {
    auto expanded = instr.replica_groups()->Expand();
    if (!expanded.ok()) return InstrError(instr, expanded.status().message());
    ids = *std::move(expanded);
  }
  const int64_t width = *mode == GroupMode::kCrossPartition ? P
                        : *mode == GroupMode::kFlattenedId  ? R * P
                                                            : R;
  if (ids.empty()) {
    std::vector<int64_t> all;
    for (int64_t i = 0; i < width; ++i) all.push_back(i);
    ids.push_back(std::move(all));
  }
  for (const auto& group : ids) {
    for (int64_t id : group) {
      if (id < 0 || id >= width) {
        return InstrError(instr, absl::StrCat("replica group id ", id, " out of range: ",
                                              GroupModeName(*mode), " mode has ", width, " ids on ",
                                              R, " replicas x ", P, " partitions"));
      }
    }
  }
  std::vector<std::vector<int64_t>> out;
  switch (*mode) {
    case GroupMode::kCrossReplica:
      for (const auto& group : ids) {
        for (int64_t p = 0; p < P; ++p) {
          std::vector<int64_t> g;
          for (int64_t r : group) g.push_back(r * P + p);
          out.push_back(std::move(g));
        }
      }
      break;
    case GroupMode::kCrossPartition:
      for (const auto& group : ids) {
        for (int64_t r = 0; r < R; ++r) {
          std::vector<int64_t> g;
          for (int64_t p : group) g.push_back(r * P + p);
          out.push_back(std::move(g));
        }
      }
      break;
    case GroupMode::kCrossReplicaAndPartition:
      for (const auto& group : ids) {
        std::vector<int64_t> g;
        for (int64_t r : group) {
          for (int64_t p = 0; p < P; ++p) g.push_back(r * P + p);
        }
        out.push_back(std::move(g));
      }
      break;
    case GroupMode::kFlattenedId:
      out = std::move(ids);
      break;
  }
  std::vector<bool> seen(R * P, false);
  for (const auto& g : out) {
    for (int64_t d : g) {
      if (seen[d]) return InstrError(instr, absl::StrCat("device ", d, " appears in more than one group"));
      seen[d] = true;
    }
  }
  return out;
}

absl::Status CheckCollectiveMatmulShapes(const HloInstruction& instr) {
  if (instr.operand_count() != 2) return InstrError(instr, "takes exactly two operands");
  if (!instr.shape().IsArray()) return InstrError(instr, "result must be an array");
  if (!instr.backend_config().has_value()) return InstrError(instr, "missing backend_config");
  auto config = ParseCollectiveMatmulConfig(*instr.backend_config());
  if (!config.ok()) return InstrError(instr, config.status().message());
  const Shape& lhs = instr.operand(0)->shape();
  const Shape& rhs = instr.operand(1)->shape();
  if (!lhs.IsArray() || lhs.rank() != 2) return InstrError(instr, "operand 0 must be a rank-2 [M, K] array");
  const int64_t R = config->rhs_contracting_dim;
  if (!rhs.IsArray() || rhs.rank() < 2 || !(R == 0 || (R == 1 && rhs.rank() == 2))) {
    return InstrError(instr, absl::StrCat("kernel contract: operand 1 ", rhs.ToString(false),
                                          " with rhs_contracting_dim=", R,
                                          " is neither [K, N] (R=0) nor [N, K] (R=1)"));
  }
  if (lhs.dimensions(1) != rhs.dimensions(R)) {
    return InstrError(instr, absl::StrCat("kernel contract: operand 0 ", lhs.ToString(false), " has K = ",
                                          lhs.dimensions(1), " but operand 1 ", rhs.ToString(false),
                                          " (rhs_contracting_dim=", R, ") has K = ", rhs.dimensions(R)));
  }
  const int64_t n = rhs.elements() / std::max<int64_t>(rhs.dimensions(R), 1);
  if (config->tp_degree * lhs.dimensions(0) * n != instr.shape().elements()) {
    return InstrError(instr, absl::StrCat("kernel output [", config->tp_degree * lhs.dimensions(0), ", ", n,
                                          "] does not reshape to the result shape ",
                                          instr.shape().ToString(false)));
  }
  return absl::OkStatus();
}

absl::StatusOr<CollectiveMatmulConfig> ParseCollectiveMatmulConfig(absl::string_view text) {
  CollectiveMatmulConfig c;
  bool have[4] = {false, false, false, false};
  static constexpr absl::string_view kKeys[4] = {"rhs_contracting_dim", "tp_degree", "num_groups",
                                                 "use_sb_to_sb"};
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    const absl::string_view key = absl::StripAsciiWhitespace(kv.first);
    int64_t value;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(kv.second), &value)) {
      return absl::InvalidArgumentError(absl::StrCat("backend_config \"", text, "\": bad entry '", part, "'"));
    }
    int64_t* fields[4] = {&c.rhs_contracting_dim, &c.tp_degree, &c.num_groups, &c.use_sb_to_sb};
    bool known = false;
    for (int k = 0; k < 4; ++k) {
      if (key == kKeys[k]) {
        *fields[k] = value;
        have[k] = true;
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("backend_config \"", text, "\": unknown key '", key, "'"));
    }
  }
  for (int k = 0; k < 4; ++k) {
    if (!have[k]) {
      return absl::InvalidArgumentError(absl::StrCat("backend_config \"", text, "\": missing ", kKeys[k]));
    }
  }
  return c;
}

absl::StatusOr<DeviceGrid> ResolveDeviceGrid(const HloModule& module,
                                             const InterpreterOptions& options) {
  DeviceGrid grid;
  grid.replica_count = module.replica_count().value_or(1);
  grid.num_partitions = module.num_partitions().value_or(1);
  if (options.devices.has_value()) {
    const int64_t n = *options.devices;
    if (n <= 0) return absl::InvalidArgumentError("--devices must be positive");
    if (grid.replica_count > 1 && grid.num_partitions > 1) {
      if (n != grid.devices()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the module has replica_count=", grid.replica_count, " and num_partitions=",
            grid.num_partitions, "; --devices=", n, " is ambiguous (give replicas and partitions)"));
      }
    } else if (grid.num_partitions > 1) {
      grid.num_partitions = n;
    } else if (grid.replica_count > 1) {
      grid.replica_count = n;
    } else {
      bool has_channel = false;
      for (const HloComputation* c : module.computations()) {
        for (const HloInstruction* i : c->instructions()) {
          if (IsScheduledCollective(*i) && i->channel_id().has_value()) has_channel = true;
        }
      }
      if (has_channel) grid.num_partitions = n;
      else grid.replica_count = n;
    }
  }
  if (!options.devices.has_value() && !module.replica_count().has_value() &&
      !module.num_partitions().has_value()) {
    // No header and no --devices (XLA's test modules): size the grid so the
    // ids the collectives name exist. The ids are replica ids or partition
    // ids depending on each collective's mode; the majority decides.
    int64_t needed = 1, replica_votes = 0, partition_votes = 0;
    for (const HloComputation* c : module.computations()) {
      for (const HloInstruction* i : c->instructions()) {
        if (!IsScheduledCollective(*i)) continue;
        int64_t top = 0;
        if (IsCollectiveMatmul(*i)) {
          if (i->backend_config().has_value()) {
            auto config = ParseCollectiveMatmulConfig(*i->backend_config());
            if (config.ok()) top = config->tp_degree * config->num_groups;
          }
        } else {
          if (i->replica_groups().has_value()) {
            auto groups = i->replica_groups()->Expand();
            if (groups.ok()) {
              for (const auto& g : *groups) {
                for (int64_t id : g) top = std::max(top, id + 1);
              }
            }
          }
          if (i->source_target_pairs().has_value()) {
            for (const auto& [src, dst] : *i->source_target_pairs()) {
              top = std::max({top, src + 1, dst + 1});
            }
          }
        }
        if (top <= 1) continue;
        needed = std::max(needed, top);
        auto mode = CollectiveGroupMode(*i);
        if (!mode.ok()) continue;
        if (*mode == GroupMode::kCrossPartition || *mode == GroupMode::kFlattenedId) {
          ++partition_votes;
        } else {
          ++replica_votes;
        }
      }
    }
    if (partition_votes > replica_votes) {
      grid.num_partitions = needed;
    } else {
      grid.replica_count = needed;
    }
  }
  if (options.replica_count.has_value()) grid.replica_count = *options.replica_count;
  if (options.num_partitions.has_value()) grid.num_partitions = *options.num_partitions;
  if (grid.replica_count <= 0 || grid.num_partitions <= 0) {
    return absl::InvalidArgumentError("replica_count and num_partitions must be positive");
  }
  if (grid.devices() > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(grid.devices(), " devices is more than the interpreter's limit of 4096"));
  }
  return grid;
}

namespace {

absl::StatusOr<Value> RandomValue(const Shape& shape, uint64_t seed, int64_t param, int64_t device) {
  auto leaves = ZeroLeaves(shape);
  if (!leaves.ok()) return leaves.status();
  for (size_t leaf = 0; leaf < leaves->size(); ++leaf) {
    Array& a = (*leaves)[leaf];
    // Integer and pred scalars are loop counters, indices and flags in SPMD
    // programs: replicated, so every device gets the same value (devices
    // with different trip counts would not meet at the same collectives).
    const bool replicated = !a.is_float() && a.rank() == 0;
    const uint64_t device_key = replicated ? 0 : static_cast<uint64_t>(device) + 1;
    const uint64_t state = seed * 0x2545F4914F6CDD1Dull ^
                           (static_cast<uint64_t>(param) + 1) * 0x9E3779B97F4A7C15ull ^
                           device_key * 0xC2B2AE3D27D4EB4Full ^
                           (static_cast<uint64_t>(leaf) + 1) * 0x165667B19E3779F9ull;
    FillPseudoRandom(state, &a);
  }
  return ValueFromLeaves(shape, *std::move(leaves));
}

// Replaces leaf `leaf` of `v` (depth-first order) with `a`.
absl::Status ReplaceLeaf(Value* v, int64_t leaf, Array a) {
  std::vector<Value*> stack = {v};
  int64_t count = 0;
  while (!stack.empty()) {
    Value* cur = stack.back();
    stack.pop_back();
    if (cur->is_array()) {
      if (count++ == leaf) {
        if (cur->array().type() != a.type() || cur->array().dims() != a.dims()) {
          return absl::InvalidArgumentError("value shape mismatch");
        }
        *cur = Value::FromArray(std::move(a));
        return absl::OkStatus();
      }
    } else if (cur->is_tuple()) {
      std::vector<Value>* elements = cur->mutable_elements();
      for (auto it = elements->rbegin(); it != elements->rend(); ++it) stack.push_back(&*it);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("no array leaf ", leaf));
}

}  // namespace

absl::StatusOr<ModuleInputs> MakeRandomInputs(const HloModule& module, const DeviceGrid& grid,
                                              uint64_t seed, int64_t max_array_elements) {
  const HloComputation* entry = module.entry_computation();
  if (entry == nullptr) return absl::InvalidArgumentError("module has no entry computation");
  ModuleInputs inputs(grid.devices());
  for (int64_t d = 0; d < grid.devices(); ++d) {
    for (int64_t p = 0; p < entry->num_parameters(); ++p) {
      const HloInstruction* param = entry->parameter_instruction(p);
      if (param == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("entry computation has no parameter ", p));
      }
      if (auto st = CheckArraySizes(param->shape(), max_array_elements); !st.ok()) {
        return absl::Status(st.code(), absl::StrCat("parameter %", param->name(), ": ", st.message()));
      }
      auto v = RandomValue(param->shape(), seed, p, d);
      if (!v.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("parameter %", param->name(), ": ", v.status().message()));
      }
      inputs[d].push_back(*std::move(v));
    }
  }
  return inputs;
}

absl::Status ApplyInputsText(const HloModule& module, const DeviceGrid& grid,
                             absl::string_view text, ModuleInputs* inputs) {
  const HloComputation* entry = module.entry_computation();
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    auto err = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat("inputs line ", line_no, ": ", what));
    };
    if (size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) return err("expected 'param P[.L] device D|* : values'");
    std::vector<absl::string_view> head =
        absl::StrSplit(line.substr(0, colon), absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (head.size() != 4 || head[0] != "param" || head[2] != "device") {
      return err("expected 'param P[.L] device D|* : values'");
    }
    int64_t param = 0, leaf = -1;
    std::pair<absl::string_view, absl::string_view> pl = absl::StrSplit(head[1], absl::MaxSplits('.', 1));
    if (!absl::SimpleAtoi(pl.first, &param) || (!pl.second.empty() && !absl::SimpleAtoi(pl.second, &leaf))) {
      return err(absl::StrCat("bad parameter '", head[1], "'"));
    }
    if (param < 0 || param >= entry->num_parameters()) return err(absl::StrCat("no parameter ", param));
    int64_t first = 0, last = grid.devices() - 1;
    if (head[3] != "*") {
      int64_t d;
      if (!absl::SimpleAtoi(head[3], &d) || d < 0 || d >= grid.devices()) {
        return err(absl::StrCat("bad device '", head[3], "' (", grid.devices(), " devices)"));
      }
      first = last = d;
    }
    std::vector<absl::string_view> tokens =
        absl::StrSplit(line.substr(colon + 1), absl::ByAnyChar(" \t,"), absl::SkipEmpty());
    std::vector<const Array*> leaves;
    (*inputs)[first][param].CollectLeaves(&leaves);
    if (leaf < 0 && leaves.size() != 1) return err("tuple parameter: name a leaf as P.L");
    const int64_t leaf_index = leaf < 0 ? 0 : leaf;
    if (leaf_index >= static_cast<int64_t>(leaves.size())) return err(absl::StrCat("no leaf ", leaf));
    Array a(leaves[leaf_index]->type(), leaves[leaf_index]->dims());
    if (a.is_complex()) return err("complex parameters can not be given in an inputs file (they keep random values)");
    if (static_cast<int64_t>(tokens.size()) != a.size()) {
      return err(absl::StrCat("expected ", a.size(), " values for ", a.ShapeString(), ", got ", tokens.size()));
    }
    for (int64_t k = 0; k < a.size(); ++k) {
      const std::string tok = absl::AsciiStrToLower(tokens[k]);
      if (a.type() == PrimitiveType::PRED && (tok == "true" || tok == "false")) {
        a.i()[k] = tok == "true";
        continue;
      }
      if (a.is_float()) {
        double v;
        if (tok == "nan" || tok == "-nan") v = std::nan("");
        else if (tok == "inf" || tok == "+inf") v = INFINITY;
        else if (tok == "-inf") v = -INFINITY;
        else if (!absl::SimpleAtod(tok, &v)) return err(absl::StrCat("bad number '", tokens[k], "'"));
        a.SetDouble(k, v);
      } else {
        int64_t v;
        uint64_t u;
        if (absl::SimpleAtoi(tok, &v)) a.SetInt(k, v);
        else if (absl::SimpleAtoi(tok, &u)) a.SetInt(k, static_cast<int64_t>(u));
        else return err(absl::StrCat("bad integer '", tokens[k], "'"));
      }
    }
    for (int64_t d = first; d <= last; ++d) {
      if (auto st = ReplaceLeaf(&(*inputs)[d][param], leaf_index, a); !st.ok()) return err(st.message());
    }
  }
  return absl::OkStatus();
}

namespace {
absl::StatusOr<RunResult> RunSpmdImpl(const HloModule& module, const DeviceGrid& grid,
                                      const ModuleInputs& inputs, const InterpreterOptions& options);
}  // namespace

absl::StatusOr<RunResult> RunSpmd(const HloModule& module, const DeviceGrid& grid,
                                  const ModuleInputs& inputs, const InterpreterOptions& options) {
  // Every array is bounded by max_array_elements, but their sum is not: a
  // module too large for this machine's memory is an error, not an abort.
  try {
    return RunSpmdImpl(module, grid, inputs, options);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory running ", grid.devices(), " devices (the interpreter keeps every value "
        "of every device in 8 bytes per element)"));
  }
}

namespace {
int EvalThreads(const InterpreterOptions& options) {
  if (options.threads > 0) return options.threads;
  if (const char* env = std::getenv("HILO_EVAL_THREADS")) {
    int n = 0;
    if (absl::SimpleAtoi(env, &n) && n > 0) return std::min(n, 64);
  }
  return 2;
}

absl::StatusOr<RunResult> RunSpmdImpl(const HloModule& module, const DeviceGrid& grid,
                                      const ModuleInputs& inputs, const InterpreterOptions& options) {
  const HloComputation* entry = module.entry_computation();
  if (entry == nullptr) return absl::InvalidArgumentError("module has no entry computation");
  const int64_t D = grid.devices();
  if (static_cast<int64_t>(inputs.size()) != D) {
    return absl::InvalidArgumentError(absl::StrCat("inputs for ", inputs.size(), " devices, need ", D));
  }
  EVAL_RETURN_IF_ERROR(CheckStaticLimits(module, grid, options));
  Program program;
  std::vector<std::unique_ptr<DeviceRun>> devices;
  auto device_error = [&](int64_t d, const absl::Status& st) {
    const DeviceIds ids = grid.ids(d);
    return absl::Status(st.code(), absl::StrCat("device ", d, " (replica ", ids.replica_id,
                                                ", partition ", ids.partition_id, "): ", st.message()));
  };
  for (int64_t d = 0; d < D; ++d) {
    if (static_cast<int64_t>(inputs[d].size()) != entry->num_parameters()) {
      return absl::InvalidArgumentError(absl::StrCat("device ", d, ": ", inputs[d].size(),
                                                     " inputs for ", entry->num_parameters(), " parameters"));
    }
    for (int64_t p = 0; p < entry->num_parameters(); ++p) {
      if (auto st = inputs[d][p].CheckShape(entry->parameter_instruction(p)->shape()); !st.ok()) {
        return device_error(d, absl::InvalidArgumentError(absl::StrCat(
                                   "input for parameter ", p, ": ", st.message())));
      }
    }
    devices.push_back(std::make_unique<DeviceRun>(&program, d, grid.ids(d), &options, true));
    if (auto st = devices.back()->Start(entry, inputs[d]); !st.ok()) return device_error(d, st);
  }
  absl::flat_hash_map<const HloInstruction*, std::unique_ptr<CollectivePlan>> plans;
  RunResult result;
  result.grid = grid;
  const int threads = EvalThreads(options);
  while (true) {
    // Every runnable device runs to its next collective (or its end); the
    // spans are independent, so they may run on several threads. An error
    // is reported for the lowest device that had one, as sequentially.
    std::vector<int64_t> runnable;
    for (int64_t d = 0; d < D; ++d) {
      if (!devices[d]->done() && devices[d]->blocked() == nullptr) runnable.push_back(d);
    }
    std::vector<absl::Status> statuses(runnable.size());
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t k = next.fetch_add(1); k < runnable.size(); k = next.fetch_add(1)) {
        statuses[k] = devices[runnable[k]]->Run();
      }
    };
    std::vector<std::thread> pool;
    const size_t workers = std::min<size_t>(threads, runnable.size());
    for (size_t t = 1; t < workers; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
    for (size_t k = 0; k < runnable.size(); ++k) {
      if (!statuses[k].ok()) return device_error(runnable[k], statuses[k]);
    }
    // Blocked devices by instruction, in order of the lowest device id.
    std::vector<const HloInstruction*> order;
    absl::flat_hash_map<const HloInstruction*, std::vector<int64_t>> waiting;
    int64_t done = 0;
    for (int64_t d = 0; d < D; ++d) {
      if (devices[d]->done()) {
        ++done;
        continue;
      }
      const HloInstruction* at = devices[d]->blocked();
      auto [it, inserted] = waiting.try_emplace(at);
      if (inserted) order.push_back(at);
      it->second.push_back(d);
    }
    if (done == D) break;
    bool progress = false;
    for (const HloInstruction* instr : order) {
      auto& plan_slot = plans[instr];
      if (plan_slot == nullptr) {
        auto plan = PlanCollective(*instr, grid);
        if (!plan.ok()) return plan.status();
        plan_slot = std::make_unique<CollectivePlan>(*std::move(plan));
      }
      const CollectivePlan& plan = *plan_slot;
      absl::flat_hash_set<int64_t> ready_groups;
      for (int64_t d : waiting[instr]) {
        const int64_t gi = plan.group_of[d];
        if (gi < 0) {
          return device_error(d, InstrError(*instr, absl::StrCat(
                                                  "this device is in none of the collective's groups (",
                                                  plan.groups.size(), " groups)")));
        }
        ready_groups.insert(gi);
      }
      std::vector<int64_t> sorted_groups(ready_groups.begin(), ready_groups.end());
      std::sort(sorted_groups.begin(), sorted_groups.end());
      for (int64_t gi : sorted_groups) {
        const std::vector<int64_t>& members = plan.groups[gi];
        bool all_here = true;
        for (int64_t m : members) {
          if (devices[m]->blocked() != instr) all_here = false;
        }
        if (!all_here) continue;
        GroupExecution g{instr, members, {}};
        for (int64_t m : members) g.operands.push_back(devices[m]->BlockedOperands());
        // Reducers of all-reduce are applied through the first member's
        // device (they are collective-free, so any device gives the same).
        ApplyFn apply = [&program, &grid, &options, &members](const HloComputation* c,
                                                             std::vector<Value> args)
            -> absl::StatusOr<Value> {
          DeviceRun sub(&program, members[0], grid.ids(members[0]), &options, false);
          EVAL_RETURN_IF_ERROR(sub.Start(c, std::move(args)));
          EVAL_RETURN_IF_ERROR(sub.Run());
          return sub.result();
        };
        absl::StatusOr<std::vector<Value>> outs;
        switch (instr->opcode()) {
          case HloOpcode::kAllGather:
          case HloOpcode::kAllGatherStart:
            outs = ExecuteAllGather(g);
            break;
          case HloOpcode::kAllReduce:
          case HloOpcode::kAllReduceStart:
            outs = ExecuteAllReduce(g, apply, false);
            break;
          case HloOpcode::kReduceScatter:
            outs = ExecuteAllReduce(g, apply, true);
            break;
          case HloOpcode::kAllToAll:
            outs = ExecuteAllToAll(g);
            break;
          case HloOpcode::kCollectiveBroadcast:
            outs = ExecuteCollectiveBroadcast(g);
            break;
          case HloOpcode::kCollectivePermute:
          case HloOpcode::kCollectivePermuteStart:
            outs = ExecuteCollectivePermute(g, plan.permute_pairs);
            break;
          default:
            outs = ExecuteCollectiveMatmul(g, plan.matmul);
            break;
        }
        if (!outs.ok()) {
          return absl::Status(outs.status().code(),
                              absl::StrCat("group ", GroupString(members), ": ", outs.status().message()));
        }
        for (size_t k = 0; k < members.size(); ++k) devices[members[k]]->Resume(std::move((*outs)[k]));
        ++result.collectives_executed;
        progress = true;
      }
    }
    if (!progress) {
      // Nothing can run: describe who waits where.
      std::vector<std::string> lines;
      for (const HloInstruction* instr : order) {
        const CollectivePlan& plan = *plans[instr];
        for (int64_t d : waiting[instr]) {
          const auto& members = plan.groups[plan.group_of[d]];
          std::vector<std::string> missing;
          for (int64_t m : members) {
            if (devices[m]->blocked() == instr) continue;
            missing.push_back(devices[m]->done()
                                  ? absl::StrCat(m, " (finished)")
                                  : absl::StrCat(m, " (at ", InstrRef(*devices[m]->blocked()), ")"));
          }
          lines.push_back(absl::StrCat("device ", d, " waits at ", InstrRef(*instr), " in group ",
                                       GroupString(members), "; missing ",
                                       absl::StrJoin(missing, ", ")));
        }
      }
      return absl::FailedPreconditionError(
          absl::StrCat("mismatched collectives, no collective can complete: ",
                       absl::StrJoin(lines, "; ")));
    }
  }
  for (int64_t d = 0; d < D; ++d) result.outputs.push_back(devices[d]->result());
  result.instructions_executed = program.instructions_executed.load();
  result.work = program.work.load();
  for (const auto& [kind, instrs] : program.uninterpreted) {
    result.uninterpreted[kind] = static_cast<int64_t>(instrs.size());
  }
  return result;
}
}  // namespace

absl::Status CheckStaticLimits(const HloModule& module, const DeviceGrid& grid,
                               const InterpreterOptions& options) {
  const int64_t D = std::max<int64_t>(grid.devices(), 1);
  const HloInstruction* largest = nullptr;
  int64_t largest_elements = 0;
  for (const HloComputation* c : module.computations()) {
    for (const HloInstruction* i : c->instructions()) {
      if (auto st = CheckArraySizes(i->shape(), options.max_array_elements); !st.ok()) {
        return absl::ResourceExhaustedError(absl::StrCat(InstrRef(*i), ": ", st.message()));
      }
      const int64_t n = ShapeElements(i->shape());
      if (n > largest_elements) largest_elements = n, largest = i;
    }
  }
  const HloComputation* entry = module.entry_computation();
  if (entry == nullptr) return absl::InvalidArgumentError("module has no entry computation");
  int64_t inputs = 0, work = 0;
  for (const HloInstruction* p : entry->parameter_instructions()) {
    inputs = std::min<int64_t>(inputs + ShapeElements(p->shape()), int64_t{1} << 56);
  }
  for (const HloInstruction* i : entry->instructions()) {
    work = std::min<int64_t>(work + InstructionWork(*i), int64_t{1} << 56);
  }
  const int64_t limit = options.max_memory_bytes;
  if (inputs > limit / 8 / D) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the entry parameters of ", D, " devices take ", Bytes(inputs * 8 * std::min<int64_t>(D, 1 << 20)),
        ", more than the memory limit of ", Bytes(limit), " (max_memory_bytes, --max-memory)"));
  }
  if (largest != nullptr && largest_elements > limit / 8 / D) {
    return absl::ResourceExhaustedError(absl::StrCat(
        InstrRef(*largest), " ", largest->shape().ToString(false), " alone takes ",
        Bytes(largest_elements * 8 * D), " on ", D, " devices, more than the memory limit of ",
        Bytes(limit), " (max_memory_bytes, --max-memory)"));
  }
  if (work > options.max_work / D) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "one pass over the entry computation on ", D, " devices needs at least ",
        static_cast<double>(work) * D, " element operations, more than the budget of ",
        options.max_work, " (max_work, --max-work)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<RunResult> RunModule(const HloModule& module, const InterpreterOptions& options) {
  auto grid = ResolveDeviceGrid(module, options);
  if (!grid.ok()) return grid.status();
  EVAL_RETURN_IF_ERROR(CheckStaticLimits(module, *grid, options));
  auto inputs = MakeRandomInputs(module, *grid, options.seed, options.max_array_elements);
  if (!inputs.ok()) return inputs.status();
  if (!options.inputs_text.empty()) {
    EVAL_RETURN_IF_ERROR(ApplyInputsText(module, *grid, options.inputs_text, &*inputs));
  }
  return RunSpmd(module, *grid, *inputs, options);
}

}  // namespace eval
}  // namespace hilo
