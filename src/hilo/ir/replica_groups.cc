#include "hilo/ir/replica_groups.h"

#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "hilo/ir/text_form.h"

namespace hilo {

// Iota lists larger than this are not expanded: nobody has that many devices,
// and expanding would allocate without bound on hostile input.
static constexpr int64_t kMaxExpandedDevices = int64_t{1} << 24;

const ReplicaGroups::Rep& ReplicaGroups::rep() const {
  static const Rep* const kEmpty = new Rep();
  return rep_ != nullptr ? *rep_ : *kEmpty;
}

bool ReplicaGroups::operator==(const ReplicaGroups& other) const {
  if (rep_ == other.rep_) return true;
  const Rep& a = rep();
  const Rep& b = other.rep();
  return a.form == b.form && a.groups == b.groups && a.iota == b.iota && a.raw == b.raw;
}

ReplicaGroups ReplicaGroups::Explicit(std::vector<std::vector<int64_t>> groups) {
  ReplicaGroups g;
  auto rep = std::make_shared<Rep>();
  rep->form = Form::kExplicit;
  rep->groups = std::move(groups);
  g.rep_ = std::move(rep);
  return g;
}

ReplicaGroups ReplicaGroups::Iota(IotaReplicaGroupList iota) {
  ReplicaGroups g;
  auto rep = std::make_shared<Rep>();
  rep->form = Form::kIota;
  rep->iota = std::move(iota);
  g.rep_ = std::move(rep);
  return g;
}

ReplicaGroups ReplicaGroups::Raw(std::string text) {
  ReplicaGroups g;
  auto rep = std::make_shared<Rep>();
  rep->form = Form::kRaw;
  rep->raw = std::move(text);
  g.rep_ = std::move(rep);
  return g;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> ReplicaGroups::Expand() const {
  switch (form()) {
    case Form::kExplicit:
      return explicit_groups();
    case Form::kRaw:
      return absl::UnimplementedError(
          absl::StrCat("replica groups in the form '", raw(), "' can not be expanded"));
    case Form::kIota:
      break;
  }
  const IotaReplicaGroupList& iota = this->iota();
  int64_t total = 1;
  for (int64_t d : iota.reshape_dims) {
    if (d < 0 || __builtin_mul_overflow(total, d, &total) || total > kMaxExpandedDevices) {
      return absl::InvalidArgumentError("iota replica group dimensions are negative or too large");
    }
  }
  int64_t expected;
  if (iota.num_groups < 0 || iota.group_size < 0 ||
      __builtin_mul_overflow(iota.num_groups, iota.group_size, &expected) || expected != total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "iota replica groups [", iota.num_groups, ",", iota.group_size, "] do not hold the ",
        total, " ids of their reshape dimensions"));
  }
  const size_t rank = iota.reshape_dims.size();
  std::vector<int64_t> perm = iota.transpose_perm;
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.begin(), perm.end(), 0);
  }
  if (perm.size() != rank) {
    return absl::InvalidArgumentError("iota replica group transpose has the wrong rank");
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= rank || seen[p]) {
      return absl::InvalidArgumentError("iota replica group transpose is not a permutation");
    }
    seen[p] = true;
  }
  // Strides of the row-major reshape_dims array.
  std::vector<int64_t> strides(rank, 1);
  for (size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * iota.reshape_dims[i];
  // Walk the transposed array in row-major order; its dimension j is dimension perm[j].
  std::vector<int64_t> flat;
  flat.reserve(total);
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t offset = 0;
    for (size_t j = 0; j < rank; ++j) offset += index[j] * strides[perm[j]];
    flat.push_back(offset);
    for (size_t j = rank; j-- > 0;) {
      if (++index[j] < iota.reshape_dims[perm[j]]) break;
      index[j] = 0;
    }
  }
  std::vector<std::vector<int64_t>> groups(iota.num_groups);
  for (int64_t g = 0; g < iota.num_groups; ++g) {
    groups[g].assign(flat.begin() + g * iota.group_size, flat.begin() + (g + 1) * iota.group_size);
  }
  return groups;
}

std::string ReplicaGroups::ToString() const {
  std::string out;
  StringTextOut text(&out);
  WriteReplicaGroups(*this, text);
  return out;
}

bool ReplicaGroupsEqual(const ReplicaGroups& a, const ReplicaGroups& b) {
  if (a == b) return true;
  auto ea = a.Expand();
  auto eb = b.Expand();
  return ea.ok() && eb.ok() && *ea == *eb;
}

}  // namespace hilo
