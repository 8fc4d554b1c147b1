#include "hilo/proto/proto_text_attributes.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "hilo/proto/hlo_proto_convert.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace {

using Proto = xla::HloInstructionProto;
using Ints = std::vector<int64_t>;

// ------------------------------------------------------------- text pieces

std::optional<int64_t> ParseInt(absl::string_view s) {
  int64_t v;
  if (s.empty() || !absl::SimpleAtoi(s, &v)) return std::nullopt;
  // SimpleAtoi accepts spaces and '+': the text format does not.
  for (char c : s) {
    if (!(absl::ascii_isdigit(c) || c == '-')) return std::nullopt;
  }
  return v;
}

// `{1,2,3}`
std::optional<Ints> ParseIntList(absl::string_view s) {
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return std::nullopt;
  s = s.substr(1, s.size() - 2);
  Ints out;
  if (s.empty()) return out;
  for (absl::string_view piece : absl::StrSplit(s, ',')) {
    std::optional<int64_t> v = ParseInt(piece);
    if (!v.has_value()) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

template <typename List>
std::string IntList(const List& list) {
  return absl::StrCat("{", absl::StrJoin(list, ","), "}");
}

// `3x3` (x-separated integers).
std::optional<Ints> ParseXList(absl::string_view s) {
  Ints out;
  for (absl::string_view piece : absl::StrSplit(s, 'x')) {
    std::optional<int64_t> v = ParseInt(piece);
    if (!v.has_value()) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::optional<std::string> ParseQuoted(absl::string_view s) {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') return std::nullopt;
  std::string out;
  if (!absl::CUnescape(s.substr(1, s.size() - 2), &out)) return std::nullopt;
  return out;
}
std::string Quoted(absl::string_view s) { return absl::StrCat("\"", absl::CEscape(s), "\""); }

// --------------------------------------------------------------- mappers

struct Mapper {
  const char* name;
  // Opcodes the attribute belongs to (nullptr: any).
  bool (*applies)(HloOpcode);
  bool (*encode)(absl::string_view, Proto*);
  std::optional<std::string> (*decode)(const Proto&);
};

bool IsGather(HloOpcode op) { return op == HloOpcode::kGather; }
bool IsScatter(HloOpcode op) { return op == HloOpcode::kScatter; }
bool IsConvolution(HloOpcode op) { return op == HloOpcode::kConvolution; }
bool IsRngBitGenerator(HloOpcode op) { return op == HloOpcode::kRngBitGenerator; }
bool IsFft(HloOpcode op) { return op == HloOpcode::kFft; }
bool IsTriangularSolve(HloOpcode op) { return op == HloOpcode::kTriangularSolve; }
bool IsBatchNorm(HloOpcode op) {
  return op == HloOpcode::kBatchNormGrad || op == HloOpcode::kBatchNormInference ||
         op == HloOpcode::kBatchNormTraining;
}

// Window: `{size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=2x1 rhs_dilate=1x2 rhs_reversal=0x1}`.
std::optional<std::string> RenderWindow(const xla::Window& w) {
  std::vector<std::string> size, stride, pad, lhs, rhs, rev;
  bool any_stride = false, any_pad = false, any_lhs = false, any_rhs = false, any_rev = false;
  for (const xla::WindowDimension& d : w.dimensions()) {
    size.push_back(absl::StrCat(d.size()));
    stride.push_back(absl::StrCat(d.stride()));
    pad.push_back(absl::StrCat(d.padding_low(), "_", d.padding_high()));
    lhs.push_back(absl::StrCat(d.base_dilation()));
    rhs.push_back(absl::StrCat(d.window_dilation()));
    rev.push_back(d.window_reversal() ? "1" : "0");
    any_stride |= d.stride() != 1;
    any_pad |= d.padding_low() != 0 || d.padding_high() != 0;
    any_lhs |= d.base_dilation() != 1;
    any_rhs |= d.window_dilation() != 1;
    any_rev |= d.window_reversal();
  }
  std::vector<std::string> parts;
  if (!size.empty()) parts.push_back("size=" + absl::StrJoin(size, "x"));
  if (any_stride) parts.push_back("stride=" + absl::StrJoin(stride, "x"));
  if (any_pad) parts.push_back("pad=" + absl::StrJoin(pad, "x"));
  if (any_lhs) parts.push_back("lhs_dilate=" + absl::StrJoin(lhs, "x"));
  if (any_rhs) parts.push_back("rhs_dilate=" + absl::StrJoin(rhs, "x"));
  if (any_rev) parts.push_back("rhs_reversal=" + absl::StrJoin(rev, "x"));
  return absl::StrCat("{", absl::StrJoin(parts, " "), "}");
}

bool ParseWindow(absl::string_view s, xla::Window* w) {
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return false;
  s = s.substr(1, s.size() - 2);
  w->Clear();
  if (s.empty()) return true;
  auto dim = [&](size_t i) -> xla::WindowDimension* {
    while (w->dimensions_size() <= static_cast<int>(i)) {
      xla::WindowDimension* d = w->add_dimensions();
      d->set_stride(1);
      d->set_base_dilation(1);
      d->set_window_dilation(1);
    }
    return w->mutable_dimensions(static_cast<int>(i));
  };
  for (absl::string_view part : absl::StrSplit(s, ' ')) {
    const size_t eq = part.find('=');
    if (eq == absl::string_view::npos) return false;
    const absl::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "pad") {
      size_t i = 0;
      for (absl::string_view p : absl::StrSplit(value, 'x')) {
        std::vector<absl::string_view> lh = absl::StrSplit(p, '_');
        if (lh.size() != 2) return false;
        std::optional<int64_t> lo = ParseInt(lh[0]), hi = ParseInt(lh[1]);
        if (!lo || !hi) return false;
        dim(i)->set_padding_low(*lo);
        dim(i)->set_padding_high(*hi);
        ++i;
      }
      continue;
    }
    std::optional<Ints> v = ParseXList(value);
    if (!v.has_value() || v->size() > 4096) return false;
    for (size_t i = 0; i < v->size(); ++i) {
      xla::WindowDimension* d = dim(i);
      if (key == "size") d->set_size((*v)[i]);
      else if (key == "stride") d->set_stride((*v)[i]);
      else if (key == "lhs_dilate") d->set_base_dilation((*v)[i]);
      else if (key == "rhs_dilate") d->set_window_dilation((*v)[i]);
      else if (key == "rhs_reversal") d->set_window_reversal((*v)[i] != 0);
      else return false;
    }
  }
  return true;
}

// dim_labels: `b01f_01io->b01f`.
std::optional<std::string> RenderDimLabels(const xla::ConvolutionDimensionNumbers& d) {
  auto side = [](int64_t a, char ca, int64_t b, char cb, const auto& spatial) -> std::optional<std::string> {
    const int64_t rank = 2 + spatial.size();
    if (spatial.size() > 9) return std::nullopt;
    std::string out(rank, '?');
    auto put = [&](int64_t pos, char c) {
      if (pos < 0 || pos >= rank || out[pos] != '?') return false;
      out[pos] = c;
      return true;
    };
    if (!put(a, ca) || !put(b, cb)) return std::nullopt;
    for (int i = 0; i < spatial.size(); ++i) {
      if (!put(spatial[i], static_cast<char>('0' + i))) return std::nullopt;
    }
    return out;
  };
  auto lhs = side(d.input_batch_dimension(), 'b', d.input_feature_dimension(), 'f',
                  d.input_spatial_dimensions());
  auto rhs = side(d.kernel_input_feature_dimension(), 'i', d.kernel_output_feature_dimension(), 'o',
                  d.kernel_spatial_dimensions());
  auto out = side(d.output_batch_dimension(), 'b', d.output_feature_dimension(), 'f',
                  d.output_spatial_dimensions());
  if (!lhs || !rhs || !out) return std::nullopt;
  return absl::StrCat(*lhs, "_", *rhs, "->", *out);
}

bool ParseDimLabels(absl::string_view s, xla::ConvolutionDimensionNumbers* d) {
  const size_t us = s.find('_'), arrow = s.find("->");
  if (us == absl::string_view::npos || arrow == absl::string_view::npos || arrow < us) return false;
  auto side = [](absl::string_view t, char ca, char cb, int64_t* a, int64_t* b,
                 google::protobuf::RepeatedField<int64_t>* spatial) {
    if (t.size() > 11 || t.size() < 2) return false;
    std::vector<int64_t> sp(t.size() - 2, -1);
    *a = *b = -1;
    for (size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      if (c == ca && *a < 0) *a = static_cast<int64_t>(i);
      else if (c == cb && *b < 0) *b = static_cast<int64_t>(i);
      else if (c >= '0' && c <= '9' && static_cast<size_t>(c - '0') < sp.size() && sp[c - '0'] < 0)
        sp[c - '0'] = static_cast<int64_t>(i);
      else return false;
    }
    if (*a < 0 || *b < 0) return false;
    spatial->Clear();
    for (int64_t v : sp) {
      if (v < 0) return false;
      spatial->Add(v);
    }
    return true;
  };
  int64_t a, b;
  if (!side(s.substr(0, us), 'b', 'f', &a, &b, d->mutable_input_spatial_dimensions())) return false;
  d->set_input_batch_dimension(a);
  d->set_input_feature_dimension(b);
  if (!side(s.substr(us + 1, arrow - us - 1), 'i', 'o', &a, &b, d->mutable_kernel_spatial_dimensions())) {
    return false;
  }
  d->set_kernel_input_feature_dimension(a);
  d->set_kernel_output_feature_dimension(b);
  if (!side(s.substr(arrow + 2), 'b', 'f', &a, &b, d->mutable_output_spatial_dimensions())) return false;
  d->set_output_batch_dimension(a);
  d->set_output_feature_dimension(b);
  return true;
}

// padding: `0_0x1_1` or `0_0_1x1_1_0`.
std::optional<std::string> RenderPadding(const xla::PaddingConfig& p) {
  bool interior = false;
  for (const auto& d : p.dimensions()) interior |= d.interior_padding() != 0;
  std::vector<std::string> parts;
  for (const auto& d : p.dimensions()) {
    parts.push_back(interior ? absl::StrCat(d.edge_padding_low(), "_", d.edge_padding_high(), "_",
                                            d.interior_padding())
                             : absl::StrCat(d.edge_padding_low(), "_", d.edge_padding_high()));
  }
  return absl::StrJoin(parts, "x");
}

bool ParsePadding(absl::string_view s, xla::PaddingConfig* p) {
  p->Clear();
  for (absl::string_view dim : absl::StrSplit(s, 'x')) {
    std::vector<absl::string_view> v = absl::StrSplit(dim, '_');
    if (v.size() != 2 && v.size() != 3) return false;
    auto* d = p->add_dimensions();
    std::optional<int64_t> lo = ParseInt(v[0]), hi = ParseInt(v[1]);
    if (!lo || !hi) return false;
    d->set_edge_padding_low(*lo);
    d->set_edge_padding_high(*hi);
    if (v.size() == 3) {
      std::optional<int64_t> in = ParseInt(v[2]);
      if (!in) return false;
      d->set_interior_padding(*in);
    }
  }
  return true;
}

// slice: `{[0:4], [1:8:2]}`.
std::optional<std::string> RenderSlice(const Proto& p) {
  std::vector<std::string> parts;
  for (const auto& d : p.slice_dimensions()) {
    parts.push_back(d.stride() == 1 ? absl::StrCat("[", d.start(), ":", d.limit(), "]")
                                    : absl::StrCat("[", d.start(), ":", d.limit(), ":", d.stride(), "]"));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

bool ParseSlice(absl::string_view s, Proto* p) {
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return false;
  s = s.substr(1, s.size() - 2);
  p->clear_slice_dimensions();
  if (s.empty()) return true;
  for (absl::string_view part : absl::StrSplit(s, ", ")) {
    if (part.size() < 2 || part.front() != '[' || part.back() != ']') return false;
    std::vector<absl::string_view> v = absl::StrSplit(part.substr(1, part.size() - 2), ':');
    if (v.size() != 2 && v.size() != 3) return false;
    auto* d = p->add_slice_dimensions();
    std::optional<int64_t> a = ParseInt(v[0]), b = ParseInt(v[1]);
    std::optional<int64_t> c = v.size() == 3 ? ParseInt(v[2]) : std::optional<int64_t>(1);
    if (!a || !b || !c) return false;
    d->set_start(*a);
    d->set_limit(*b);
    d->set_stride(*c);
  }
  return true;
}

std::optional<std::string> RenderPrecision(const xla::PrecisionConfig& pc) {
  std::vector<std::string> names;
  for (int v : pc.operand_precision()) {
    switch (v) {
      case xla::PrecisionConfig::DEFAULT: names.push_back("default"); break;
      case xla::PrecisionConfig::HIGH: names.push_back("high"); break;
      case xla::PrecisionConfig::HIGHEST: names.push_back("highest"); break;
      default: return std::nullopt;
    }
  }
  return absl::StrCat("{", absl::StrJoin(names, ","), "}");
}

bool ParsePrecision(absl::string_view s, xla::PrecisionConfig* pc) {
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return false;
  s = s.substr(1, s.size() - 2);
  pc->Clear();
  if (s.empty()) return true;
  for (absl::string_view n : absl::StrSplit(s, ',')) {
    if (n == "default") pc->add_operand_precision(xla::PrecisionConfig::DEFAULT);
    else if (n == "high") pc->add_operand_precision(xla::PrecisionConfig::HIGH);
    else if (n == "highest") pc->add_operand_precision(xla::PrecisionConfig::HIGHEST);
    else return false;
  }
  return true;
}

// ------------------------------------------------------- small text cursor

// Reads the brace-and-paren forms of aliasing attributes (`{0}: (1, {})`);
// spaces before each token are skipped, so writings other than XLA's still
// set the fields (the caller compares the rendering with the text).
struct Cursor {
  absl::string_view s;
  size_t i = 0;
  void Spaces() {
    while (i < s.size() && s[i] == ' ') ++i;
  }
  bool Eat(absl::string_view token) {
    Spaces();
    if (s.substr(i, token.size()) != token) return false;
    i += token.size();
    return true;
  }
  bool Int(int64_t* v) {
    Spaces();
    const size_t start = i;
    if (i < s.size() && s[i] == '-') ++i;
    while (i < s.size() && absl::ascii_isdigit(s[i])) ++i;
    std::optional<int64_t> n = ParseInt(s.substr(start, i - start));
    if (!n.has_value()) return false;
    *v = *n;
    return true;
  }
  // A shape index `{0,1}` (or `{}`) into `out`.
  bool Index(google::protobuf::RepeatedField<int64_t>* out) {
    if (!Eat("{")) return false;
    out->Clear();
    if (Eat("}")) return true;
    do {
      int64_t v;
      if (!Int(&v)) return false;
      out->Add(v);
    } while (Eat(","));
    return Eat("}");
  }
  bool AtEnd() {
    Spaces();
    return i == s.size();
  }
};

// `{ item, item }`: items separated by `,` inside outer braces (with or
// without the spaces XLA's module printer puts inside them), each read by
// `item`.
template <typename Item>
bool ParseBracedItems(absl::string_view text, Item item) {
  Cursor c{text};
  if (!c.Eat("{")) return false;
  if (c.Eat("}")) return c.AtEnd();
  do {
    if (!item(c)) return false;
  } while (c.Eat(","));
  return c.Eat("}") && c.AtEnd();
}

// `output_to_operand_aliasing={{0}: (1, {}), {1}: (0, {0})}`.
bool ParseOutputOperandAliasing(absl::string_view v, Proto* p) {
  p->clear_output_operand_aliasing();
  return ParseBracedItems(v, [&](Cursor& c) {
    xla::OutputOperandAliasing* a = p->add_output_operand_aliasing();
    int64_t operand;
    if (!c.Index(a->mutable_output_shape_index()) || !c.Eat(":") || !c.Eat("(") || !c.Int(&operand) ||
        !c.Eat(",") || !c.Index(a->mutable_operand_shape_index()) || !c.Eat(")")) {
      return false;
    }
    a->set_operand_index(operand);
    return true;
  });
}
std::optional<std::string> RenderOutputOperandAliasing(const Proto& p) {
  if (p.output_operand_aliasing_size() == 0) return std::nullopt;
  std::vector<std::string> parts;
  for (const xla::OutputOperandAliasing& a : p.output_operand_aliasing()) {
    parts.push_back(absl::StrCat(IntList(a.output_shape_index()), ": (", a.operand_index(), ", ",
                                 IntList(a.operand_shape_index()), ")"));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

// `input_output_alias={ {0}: (0, {}, may-alias), {1}: (2, {1}, must-alias) }`
// (XLA's HloInputOutputAliasConfig::ToShortString inside `{ ` ` }`; a
// missing kind is may-alias, as XLA's parser reads it).
bool ParseInputOutputAlias(absl::string_view v, xla::HloInputOutputAliasProto* proto) {
  proto->Clear();
  return ParseBracedItems(v, [&](Cursor& c) {
    auto* e = proto->add_entries();
    int64_t param;
    if (!c.Index(e->mutable_output_shape_index()) || !c.Eat(":") || !c.Eat("(") || !c.Int(&param) ||
        !c.Eat(",") || !c.Index(e->mutable_parameter_shape_index())) {
      return false;
    }
    e->set_parameter_number(param);
    e->set_kind(xla::MAY_ALIAS);
    if (c.Eat(",")) {
      if (c.Eat("must-alias")) e->set_kind(xla::MUST_ALIAS);
      else if (!c.Eat("may-alias")) return false;
    }
    return c.Eat(")");
  });
}
std::string RenderInputOutputAlias(const xla::HloInputOutputAliasProto& proto) {
  std::vector<std::string> parts;
  for (const auto& e : proto.entries()) {
    parts.push_back(absl::StrCat(IntList(e.output_shape_index()), ": (", e.parameter_number(), ", ",
                                 IntList(e.parameter_shape_index()), ", ",
                                 e.kind() == xla::MUST_ALIAS ? "must-alias" : "may-alias", ")"));
  }
  return absl::StrCat("{ ", absl::StrJoin(parts, ", "), " }");
}

// `buffer_donor={ (0, {}), (1, {0}) }` (XLA's HloBufferDonorConfig::ToShortString).
bool ParseBufferDonor(absl::string_view v, xla::HloBufferDonorProto* proto) {
  proto->Clear();
  return ParseBracedItems(v, [&](Cursor& c) {
    auto* e = proto->add_entries();
    int64_t param;
    if (!c.Eat("(") || !c.Int(&param) || !c.Eat(",") || !c.Index(e->mutable_parameter_shape_index()) ||
        !c.Eat(")")) {
      return false;
    }
    e->set_parameter_number(param);
    return true;
  });
}
std::string RenderBufferDonor(const xla::HloBufferDonorProto& proto) {
  std::vector<std::string> parts;
  for (const auto& e : proto.entries()) {
    parts.push_back(absl::StrCat("(", e.parameter_number(), ", ", IntList(e.parameter_shape_index()), ")"));
  }
  return absl::StrCat("{ ", absl::StrJoin(parts, ", "), " }");
}

// Shapes with layouts: `{f32[2,3]{1,0}, s32[]}` (operand_layout_constraints)
// or one shape (outfeed_shape), as the text format writes shapes.
bool ParseShapesInto(absl::string_view text, google::protobuf::RepeatedPtrField<xla::ShapeProto>* out) {
  absl::StatusOr<std::vector<Shape>> shapes = ParseShapeList(text);
  if (!shapes.ok()) return false;
  out->Clear();
  for (const Shape& shape : *shapes) ShapeToProto(shape, out->Add());
  return true;
}
std::optional<std::string> RenderShapes(const google::protobuf::RepeatedPtrField<xla::ShapeProto>& protos) {
  std::vector<std::string> parts;
  for (const xla::ShapeProto& sp : protos) {
    absl::StatusOr<Shape> shape = ShapeFromProto(sp);
    if (!shape.ok()) return std::nullopt;
    parts.push_back(shape->ToString());
  }
  return absl::StrJoin(parts, ", ");
}

// `domain={kind="sharding", entry={maximal device=0}, exit={}}` (a sharding
// domain; `{}` is no sharding) <-> domain_entry_sharding, domain_exit_sharding.
bool ParseDomain(absl::string_view v, Proto* p) {
  if (!absl::ConsumePrefix(&v, "{kind=\"sharding\", entry=") || !absl::ConsumeSuffix(&v, "}")) return false;
  // The entry's text ends at the `, exit=` outside its braces.
  constexpr absl::string_view kExit = ", exit=";
  size_t split = absl::string_view::npos;
  int depth = 0;
  for (size_t i = 0; i < v.size() && split == absl::string_view::npos; ++i) {
    if (v[i] == '{') ++depth;
    if (v[i] == '}') --depth;
    if (depth == 0 && v.substr(i + 1, kExit.size()) == kExit) split = i + 1;
  }
  if (split == absl::string_view::npos) return false;
  const absl::string_view entry = v.substr(0, split), exit = v.substr(split + kExit.size());
  p->clear_domain_entry_sharding();
  p->clear_domain_exit_sharding();
  return (entry == "{}" || ParseSharding(entry, p->mutable_domain_entry_sharding())) &&
         (exit == "{}" || ParseSharding(exit, p->mutable_domain_exit_sharding()));
}
std::optional<std::string> RenderDomain(const Proto& p) {
  if (!p.has_domain_entry_sharding() && !p.has_domain_exit_sharding()) return std::nullopt;
  const std::string entry = p.has_domain_entry_sharding() ? RenderSharding(p.domain_entry_sharding()) : "{}";
  const std::string exit = p.has_domain_exit_sharding() ? RenderSharding(p.domain_exit_sharding()) : "{}";
  if (entry.empty() || exit.empty()) return std::nullopt;
  return absl::StrCat("{kind=\"sharding\", entry=", entry, ", exit=", exit, "}");
}

// `parameter_replication={false,true}`.
bool ParseBoolList(absl::string_view s, google::protobuf::RepeatedField<bool>* out) {
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return false;
  s = s.substr(1, s.size() - 2);
  out->Clear();
  if (s.empty()) return true;
  for (absl::string_view b : absl::StrSplit(s, ',')) {
    if (b != "true" && b != "false") return false;
    out->Add(b == "true");
  }
  return true;
}
std::string BoolList(const google::protobuf::RepeatedField<bool>& list) {
  std::vector<const char*> parts;
  for (bool b : list) parts.push_back(b ? "true" : "false");
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

// An enum value as XLA prints it: its proto name without `prefix`,
// lower-cased when `lower` (`RNG_UNIFORM` -> `rng_uniform`,
// `ALG_DOT_BF16_BF16_F32` -> `dot_bf16_bf16_f32`, `FFT` as is).
std::optional<std::string> EnumText(const google::protobuf::EnumDescriptor* d, int value,
                                    absl::string_view prefix, bool lower) {
  const google::protobuf::EnumValueDescriptor* v = d->FindValueByNumber(value);
  if (v == nullptr || !absl::StartsWith(v->name(), prefix)) return std::nullopt;
  std::string name = v->name().substr(prefix.size());
  return lower ? absl::AsciiStrToLower(name) : name;
}
bool ParseEnumText(const google::protobuf::EnumDescriptor* d, absl::string_view text,
                   absl::string_view prefix, bool lower, int* value) {
  const std::string name = absl::StrCat(prefix, lower ? absl::AsciiStrToUpper(text) : std::string(text));
  const google::protobuf::EnumValueDescriptor* v = d->FindValueByName(name);
  if (v == nullptr) return false;
  *value = v->number();
  return true;
}

// Boolean, integer, string and integer-list fields.
#define HILO_BOOL_MAPPER(attr, field)                                              \
  Mapper {                                                                         \
    attr, nullptr,                                                                 \
        [](absl::string_view v, Proto* p) {                                        \
          if (v != "true" && v != "false") return false;                           \
          p->set_##field(v == "true");                                             \
          return true;                                                             \
        },                                                                         \
        [](const Proto& p) -> std::optional<std::string> {                         \
          if (!p.field()) return std::nullopt;                                     \
          return std::string("true");                                              \
        }                                                                          \
  }
#define HILO_INT_MAPPER(attr, field, applies, default_value)                       \
  Mapper {                                                                         \
    attr, applies,                                                                 \
        [](absl::string_view v, Proto* p) {                                        \
          std::optional<int64_t> n = ParseInt(v);                                  \
          if (!n.has_value()) return false;                                        \
          p->set_##field(static_cast<decltype(p->field())>(*n));                   \
          return static_cast<int64_t>(p->field()) == *n;                           \
        },                                                                         \
        [](const Proto& p) -> std::optional<std::string> {                         \
          if (p.field() == 0 || p.field() == default_value) return std::nullopt;   \
          return absl::StrCat(p.field());                                          \
        }                                                                          \
  }
#define HILO_INDEX_VECTOR_DIM_MAPPER(applies, dnums)                               \
  Mapper {                                                                         \
    "index_vector_dim", applies,                                                   \
        [](absl::string_view v, Proto* p) {                                        \
          std::optional<int64_t> n = ParseInt(v);                                  \
          if (!n.has_value()) return false;                                        \
          p->mutable_##dnums()->set_index_vector_dim(*n);                          \
          return true;                                                             \
        },                                                                         \
        [](const Proto& p) -> std::optional<std::string> {                         \
          if (!p.has_##dnums()) return std::nullopt;                               \
          return absl::StrCat(p.dnums().index_vector_dim());                       \
        }                                                                          \
  }
#define HILO_STRING_MAPPER(attr, field, quoted)                                    \
  Mapper {                                                                         \
    attr, nullptr,                                                                 \
        [](absl::string_view v, Proto* p) {                                        \
          if (quoted) {                                                            \
            std::optional<std::string> s = ParseQuoted(v);                         \
            if (!s.has_value()) return false;                                      \
            p->set_##field(*s);                                                    \
          } else {                                                                 \
            p->set_##field(std::string(v));                                        \
          }                                                                        \
          return true;                                                             \
        },                                                                         \
        [](const Proto& p) -> std::optional<std::string> {                         \
          if (p.field().empty()) return std::nullopt;                              \
          return quoted ? Quoted(p.field()) : p.field();                           \
        }                                                                          \
  }
// A repeated int64 field of message `msg` (`msg.` may be empty).
#define HILO_LIST_MAPPER(attr, applies, has, getter, mutable_getter, always)       \
  Mapper {                                                                         \
    attr, applies,                                                                 \
        [](absl::string_view v, Proto* p) {                                        \
          std::optional<Ints> l = ParseIntList(v);                                 \
          if (!l.has_value()) return false;                                        \
          auto* f = p->mutable_getter;                                             \
          f->Clear();                                                              \
          for (int64_t x : *l) f->Add(x);                                          \
          return true;                                                             \
        },                                                                         \
        [](const Proto& p) -> std::optional<std::string> {                         \
          if (!(p.has) || (!(always) && p.getter.empty())) return std::nullopt;    \
          return IntList(p.getter);                                                \
        }                                                                          \
  }

// An enum field (`getter`, set by `setter`, of enum type `type`), printed
// by XLA as its name without `prefix`, lower-cased when `lower`; written
// for every instruction of its opcodes when `always`, else when not 0.
#define HILO_ENUM_MAPPER(attr, applies, getter, setter, type, prefix, lower, always) \
  Mapper {                                                                         \
    attr, applies,                                                                 \
        [](absl::string_view v, Proto* p) {                                        \
          int n;                                                                   \
          if (!ParseEnumText(google::protobuf::GetEnumDescriptor<type>(), v, prefix, lower, &n)) \
            return false;                                                          \
          p->setter(static_cast<type>(n));                                         \
          return true;                                                             \
        },                                                                         \
        [](const Proto& p) -> std::optional<std::string> {                         \
          if (!(always) && static_cast<int>(p.getter) == 0) return std::nullopt;   \
          return EnumText(google::protobuf::GetEnumDescriptor<type>(),             \
                          static_cast<int>(p.getter), prefix, lower);              \
        }                                                                          \
  }
// A boolean field of an options message, printed (`=true`) only when true.
#define HILO_OPTION_BOOL_MAPPER(attr, applies, getter, setter)                     \
  Mapper {                                                                         \
    attr, applies,                                                                 \
        [](absl::string_view v, Proto* p) {                                        \
          if (v != "true" && v != "false") return false;                           \
          p->setter(v == "true");                                                  \
          return true;                                                             \
        },                                                                         \
        [](const Proto& p) -> std::optional<std::string> {                         \
          if (!p.getter) return std::nullopt;                                      \
          return std::string("true");                                              \
        }                                                                          \
  }

const std::vector<Mapper>& Mappers() {
  static const std::vector<Mapper>* const kMappers = new std::vector<Mapper>{
      // In the order XLA's printer writes them.
      Mapper{"slice", nullptr, ParseSlice,
             [](const Proto& p) -> std::optional<std::string> {
               if (p.slice_dimensions_size() == 0) return std::nullopt;
               return RenderSlice(p);
             }},
      HILO_LIST_MAPPER("dynamic_slice_sizes", nullptr, dynamic_slice_sizes_size() > 0,
                       dynamic_slice_sizes(), mutable_dynamic_slice_sizes(), false),
      Mapper{"padding", [](HloOpcode op) { return op == HloOpcode::kPad; },
             [](absl::string_view v, Proto* p) { return ParsePadding(v, p->mutable_padding_config()); },
             [](const Proto& p) -> std::optional<std::string> {
               if (!p.has_padding_config()) return std::nullopt;
               return RenderPadding(p.padding_config());
             }},
      Mapper{"window", nullptr,
             [](absl::string_view v, Proto* p) { return ParseWindow(v, p->mutable_window()); },
             [](const Proto& p) -> std::optional<std::string> {
               if (!p.has_window()) return std::nullopt;
               return RenderWindow(p.window());
             }},
      Mapper{"dim_labels", IsConvolution,
             [](absl::string_view v, Proto* p) {
               return ParseDimLabels(v, p->mutable_convolution_dimension_numbers());
             },
             [](const Proto& p) -> std::optional<std::string> {
               if (!p.has_convolution_dimension_numbers()) return std::nullopt;
               return RenderDimLabels(p.convolution_dimension_numbers());
             }},
      HILO_INT_MAPPER("feature_group_count", feature_group_count, nullptr, 1),
      HILO_INT_MAPPER("batch_group_count", batch_group_count, nullptr, 1),
      HILO_LIST_MAPPER("offset_dims", IsGather, has_gather_dimension_numbers(),
                       gather_dimension_numbers().offset_dims(),
                       mutable_gather_dimension_numbers()->mutable_offset_dims(), true),
      HILO_LIST_MAPPER("collapsed_slice_dims", IsGather, has_gather_dimension_numbers(),
                       gather_dimension_numbers().collapsed_slice_dims(),
                       mutable_gather_dimension_numbers()->mutable_collapsed_slice_dims(), true),
      HILO_LIST_MAPPER("start_index_map", IsGather, has_gather_dimension_numbers(),
                       gather_dimension_numbers().start_index_map(),
                       mutable_gather_dimension_numbers()->mutable_start_index_map(), true),
      HILO_LIST_MAPPER("operand_batching_dims", IsGather, has_gather_dimension_numbers(),
                       gather_dimension_numbers().operand_batching_dims(),
                       mutable_gather_dimension_numbers()->mutable_operand_batching_dims(), false),
      HILO_LIST_MAPPER("start_indices_batching_dims", IsGather, has_gather_dimension_numbers(),
                       gather_dimension_numbers().start_indices_batching_dims(),
                       mutable_gather_dimension_numbers()->mutable_start_indices_batching_dims(), false),
      HILO_LIST_MAPPER("update_window_dims", IsScatter, has_scatter_dimension_numbers(),
                       scatter_dimension_numbers().update_window_dims(),
                       mutable_scatter_dimension_numbers()->mutable_update_window_dims(), true),
      HILO_LIST_MAPPER("inserted_window_dims", IsScatter, has_scatter_dimension_numbers(),
                       scatter_dimension_numbers().inserted_window_dims(),
                       mutable_scatter_dimension_numbers()->mutable_inserted_window_dims(), true),
      HILO_LIST_MAPPER("scatter_dims_to_operand_dims", IsScatter, has_scatter_dimension_numbers(),
                       scatter_dimension_numbers().scatter_dims_to_operand_dims(),
                       mutable_scatter_dimension_numbers()->mutable_scatter_dims_to_operand_dims(), true),
      HILO_LIST_MAPPER("input_batching_dims", IsScatter, has_scatter_dimension_numbers(),
                       scatter_dimension_numbers().input_batching_dims(),
                       mutable_scatter_dimension_numbers()->mutable_input_batching_dims(), false),
      HILO_LIST_MAPPER("scatter_indices_batching_dims", IsScatter, has_scatter_dimension_numbers(),
                       scatter_dimension_numbers().scatter_indices_batching_dims(),
                       mutable_scatter_dimension_numbers()->mutable_scatter_indices_batching_dims(),
                       false),
      // One per message, chosen by opcode: the attribute may come before
      // any other dimension-numbers attribute in the text.
      HILO_INDEX_VECTOR_DIM_MAPPER(IsGather, gather_dimension_numbers),
      HILO_INDEX_VECTOR_DIM_MAPPER(IsScatter, scatter_dimension_numbers),
      HILO_LIST_MAPPER("slice_sizes", IsGather, gather_slice_sizes_size() > 0, gather_slice_sizes(),
                       mutable_gather_slice_sizes(), false),
      HILO_BOOL_MAPPER("indices_are_sorted", indices_are_sorted),
      HILO_BOOL_MAPPER("unique_indices", unique_indices),
      HILO_STRING_MAPPER("direction", comparison_direction, false),
      HILO_STRING_MAPPER("type", comparison_type, false),
      HILO_STRING_MAPPER("kind", fusion_kind, false),
      HILO_INT_MAPPER("exponent_bits", exponent_bits, nullptr, 0),
      HILO_INT_MAPPER("mantissa_bits", mantissa_bits, nullptr, 0),
      // batch-norm-*: XLA prints epsilon, then feature_index.
      Mapper{"epsilon", IsBatchNorm,
             [](absl::string_view v, Proto* p) {
               float f;
               if (!absl::SimpleAtof(v, &f)) return false;
               p->set_epsilon(f);
               return true;
             },
             [](const Proto& p) -> std::optional<std::string> { return absl::StrCat(p.epsilon()); }},
      HILO_INT_MAPPER("feature_index", feature_index, nullptr, 0),
      HILO_INT_MAPPER("k", k, nullptr, 0),
      HILO_BOOL_MAPPER("largest", largest),
      HILO_BOOL_MAPPER("is_stable", is_stable),
      HILO_BOOL_MAPPER("custom_call_has_side_effect", custom_call_has_side_effect),
      HILO_BOOL_MAPPER("is_host_transfer", is_host_transfer),
      HILO_STRING_MAPPER("async_execution_thread", async_execution_thread, true),
      HILO_STRING_MAPPER("infeed_config", infeed_config, true),
      HILO_STRING_MAPPER("outfeed_config", outfeed_config, true),
      HILO_BOOL_MAPPER("is_composite", is_composite),
      // Opcode-specific fields XLA's printers write after the common ones.
      // iota: XLA keeps its dimension as the one entry of `dimensions`.
      Mapper{"iota_dimension", [](HloOpcode op) { return op == HloOpcode::kIota; },
             [](absl::string_view v, Proto* p) {
               std::optional<int64_t> n = ParseInt(v);
               if (!n.has_value()) return false;
               p->clear_dimensions();
               p->add_dimensions(*n);
               return true;
             },
             [](const Proto& p) -> std::optional<std::string> {
               if (p.dimensions_size() != 1) return std::nullopt;
               return absl::StrCat(p.dimensions(0));
             }},
      HILO_ENUM_MAPPER("distribution", [](HloOpcode op) { return op == HloOpcode::kRng; },
                       distribution(), set_distribution, xla::RandomDistribution, "", true, true),
      HILO_ENUM_MAPPER("algorithm", IsRngBitGenerator, rng_algorithm(), set_rng_algorithm,
                       xla::RandomAlgorithm, "", true, true),
      HILO_ENUM_MAPPER("algorithm", [](HloOpcode op) { return !IsRngBitGenerator(op); },
                       precision_config().algorithm(), mutable_precision_config()->set_algorithm,
                       xla::PrecisionConfig::Algorithm, "ALG_", true, false),
      HILO_ENUM_MAPPER("fft_type", IsFft, fft_type(), set_fft_type, xla::FftType, "", false, true),
      HILO_LIST_MAPPER("fft_length", IsFft, fft_length_size() >= 0, fft_length(), mutable_fft_length(),
                       true),
      HILO_OPTION_BOOL_MAPPER("left_side", IsTriangularSolve, triangular_solve_options().left_side(),
                              mutable_triangular_solve_options()->set_left_side),
      HILO_OPTION_BOOL_MAPPER("lower", IsTriangularSolve, triangular_solve_options().lower(),
                              mutable_triangular_solve_options()->set_lower),
      HILO_OPTION_BOOL_MAPPER("unit_diagonal", IsTriangularSolve,
                              triangular_solve_options().unit_diagonal(),
                              mutable_triangular_solve_options()->set_unit_diagonal),
      HILO_ENUM_MAPPER("transpose_a", IsTriangularSolve, triangular_solve_options().transpose_a(),
                       mutable_triangular_solve_options()->set_transpose_a,
                       xla::TriangularSolveOptions::Transpose, "", false, true),
      HILO_OPTION_BOOL_MAPPER("lower", [](HloOpcode op) { return op == HloOpcode::kCholesky; },
                              cholesky_options().lower(), mutable_cholesky_options()->set_lower),
      HILO_INT_MAPPER("delta", delta, [](HloOpcode op) { return op == HloOpcode::kRngGetAndUpdateState; },
                      0),
      Mapper{"parameter_replication", [](HloOpcode op) { return op == HloOpcode::kParameter; },
             [](absl::string_view v, Proto* p) {
               return ParseBoolList(v, p->mutable_parameter_replication()->mutable_replicated_at_leaf_buffers());
             },
             [](const Proto& p) -> std::optional<std::string> {
               if (p.parameter_replication().replicated_at_leaf_buffers_size() == 0) return std::nullopt;
               return BoolList(p.parameter_replication().replicated_at_leaf_buffers());
             }},
      Mapper{"cross_program_prefetch_index", [](HloOpcode op) { return op == HloOpcode::kCopyStart; },
             [](absl::string_view v, Proto* p) {
               std::optional<int64_t> n = ParseInt(v);
               if (!n.has_value() || *n < INT32_MIN || *n > INT32_MAX) return false;
               p->set_cross_program_prefetch_index(static_cast<int32_t>(*n));
               return true;
             },
             [](const Proto& p) -> std::optional<std::string> {
               if (!p.has_cross_program_prefetch_index()) return std::nullopt;
               return absl::StrCat(p.cross_program_prefetch_index());
             }},
      // A custom-call's layout constraints (XLA also sets constrain_layout,
      // which its printer does not write for a custom-call).
      Mapper{"operand_layout_constraints", [](HloOpcode op) { return op == HloOpcode::kCustomCall; },
             [](absl::string_view v, Proto* p) {
               if (v.size() < 2 || v.front() != '{' || v.back() != '}') return false;
               if (!ParseShapesInto(v.substr(1, v.size() - 2), p->mutable_operand_shapes_with_layout())) {
                 return false;
               }
               p->set_constrain_layout(true);
               return true;
             },
             [](const Proto& p) -> std::optional<std::string> {
               if (p.operand_shapes_with_layout_size() == 0) return std::nullopt;
               std::optional<std::string> shapes = RenderShapes(p.operand_shapes_with_layout());
               if (!shapes.has_value()) return std::nullopt;
               return absl::StrCat("{", *shapes, "}");
             }},
      Mapper{"outfeed_shape", [](HloOpcode op) { return op == HloOpcode::kOutfeed; },
             [](absl::string_view v, Proto* p) {
               google::protobuf::RepeatedPtrField<xla::ShapeProto> one;
               if (!ParseShapesInto(v, &one) || one.size() != 1) return false;
               *p->mutable_outfeed_shape() = one.Get(0);
               return true;
             },
             [](const Proto& p) -> std::optional<std::string> {
               if (!p.has_outfeed_shape()) return std::nullopt;
               google::protobuf::RepeatedPtrField<xla::ShapeProto> one;
               *one.Add() = p.outfeed_shape();
               return RenderShapes(one);
             }},
      Mapper{"domain", [](HloOpcode op) { return op == HloOpcode::kDomain; }, ParseDomain, RenderDomain},
      Mapper{"output_to_operand_aliasing", nullptr, ParseOutputOperandAliasing, RenderOutputOperandAliasing},
      HILO_ENUM_MAPPER("schedule", [](HloOpcode op) { return op == HloOpcode::kCustomCall; },
                       custom_call_schedule(), set_custom_call_schedule, xla::CustomCallSchedule, "",
                       false, false),
      Mapper{"operand_precision", nullptr,
             [](absl::string_view v, Proto* p) { return ParsePrecision(v, p->mutable_precision_config()); },
             [](const Proto& p) -> std::optional<std::string> {
               // XLA writes DEFAULT for every operand of every dot and prints
               // the attribute only when one is not DEFAULT.
               bool all_default = true;
               for (int v : p.precision_config().operand_precision()) all_default &= v == 0;
               if (all_default) return std::nullopt;
               return RenderPrecision(p.precision_config());
             }},
  };
  return *kMappers;
}

void ClearMapped(HloOpcode opcode, Proto* p) {
  p->clear_comparison_direction();
  p->clear_comparison_type();
  p->clear_fusion_kind();
  p->clear_async_execution_thread();
  p->clear_infeed_config();
  p->clear_outfeed_config();
  p->clear_custom_call_has_side_effect();
  p->clear_is_stable();
  p->clear_is_host_transfer();
  p->clear_indices_are_sorted();
  p->clear_unique_indices();
  p->clear_largest();
  p->clear_is_composite();
  p->clear_exponent_bits();
  p->clear_mantissa_bits();
  p->clear_feature_index();
  p->clear_feature_group_count();
  p->clear_batch_group_count();
  p->clear_k();
  p->clear_dynamic_slice_sizes();
  p->clear_gather_slice_sizes();
  p->clear_gather_dimension_numbers();
  p->clear_scatter_dimension_numbers();
  p->clear_slice_dimensions();
  p->clear_window();
  p->clear_convolution_dimension_numbers();
  p->clear_padding_config();
  p->clear_precision_config();
  p->clear_distribution();
  p->clear_rng_algorithm();
  p->clear_fft_type();
  p->clear_fft_length();
  p->clear_triangular_solve_options();
  p->clear_cholesky_options();
  p->clear_epsilon();
  p->clear_delta();
  p->clear_parameter_replication();
  p->clear_cross_program_prefetch_index();
  p->clear_output_operand_aliasing();
  p->clear_custom_call_schedule();
  // Fields other opcodes may carry unmapped (kept opaque for them).
  if (opcode == HloOpcode::kIota) p->clear_dimensions();  // the others' are read before
  if (opcode == HloOpcode::kCustomCall) p->clear_operand_shapes_with_layout();
  if (opcode == HloOpcode::kOutfeed) p->clear_outfeed_shape();
  if (opcode == HloOpcode::kDomain) {
    p->clear_domain_entry_sharding();
    p->clear_domain_exit_sharding();
  }
}

// ---------------------------------------------------------------- sharding

const char* TypeName(int t) {
  switch (t) {
    case xla::OpSharding::REPLICATED: return "replicate";
    case xla::OpSharding::MANUAL: return "manual";
    case xla::OpSharding::UNREDUCED: return "unreduced";
    default: return nullptr;
  }
}

std::optional<std::string> RenderOne(const xla::OpSharding& s) {
  switch (s.type()) {
    case xla::OpSharding::REPLICATED: return "{replicated}";
    case xla::OpSharding::MANUAL: return "{manual}";
    case xla::OpSharding::UNKNOWN: return "{unknown}";
    case xla::OpSharding::MAXIMAL:
      if (s.tile_assignment_devices_size() != 1) return std::nullopt;
      return absl::StrCat("{maximal device=", s.tile_assignment_devices(0), "}");
    case xla::OpSharding::OTHER: {
      std::string out = absl::StrCat("{devices=[", absl::StrJoin(s.tile_assignment_dimensions(), ","), "]");
      if (s.iota_reshape_dims_size() > 0) {
        absl::StrAppend(&out, "<=[", absl::StrJoin(s.iota_reshape_dims(), ","), "]");
        bool identity = true;
        for (int i = 0; i < s.iota_transpose_perm_size(); ++i) identity &= s.iota_transpose_perm(i) == i;
        if (!identity) absl::StrAppend(&out, "T(", absl::StrJoin(s.iota_transpose_perm(), ","), ")");
      } else {
        absl::StrAppend(&out, absl::StrJoin(s.tile_assignment_devices(), ","));
      }
      if (s.replicate_on_last_tile_dim()) out += " last_tile_dim_replicate";
      if (s.last_tile_dims_size() > 0) {
        std::vector<std::string> names;
        for (int t : s.last_tile_dims()) {
          const char* n = TypeName(t);
          if (n == nullptr) return std::nullopt;
          names.push_back(n);
        }
        absl::StrAppend(&out, " last_tile_dims={", absl::StrJoin(names, ", "), "}");
      }
      return out + "}";
    }
    default:
      return std::nullopt;
  }
}

std::optional<std::string> Render(const xla::OpSharding& s) {
  if (s.is_shard_group() || s.metadata_size() > 0) return std::nullopt;
  if (s.type() != xla::OpSharding::TUPLE) return RenderOne(s);
  std::vector<std::string> parts;
  for (const xla::OpSharding& e : s.tuple_shardings()) {
    if (e.type() == xla::OpSharding::TUPLE || e.is_shard_group() || e.metadata_size() > 0) return std::nullopt;
    std::optional<std::string> r = RenderOne(e);
    if (!r.has_value()) return std::nullopt;
    parts.push_back(*r);
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

bool ParseOne(absl::string_view s, xla::OpSharding* out) {
  if (s.size() < 2 || s.front() != '{' || s.back() != '}') return false;
  s = s.substr(1, s.size() - 2);
  if (s == "replicated") {
    out->set_type(xla::OpSharding::REPLICATED);
    return true;
  }
  if (s == "manual") {
    out->set_type(xla::OpSharding::MANUAL);
    return true;
  }
  if (s == "unknown") {
    out->set_type(xla::OpSharding::UNKNOWN);
    return true;
  }
  if (absl::ConsumePrefix(&s, "maximal device=")) {
    std::optional<int64_t> d = ParseInt(s);
    if (!d.has_value()) return false;
    out->set_type(xla::OpSharding::MAXIMAL);
    out->add_tile_assignment_devices(*d);
    out->add_tile_assignment_dimensions(1);
    return true;
  }
  if (!absl::ConsumePrefix(&s, "devices=[")) return false;
  const size_t close = s.find(']');
  if (close == absl::string_view::npos) return false;
  std::optional<Ints> dims = ParseIntList(absl::StrCat("{", s.substr(0, close), "}"));
  if (!dims.has_value()) return false;
  out->set_type(xla::OpSharding::OTHER);
  for (int64_t d : *dims) out->add_tile_assignment_dimensions(d);
  s.remove_prefix(close + 1);
  const size_t space = s.find(' ');
  absl::string_view devices = s.substr(0, space);
  absl::string_view rest = space == absl::string_view::npos ? "" : s.substr(space + 1);
  if (absl::ConsumePrefix(&devices, "<=[")) {
    const size_t c = devices.find(']');
    if (c == absl::string_view::npos) return false;
    std::optional<Ints> reshape = ParseIntList(absl::StrCat("{", devices.substr(0, c), "}"));
    if (!reshape.has_value()) return false;
    for (int64_t d : *reshape) out->add_iota_reshape_dims(d);
    devices.remove_prefix(c + 1);
    if (absl::ConsumePrefix(&devices, "T(")) {
      if (devices.empty() || devices.back() != ')') return false;
      std::optional<Ints> perm = ParseIntList(absl::StrCat("{", devices.substr(0, devices.size() - 1), "}"));
      if (!perm.has_value()) return false;
      for (int64_t d : *perm) out->add_iota_transpose_perm(static_cast<int32_t>(d));
    } else {
      if (!devices.empty()) return false;
      for (int i = 0; i < out->iota_reshape_dims_size(); ++i) out->add_iota_transpose_perm(i);
    }
  } else {
    std::optional<Ints> ids = ParseIntList(absl::StrCat("{", devices, "}"));
    if (!ids.has_value()) return false;
    for (int64_t d : *ids) out->add_tile_assignment_devices(d);
  }
  if (rest == "last_tile_dim_replicate") {
    out->set_replicate_on_last_tile_dim(true);
  } else if (absl::ConsumePrefix(&rest, "last_tile_dims={")) {
    if (rest.empty() || rest.back() != '}') return false;
    for (absl::string_view n : absl::StrSplit(rest.substr(0, rest.size() - 1), ", ")) {
      if (n == "replicate") out->add_last_tile_dims(xla::OpSharding::REPLICATED);
      else if (n == "manual") out->add_last_tile_dims(xla::OpSharding::MANUAL);
      else if (n == "unreduced") out->add_last_tile_dims(xla::OpSharding::UNREDUCED);
      else return false;
    }
  } else if (!rest.empty()) {
    return false;
  }
  return true;
}

}  // namespace

bool EncodeTextAttribute(HloOpcode opcode, absl::string_view name, absl::string_view value,
                         xla::HloInstructionProto* proto) {
  for (const Mapper& m : Mappers()) {
    if (name != m.name || (m.applies != nullptr && !m.applies(opcode))) continue;
    if (!m.encode(value, proto)) return false;
    std::optional<std::string> back = m.decode(*proto);
    return back.has_value() && *back == value;
  }
  return false;
}

absl::Status DecodeTextAttributes(HloOpcode opcode,
                                  absl::FunctionRef<bool(absl::string_view)> wanted,
                                  xla::HloInstructionProto* proto, std::vector<RawAttribute>* raws) {
  for (const Mapper& m : Mappers()) {
    if (m.applies != nullptr && !m.applies(opcode)) continue;
    // Most fields are unset: that is the cheap test, so it comes first.
    std::optional<std::string> text = m.decode(*proto);
    if (text.has_value() && wanted(m.name)) raws->push_back({m.name, *std::move(text)});
  }
  ClearMapped(opcode, proto);
  return absl::OkStatus();
}

bool DecodesFromEmptyMessage(HloOpcode opcode) {
  static const std::vector<bool>* const kDecodes = [] {
    auto* decodes = new std::vector<bool>(kHloOpcodeCount, false);
    for (int op = 0; op < kHloOpcodeCount; ++op) {
      const HloOpcode opcode = static_cast<HloOpcode>(op);
      for (const Mapper& m : Mappers()) {
        if (m.applies != nullptr && !m.applies(opcode)) continue;
        if (m.decode(Proto::default_instance()).has_value()) (*decodes)[op] = true;
      }
    }
    return decodes;
  }();
  const int op = static_cast<int>(opcode);
  return op < 0 || op >= kHloOpcodeCount || (*kDecodes)[op];
}

bool EncodeHeaderAttribute(absl::string_view name, absl::string_view value,
                           xla::HloModuleProto* proto) {
  if (name == "input_output_alias") {
    const bool parsed = ParseInputOutputAlias(value, proto->mutable_input_output_alias());
    if (!parsed) proto->clear_input_output_alias();
    return parsed && RenderInputOutputAlias(proto->input_output_alias()) == value;
  }
  if (name == "buffer_donor") {
    const bool parsed = ParseBufferDonor(value, proto->mutable_buffer_donor());
    if (!parsed) proto->clear_buffer_donor();
    return parsed && RenderBufferDonor(proto->buffer_donor()) == value;
  }
  return false;
}

std::optional<std::string> DecodeHeaderAttribute(absl::string_view name, xla::HloModuleProto* proto) {
  std::optional<std::string> text;
  if (name == "input_output_alias" && proto->input_output_alias().entries_size() > 0) {
    text = RenderInputOutputAlias(proto->input_output_alias());
    proto->clear_input_output_alias();
  } else if (name == "buffer_donor" && proto->buffer_donor().entries_size() > 0) {
    text = RenderBufferDonor(proto->buffer_donor());
    proto->clear_buffer_donor();
  }
  return text;
}

namespace {

// `{(p0, p1, ...)->result}` -> the parameters' text and the result's; false
// when the text is not of that form. The parameters end at the `)` closing
// the first `(`.
bool SplitEntryComputationLayout(absl::string_view text, absl::string_view* parameters, absl::string_view* result) {
  if (!absl::ConsumePrefix(&text, "{(") || !absl::ConsumeSuffix(&text, "}")) return false;
  size_t close = absl::string_view::npos;
  int depth = 0;
  for (size_t i = 0; i < text.size() && close == absl::string_view::npos; ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && depth-- == 0) close = i;
  }
  if (close == absl::string_view::npos) return false;
  *result = text.substr(close + 1);
  *parameters = text.substr(0, close);
  return absl::ConsumePrefix(result, "->");
}

}  // namespace

bool EntryComputationLayoutPieces(absl::string_view text, std::vector<absl::string_view>* parameters,
                                  absl::string_view* result) {
  absl::string_view params;
  if (!SplitEntryComputationLayout(text, &params, result)) return false;
  parameters->clear();
  if (absl::StripAsciiWhitespace(params).empty()) return true;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= params.size(); ++i) {
    if (i == params.size() || (params[i] == ',' && depth == 0)) {
      parameters->push_back(absl::StripAsciiWhitespace(params.substr(start, i - start)));
      start = i + 1;
    } else if (params[i] == '(' || params[i] == '[' || params[i] == '{') {
      ++depth;
    } else if (params[i] == ')' || params[i] == ']' || params[i] == '}') {
      --depth;
    }
  }
  return true;
}

bool EntryComputationLayoutShapes(absl::string_view text, std::vector<Shape>* parameters, Shape* result) {
  absl::string_view params_text, rest;
  if (!SplitEntryComputationLayout(text, &params_text, &rest)) return false;
  absl::StatusOr<std::vector<Shape>> params = ParseShapeList(params_text);
  absl::StatusOr<std::vector<Shape>> results = ParseShapeList(rest);
  if (!params.ok() || !results.ok() || results->size() != 1) return false;
  *parameters = *std::move(params);
  *result = std::move(results->front());
  return true;
}

bool EntryComputationLayoutToProto(absl::string_view text, xla::ProgramShapeProto* program_shape) {
  std::vector<Shape> params;
  Shape result;
  if (!EntryComputationLayoutShapes(text, &params, &result) ||
      static_cast<int>(params.size()) != program_shape->parameters_size()) {
    return false;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    xla::ShapeProto* sp = program_shape->mutable_parameters(static_cast<int>(i));
    sp->Clear();
    ShapeToProto(params[i], sp);
  }
  program_shape->mutable_result()->Clear();
  ShapeToProto(result, program_shape->mutable_result());
  return true;
}

const std::vector<std::string>& MappedHeaderAttributes() {
  static const std::vector<std::string>* const kNames =
      new std::vector<std::string>{"input_output_alias", "buffer_donor"};
  return *kNames;
}

bool ParseSharding(absl::string_view text, xla::OpSharding* sharding) {
  sharding->Clear();
  if (text.size() >= 2 && text[0] == '{' && text[1] == '{') {
    if (text.back() != '}') return false;
    absl::string_view inner = text.substr(1, text.size() - 2);
    sharding->set_type(xla::OpSharding::TUPLE);
    // Elements are `{...}` without nested braces, except last_tile_dims={...}.
    size_t i = 0;
    while (i < inner.size()) {
      if (inner[i] != '{') return false;
      int depth = 0;
      size_t j = i;
      for (; j < inner.size(); ++j) {
        if (inner[j] == '{') ++depth;
        if (inner[j] == '}' && --depth == 0) break;
      }
      if (j >= inner.size()) return false;
      if (!ParseOne(inner.substr(i, j - i + 1), sharding->add_tuple_shardings())) return false;
      i = j + 1;
      if (i < inner.size()) {
        if (inner.substr(i, 2) != ", ") return false;
        i += 2;
      }
    }
    return true;
  }
  return ParseOne(text, sharding);
}

std::string RenderSharding(const xla::OpSharding& sharding) {
  return Render(sharding).value_or("");
}

absl::StatusOr<std::string> RenderShardingChecked(const xla::OpSharding& sharding) {
  std::optional<std::string> r = Render(sharding);
  if (!r.has_value()) {
    return absl::UnimplementedError(
        "sharding with metadata, shard groups or a nested tuple is not converted to text");
  }
  return *r;
}

}  // namespace hilo
