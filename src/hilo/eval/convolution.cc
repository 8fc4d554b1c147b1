// convolution, with XLA's HloEvaluator as the reference for the semantics:
// any dim_labels, window strides, padding (negative too), lhs (base) and rhs
// (window) dilation, window reversal, feature_group_count and
// batch_group_count. Computed as im2col + matrix product: for each group,
// blocks of output positions gather their input patches into a matrix that
// Eigen's blocked kernel multiplies by the group's kernel matrix.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "hilo/eval/ops_internal.h"

namespace hilo {
namespace eval {
namespace {

// The positions of the batch/feature (or output/input feature) dimension and
// of each spatial dimension in one part of dim_labels.
struct Labels {
  int64_t major = -1;  // 'b' (lhs, output) or 'o' (kernel)
  int64_t minor = -1;  // 'f' (lhs, output) or 'i' (kernel)
  std::vector<int64_t> spatial;
};

// One part of `b01f_01io->b01f`: `major`/`minor` are the two letters, digits
// name spatial dimensions 0..rank-3, each exactly once.
bool ParseLabels(absl::string_view part, char major, char minor, int64_t rank, Labels* out) {
  if (static_cast<int64_t>(part.size()) != rank) return false;
  out->spatial.assign(rank - 2, -1);
  for (int64_t p = 0; p < rank; ++p) {
    const char c = part[p];
    int64_t* slot = nullptr;
    if (c == major) slot = &out->major;
    else if (c == minor) slot = &out->minor;
    else if (c >= '0' && c <= '9' && c - '0' < rank - 2) slot = &out->spatial[c - '0'];
    if (slot == nullptr || *slot != -1) return false;
    *slot = p;
  }
  return true;
}

// What every block of a convolution needs. T is float, double or uint64_t
// (wrapping integers).
template <typename T>
struct ConvPlan {
  const std::vector<T>* lhs;  // lhs converted to the output type
  std::vector<int64_t> lhs_strides;
  Labels in, out_labels;
  std::vector<int64_t> out_strides;
  int64_t out_batch = 0;       // output batch size (lhs batch / batch_group_count)
  int64_t in_features = 0;     // kernel input features (per group)
  int64_t window_elems = 1;    // product of window sizes
  std::vector<int64_t> out_spatial, window_size;
  // Per spatial dimension k: input index of (output position o, window
  // element w) at [o * size + w], -1 for padding and dilation holes.
  std::vector<std::vector<int64_t>> input_index;
};

// The output of lhs batches [batch_offset, batch_offset + out_batch) and
// `kernels.size()` feature groups. Rows are output positions (batch-major,
// then spatial row-major); the patch matrix holds every input feature of the
// groups, column c * W + w for feature c and window element w, so feature
// group g is the contiguous column range of its I * W columns and one patch
// matrix serves all groups. Group g's kernel matrix is [I * W, og]; its
// result goes to output features out_feature_base + g * og + [0, og).
template <typename T>
void RunBatchSlice(const ConvPlan<T>& plan, const std::vector<std::vector<T>>& kernels, int64_t og,
                   int64_t batch_offset, int64_t out_feature_base, Array* out) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int64_t S = static_cast<int64_t>(plan.out_spatial.size());
  const int64_t W = plan.window_elems, groups = static_cast<int64_t>(kernels.size());
  const int64_t C = plan.in_features * groups, KG = plan.in_features * W, K = C * W;
  int64_t positions = 1;
  for (int64_t d : plan.out_spatial) positions *= d;
  const int64_t rows = plan.out_batch * positions;
  if (rows == 0 || og == 0) return;
  // Rows per block: the patch matrix stays near 2^22 elements.
  const int64_t block = std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(K, 1));
  Matrix patches, result;
  std::vector<int64_t> pos(S), win(S);
  const int64_t feature_stride = plan.lhs_strides[plan.in.minor];
  const int64_t out_fstride = plan.out_strides[plan.out_labels.minor];
  const std::vector<T>& lhs = *plan.lhs;
  std::vector<int64_t> out_row(block);
  for (int64_t row0 = 0; row0 < rows; row0 += block) {
    const int64_t n = std::min(block, rows - row0);
    patches.setZero(n, K);
    for (int64_t r = 0; r < n; ++r) {
      const int64_t row = row0 + r;
      const int64_t b = row / positions;
      int64_t rest = row % positions;
      out_row[r] = b * plan.out_strides[plan.out_labels.major];
      for (int64_t k = S - 1; k >= 0; --k) {
        pos[k] = rest % plan.out_spatial[k];
        rest /= plan.out_spatial[k];
        out_row[r] += pos[k] * plan.out_strides[plan.out_labels.spatial[k]];
      }
      const int64_t base = (b + batch_offset) * plan.lhs_strides[plan.in.major];
      T* dst = patches.data() + r * K;
      std::fill(win.begin(), win.end(), 0);
      for (int64_t w = 0; w < W; ++w) {
        int64_t offset = base;
        bool inside = true;
        for (int64_t k = 0; k < S && inside; ++k) {
          const int64_t i = plan.input_index[k][pos[k] * plan.window_size[k] + win[k]];
          inside = i >= 0;
          offset += i * plan.lhs_strides[plan.in.spatial[k]];
        }
        if (inside) {
          for (int64_t c = 0; c < C; ++c) dst[c * W + w] = lhs[offset + c * feature_stride];
        }
        for (int64_t k = S - 1; k >= 0; --k) {
          if (++win[k] < plan.window_size[k]) break;
          win[k] = 0;
        }
      }
    }
    for (int64_t g = 0; g < groups; ++g) {
      Eigen::Map<const Matrix> kmat(kernels[g].data(), KG, og);
      result.noalias() = patches.middleCols(g * KG, KG) * kmat;
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t o = 0; o < og; ++o) {
          const T v = result(r, o);
          const int64_t at = out_row[r] + (out_feature_base + g * og + o) * out_fstride;
          if constexpr (std::is_same_v<T, uint64_t>) out->SetInt(at, static_cast<int64_t>(v));
          else out->SetDouble(at, static_cast<double>(v));
        }
      }
    }
  }
}

// The values of `a` converted to `type` (the output type: XLA's evaluator
// converts both operands to it), as T.
template <typename T>
std::vector<T> ConvertedValues(const Array& a, PrimitiveType type) {
  std::vector<T> out(a.size());
  Array scratch(type, {});  // the convert instruction's semantics, element by element
  for (int64_t k = 0; k < a.size(); ++k) {
    if constexpr (std::is_same_v<T, uint64_t>) {
      if (a.is_float()) scratch.SetDouble(0, a.GetDouble(k));
      else scratch.SetInt(0, a.is_unsigned() ? static_cast<int64_t>(UnsignedBits(a.type(), a.i()[k])) : a.i()[k]);
      out[k] = static_cast<uint64_t>(scratch.i()[0]);
    } else {
      out[k] = static_cast<T>(RoundToFloatType(type, a.GetDouble(k)));
    }
  }
  return out;
}

template <typename T>
absl::Status Convolve(const Array& lhs, const Array& rhs, ConvPlan<T> plan, const Labels& kernel,
                      const std::vector<WindowDim>& window, int64_t feature_groups, int64_t batch_groups,
                      Array* out) {
  const std::vector<T> lhs_values = ConvertedValues<T>(lhs, out->type());
  const std::vector<T> rhs_values = ConvertedValues<T>(rhs, out->type());
  plan.lhs = &lhs_values;
  const int64_t S = static_cast<int64_t>(window.size());
  const std::vector<int64_t> rhs_strides = RowMajorStrides(rhs.dims());
  const int64_t O = rhs.dims()[kernel.major];
  const int64_t groups = feature_groups * batch_groups;
  const int64_t og = O / groups;
  const int64_t batch_per_group = lhs.dims()[plan.in.major] / batch_groups;
  const int64_t W = plan.window_elems, I = plan.in_features;
  // Kernel matrices: group g's [input feature i * W + window element w, output feature].
  std::vector<std::vector<T>> kernels(groups, std::vector<T>(I * W * og));
  std::vector<int64_t> win(S);
  for (int64_t w = 0; w < W; ++w) {
    int64_t offset = 0;
    for (int64_t k = 0; k < S; ++k) {
      const int64_t wk = window[k].reversal ? window[k].size - 1 - win[k] : win[k];
      offset += wk * rhs_strides[kernel.spatial[k]];
    }
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t c = 0; c < I; ++c) {
        for (int64_t o = 0; o < og; ++o) {
          kernels[g][(c * W + w) * og + o] =
              rhs_values[offset + c * rhs_strides[kernel.minor] + (g * og + o) * rhs_strides[kernel.major]];
        }
      }
    }
    for (int64_t k = S - 1; k >= 0; --k) {
      if (++win[k] < window[k].size) break;
      win[k] = 0;
    }
  }
  if (batch_groups == 1) {
    RunBatchSlice<T>(plan, kernels, og, 0, 0, out);  // every feature group from one patch matrix
  } else {
    // Batch group g: lhs batches [g N/G, (g+1) N/G) to output feature group g.
    for (int64_t g = 0; g < groups; ++g) {
      RunBatchSlice<T>(plan, {kernels[g]}, og, g * batch_per_group, g * og, out);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Array> Convolution(const HloInstruction& instr, const Array& lhs, const Array& rhs) {
  const int64_t rank = lhs.rank();
  if (rhs.rank() != rank || rank < 2) return Error(instr, "lhs and rhs need the same rank, at least 2");
  const std::string* labels = instr.raw_attribute("dim_labels");
  if (labels == nullptr) return Error(instr, "missing attribute dim_labels");
  std::vector<absl::string_view> io = absl::StrSplit(*labels, "->");
  std::vector<absl::string_view> lr;
  if (io.size() == 2) lr = absl::StrSplit(io[0], '_');
  Labels in, kernel, out_labels;
  if (io.size() != 2 || lr.size() != 2 || !ParseLabels(lr[0], 'b', 'f', rank, &in) ||
      !ParseLabels(lr[1], 'o', 'i', rank, &kernel) || !ParseLabels(io[1], 'b', 'f', rank, &out_labels)) {
    return Error(instr, absl::StrCat("dim_labels=", *labels, " does not describe rank-", rank, " operands"));
  }
  int64_t feature_groups = 1, batch_groups = 1;
  if (instr.raw_attribute("feature_group_count") != nullptr) {
    auto v = IntAttribute(instr, "feature_group_count");
    if (!v.ok()) return v.status();
    feature_groups = *v;
  }
  if (instr.raw_attribute("batch_group_count") != nullptr) {
    auto v = IntAttribute(instr, "batch_group_count");
    if (!v.ok()) return v.status();
    batch_groups = *v;
  }
  const int64_t S = rank - 2;
  auto window = WindowAttribute(instr, S);
  if (!window.ok()) return window.status();
  const int64_t N = lhs.dims()[in.major], C = lhs.dims()[in.minor];
  const int64_t I = rhs.dims()[kernel.minor], O = rhs.dims()[kernel.major];
  if (feature_groups < 1 || batch_groups < 1 || (feature_groups > 1 && batch_groups > 1) ||
      C != I * feature_groups || O % (feature_groups * batch_groups) != 0 || N % batch_groups != 0) {
    return Error(instr, absl::StrCat("feature_group_count=", feature_groups, " batch_group_count=", batch_groups,
                                     " do not fit ", lhs.ShapeString(), " and ", rhs.ShapeString()));
  }
  const PrimitiveType out_type = instr.shape().element_type();
  std::vector<int64_t> out_dims(rank);
  out_dims[out_labels.major] = N / batch_groups;
  out_dims[out_labels.minor] = O;
  for (int64_t k = 0; k < S; ++k) {
    const WindowDim& w = (*window)[k];
    if (w.size != rhs.dims()[kernel.spatial[k]]) {
      return Error(instr, absl::StrCat("window size ", w.size, " differs from the kernel's spatial dimension ",
                                       rhs.dims()[kernel.spatial[k]]));
    }
    const int64_t extent = w.OutputSize(lhs.dims()[in.spatial[k]]);
    if (extent < 0) return Error(instr, "a spatial dimension has no valid windowed size");
    out_dims[out_labels.spatial[k]] = extent;
  }
  if (out_dims != DimsOf(instr.shape())) {
    return Error(instr, absl::StrCat("computed dimensions [", absl::StrJoin(out_dims, ","), "] differ from ",
                                     instr.shape().ToString(false)));
  }
  Array out(out_type, out_dims);
  auto build = [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    ConvPlan<T> plan;
    plan.lhs_strides = RowMajorStrides(lhs.dims());
    plan.in = in;
    plan.out_labels = out_labels;
    plan.out_strides = RowMajorStrides(out_dims);
    plan.out_batch = N / batch_groups;
    plan.in_features = I;
    for (int64_t k = 0; k < S; ++k) {
      const WindowDim& w = (*window)[k];
      const int64_t n = lhs.dims()[in.spatial[k]], os = out_dims[out_labels.spatial[k]];
      plan.out_spatial.push_back(os);
      plan.window_size.push_back(w.size);
      plan.window_elems *= w.size;
      std::vector<int64_t> table(os * w.size);
      for (int64_t o = 0; o < os; ++o) {
        for (int64_t e = 0; e < w.size; ++e) table[o * w.size + e] = w.InputIndex(o, e, n);
      }
      plan.input_index.push_back(std::move(table));
    }
    return Convolve<T>(lhs, rhs, std::move(plan), kernel, *window, feature_groups, batch_groups, &out);
  };
  absl::Status st;
  if (!out.is_float()) st = build(uint64_t{0});
  else if (out_type == PrimitiveType::F64) st = build(double{0});
  else st = build(float{0});  // f32, bf16, f16: XLA's evaluator computes in f32
  if (!st.ok()) return st;
  return out;
}

}  // namespace eval
}  // namespace hilo
