#include "transformer_generator.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace hilo::gen {
namespace {

using Dims = std::vector<int64_t>;

class Generator {
 public:
  explicit Generator(const TransformerOptions& o)
      : o_(o), devices_(o.tp * o.fsdp), tp_groups_(Groups(true)), fsdp_groups_(Groups(false)) {}

  std::string Run() {
    std::string body;
    body.reserve(static_cast<size_t>(o_.layers) * kInstructionsPerLayer * 256);
    const Dims x_dims = {o_.batch, o_.seq / o_.tp, o_.hidden};
    std::string x = "x.0";
    Param(&body, x, x_dims);
    Line(&body, "tok.0", "bf16[]", "constant(0)");
    std::string tok = "tok.0";
    for (int64_t l = 0; l < o_.layers; ++l) Layer(&body, l, &x, &tok);
    const std::string root_shape = absl::StrCat("(", Shape(x_dims), ", bf16[])");
    absl::StrAppend(&body, "  ROOT %result = ", root_shape, " tuple(", Operand(x_dims, x), ", ",
                    Scalar(tok), ")\n}\n");
    ++count_;

    std::string out;
    out.reserve(body.size() + signature_.size() * 3 + 1024);
    const std::string name = o_.module_name.empty()
                                 ? absl::StrCat("tp_fsdp_transformer_L", o_.layers)
                                 : o_.module_name;
    absl::StrAppend(&out, "HloModule ", name, ", entry_computation_layout={(",
                    absl::StrJoin(param_shapes_, ", "), ")->", root_shape,
                    "}, replica_count=", devices_, "\n\n");
    // The reduction the reduce-scatters apply.
    absl::StrAppend(&out, "%add.bf16 (add.bf16.lhs: bf16[], add.bf16.rhs: bf16[]) -> bf16[] {\n",
                    "  %add.bf16.lhs = bf16[] parameter(0)\n",
                    "  %add.bf16.rhs = bf16[] parameter(1)\n",
                    "  ROOT %add.bf16.sum = bf16[] add(", Scalar("add.bf16.lhs"), ", ",
                    Scalar("add.bf16.rhs"), ")\n}\n\n");
    count_ += 3;
    absl::StrAppend(&out, "ENTRY %main (", signature_, ") -> ", ShapeNoLayout(x_dims, true),
                    " {\n");
    out += body;
    return out;
  }

  int64_t instruction_count() const { return count_; }

 private:
  std::string Shape(const Dims& dims) const {
    std::string s = absl::StrCat("bf16[", absl::StrJoin(dims, ","), "]");
    if (o_.layouts && !dims.empty()) {
      s += "{";
      for (int64_t i = static_cast<int64_t>(dims.size()) - 1; i >= 0; --i) {
        absl::StrAppend(&s, i, i == 0 ? "}" : ",");
      }
    }
    return s;
  }
  // Computation signatures print shapes without layouts, as XLA does.
  std::string ShapeNoLayout(const Dims& dims, bool with_token = false) const {
    std::string s = absl::StrCat("bf16[", absl::StrJoin(dims, ","), "]");
    return with_token ? absl::StrCat("(", s, ", bf16[])") : s;
  }
  std::string TupleShape(const Dims& dims) const {
    return absl::StrCat("(", Shape(dims), ", bf16[])");
  }

  // `bf16[2,3]{1,0} %name`, or `%name` without operand shapes.
  std::string Operand(const Dims& dims, absl::string_view name) const {
    if (!o_.operand_shapes) return absl::StrCat("%", name);
    return absl::StrCat(Shape(dims), " %", name);
  }
  std::string Scalar(absl::string_view name) const {
    if (!o_.operand_shapes) return absl::StrCat("%", name);
    return absl::StrCat("bf16[] %", name);
  }

  void Line(std::string* out, absl::string_view name, absl::string_view shape,
            absl::string_view rest) {
    absl::StrAppend(out, "  %", name, " = ", shape, " ", rest, "\n");
    ++count_;
  }

  void Param(std::string* out, absl::string_view name, const Dims& dims) {
    const int64_t n = static_cast<int64_t>(param_shapes_.size());
    std::string shape = Shape(dims);
    Line(out, name, shape, absl::StrCat("parameter(", n, ")"));
    absl::StrAppend(&signature_, n == 0 ? "" : ", ", name, ": ", ShapeNoLayout(dims));
    param_shapes_.push_back(std::move(shape));
  }

  std::string Groups(bool tp) const {
    const int64_t t = o_.tp, f = o_.fsdp;
    if (o_.iota_groups) {
      if (tp) return absl::StrCat("[", f, ",", t, "]<=[", devices_, "]");
      return absl::StrCat("[", t, ",", f, "]<=[", f, ",", t, "]T(1,0)");
    }
    std::string s = "{";
    const int64_t count = tp ? f : t, size = tp ? t : f;
    for (int64_t g = 0; g < count; ++g) {
      s += g == 0 ? "{" : ",{";
      for (int64_t i = 0; i < size; ++i) {
        absl::StrAppend(&s, i == 0 ? "" : ",", tp ? g * t + i : i * t + g);
      }
      s += "}";
    }
    return s + "}";
  }

  std::string Channel() {
    if (o_.channel_ids == "none") return "";
    int64_t id = ++next_channel_;
    if (o_.channel_ids == "collide" && id % 4 == 0) id -= 1;
    return absl::StrCat("channel_id=", id, ", ");
  }

  // XLA's attribute order: the op's own attributes (channel_id,
  // replica_groups, dimensions), then called computations, then
  // frontend_attributes.
  std::string Collective(absl::string_view type, bool tp, int64_t dim,
                         absl::string_view to_apply = "") {
    return absl::StrCat(Channel(), "replica_groups=", tp ? tp_groups_ : fsdp_groups_,
                        ", dimensions={", dim, "}",
                        to_apply.empty() ? "" : absl::StrCat(", to_apply=%", to_apply),
                        ", frontend_attributes={collective_type=\"", type, "\"}");
  }

  std::string Metadata(int64_t layer, absl::string_view what, int64_t line) const {
    return absl::StrCat("metadata={op_type=\"aten__einsum\" op_name=\"model/layers.", layer, "/",
                        what, "/aten__einsum\" source_file=\"/workspace/model/transformer.py\"",
                        " source_line=", line, "}");
  }

  void Layer(std::string* out, int64_t l, std::string* x, std::string* tok) {
    const int64_t t = o_.tp, f = o_.fsdp, b = o_.batch, s = o_.seq, h = o_.hidden,
                  nh = o_.heads, hd = o_.head_dim;
    const Dims x_dims = {b, s / t, h}, xg_dims = {b, s, h};
    // The input projection's weight is stored transposed, `[heads, head_dim,
    // hidden]`, FSDP-sharded on hidden and TP-sharded on heads, so that the
    // projection is `hidden^T = W^T . x^T` with the gathered weight as dot
    // operand 0, gathered by rows: the form the collective-matmul kernel
    // computes exactly (see docs/passes/looped-einsum.md), so the fold the
    // looped-einsum pass makes here checks equivalent.
    const Dims win_dims = {nh / t, hd, h / f}, winf_dims = {nh / t, hd, h}, wint_dims = {nh, hd, h};
    const Dims win2_dims = {nh * hd, h}, x2_dims = {b * s, h};
    const Dims hidt_dims = {nh * hd, b * s}, hid2_dims = {b * s, nh * hd};
    const Dims hid_dims = {b, s, nh, hd};
    const Dims wout_dims = {nh / t, hd, h / f}, woutf_dims = {nh / t, hd, h},
               woutt_dims = {nh, hd, h};
    const std::string suffix = absl::StrCat(".", l);
    auto n = [&](absl::string_view base) { return absl::StrCat(base, suffix); };

    // Column-parallel input projection with an FSDP- then TP-gathered weight.
    Param(out, n("w_in"), win_dims);
    Line(out, n("ag.fsdp.w_in"), TupleShape(winf_dims),
         absl::StrCat("all-gather(", Operand(win_dims, n("w_in")), ", ", Scalar(*tok), "), ",
                      Collective("fsdp_all_gather", false, 2)));
    Line(out, n("w_in.fsdp"), Shape(winf_dims),
         absl::StrCat("get-tuple-element(", TupleShape(winf_dims), " %", n("ag.fsdp.w_in"),
                      "), index=0"));
    Line(out, n("tok.w_in"), "bf16[]",
         absl::StrCat("get-tuple-element(", TupleShape(winf_dims), " %", n("ag.fsdp.w_in"),
                      "), index=1"));
    Line(out, n("ag.tp.w_in"), Shape(wint_dims),
         absl::StrCat("all-gather(", Operand(winf_dims, n("w_in.fsdp")), "), ",
                      Collective("tp_all_gather", true, 0)));
    Line(out, n("w_in.2d"), Shape(win2_dims),
         absl::StrCat("reshape(", Operand(wint_dims, n("ag.tp.w_in")), ")"));
    Line(out, n("ag.tp.x"), Shape(xg_dims),
         absl::StrCat("all-gather(", Operand(x_dims, *x), "), ",
                      Collective("tp_all_gather", true, 1)));
    // An elementwise op between the activation's all-gather and the dot (a
    // norm in a real model).
    Line(out, n("norm"), Shape(xg_dims),
         absl::StrCat("multiply(", Operand(xg_dims, n("ag.tp.x")), ", ",
                      Operand(xg_dims, n("ag.tp.x")), ")"));
    Line(out, n("norm.2d"), Shape(x2_dims),
         absl::StrCat("reshape(", Operand(xg_dims, n("norm")), ")"));
    Line(out, n("dot.in"), Shape(hidt_dims),
         absl::StrCat("dot(", Operand(win2_dims, n("w_in.2d")), ", ",
                      Operand(x2_dims, n("norm.2d")),
                      "), lhs_contracting_dims={1}, rhs_contracting_dims={1}, ",
                      Metadata(l, "attn/in_proj", 100 + l % 50)));
    Line(out, n("hidden.2d"), Shape(hid2_dims),
         absl::StrCat("transpose(", Operand(hidt_dims, n("dot.in")), "), dimensions={1,0}"));
    Line(out, n("hidden"), Shape(hid_dims),
         absl::StrCat("reshape(", Operand(hid2_dims, n("hidden.2d")), ")"));
    Line(out, n("tanh"), Shape(hid_dims),
         absl::StrCat("tanh(", Operand(hid_dims, n("hidden")), ")"));
    Line(out, n("act"), Shape(hid_dims),
         absl::StrCat("multiply(", Operand(hid_dims, n("tanh")), ", ",
                      Operand(hid_dims, n("hidden")), ")"));

    // Row-parallel output projection, reduce-scattered back to the sequence shard.
    Param(out, n("w_out"), wout_dims);
    Line(out, n("ag.fsdp.w_out"), TupleShape(woutf_dims),
         absl::StrCat("all-gather(", Operand(wout_dims, n("w_out")), ", ", Scalar(n("tok.w_in")),
                      "), ", Collective("fsdp_all_gather", false, 2)));
    Line(out, n("w_out.fsdp"), Shape(woutf_dims),
         absl::StrCat("get-tuple-element(", TupleShape(woutf_dims), " %", n("ag.fsdp.w_out"),
                      "), index=0"));
    Line(out, n("tok.w_out"), "bf16[]",
         absl::StrCat("get-tuple-element(", TupleShape(woutf_dims), " %", n("ag.fsdp.w_out"),
                      "), index=1"));
    Line(out, n("ag.tp.w_out"), Shape(woutt_dims),
         absl::StrCat("all-gather(", Operand(woutf_dims, n("w_out.fsdp")), "), ",
                      Collective("tp_all_gather", true, 0)));
    Line(out, n("dot.out"), Shape(xg_dims),
         absl::StrCat("dot(", Operand(hid_dims, n("act")), ", ",
                      Operand(woutt_dims, n("ag.tp.w_out")),
                      "), lhs_contracting_dims={2,3}, rhs_contracting_dims={0,1}, ",
                      Metadata(l, "attn/out_proj", 150 + l % 50)));
    Line(out, n("rs.tp"), Shape(x_dims),
         absl::StrCat("reduce-scatter(", Operand(xg_dims, n("dot.out")), "), ",
                      Collective("tp_reduce_scatter", true, 1, "add.bf16")));
    Line(out, n("residual"), Shape(x_dims),
         absl::StrCat("add(", Operand(x_dims, *x), ", ", Operand(x_dims, n("rs.tp")), ")"));
    *x = n("residual");
    *tok = n("tok.w_out");
  }

  const TransformerOptions& o_;
  const int64_t devices_;
  const std::string tp_groups_;
  const std::string fsdp_groups_;
  std::vector<std::string> param_shapes_;
  std::string signature_;
  int64_t next_channel_ = 0;
  int64_t count_ = 0;
};

}  // namespace

int64_t LayersForInstructionCount(int64_t instructions) {
  const int64_t need = instructions - kFixedInstructions;
  if (need <= kInstructionsPerLayer) return 1;
  return (need + kInstructionsPerLayer - 1) / kInstructionsPerLayer;
}

absl::StatusOr<std::string> GenerateTransformerModule(const TransformerOptions& o) {
  if (o.layers < 1 || o.tp < 1 || o.fsdp < 1 || o.batch < 1 || o.seq < 1 || o.hidden < 1 ||
      o.heads < 1 || o.head_dim < 1) {
    return absl::InvalidArgumentError("layers, degrees and dimensions must be positive");
  }
  if (o.seq % o.tp != 0 || o.heads % o.tp != 0 || o.hidden % o.fsdp != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "seq (", o.seq, ") and heads (", o.heads, ") must be multiples of tp (", o.tp,
        "), hidden (", o.hidden, ") a multiple of fsdp (", o.fsdp, ")"));
  }
  if (o.channel_ids != "unique" && o.channel_ids != "collide" && o.channel_ids != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("channel_ids must be unique, collide or none, not '", o.channel_ids, "'"));
  }
  Generator gen(o);
  std::string text = gen.Run();
  if (gen.instruction_count() != InstructionCount(o.layers)) {
    return absl::InternalError(absl::StrCat("generated ", gen.instruction_count(),
                                            " instructions, expected ",
                                            InstructionCount(o.layers)));
  }
  return text;
}

}  // namespace hilo::gen
