// ReplicaGroups: the `replica_groups=` attribute of collectives, kept in the
// form it was written in (explicit list, iota, or the raw `mesh[...]` form)
// and expandable to explicit groups.
#ifndef HILO_IR_REPLICA_GROUPS_H_
#define HILO_IR_REPLICA_GROUPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace hilo {

// The iota form `[G,S]<=[d0,d1,...]T(p0,p1,...)`: the device ids
// 0..prod(d)-1, reshaped to `reshape_dims`, transposed by `transpose_perm`,
// and read as G groups of S ids each.
struct IotaReplicaGroupList {
  int64_t num_groups = 0;
  int64_t group_size = 0;
  std::vector<int64_t> reshape_dims;
  std::vector<int64_t> transpose_perm;  // empty = identity (no `T(...)` written)

  bool operator==(const IotaReplicaGroupList&) const = default;
};

class ReplicaGroups {
 public:
  enum class Form { kExplicit, kIota, kRaw };

  ReplicaGroups() = default;  // explicit and empty: `{}`
  static ReplicaGroups Explicit(std::vector<std::vector<int64_t>> groups);
  static ReplicaGroups Iota(IotaReplicaGroupList iota);
  // A form this project does not interpret (e.g. `mesh[...]`), kept verbatim.
  static ReplicaGroups Raw(std::string text);

  Form form() const { return form_; }
  bool empty() const { return form_ == Form::kExplicit && groups_.empty(); }
  const std::vector<std::vector<int64_t>>& explicit_groups() const { return groups_; }
  const IotaReplicaGroupList& iota() const { return iota_; }
  const std::string& raw() const { return raw_; }

  // The groups as explicit lists of ids, in order. Iota form is expanded
  // (an error if its numbers are inconsistent or too large); raw form is an error.
  absl::StatusOr<std::vector<std::vector<int64_t>>> Expand() const;

  // Text as XLA prints it, without the `replica_groups=` prefix:
  // `{{0,1},{2,3}}`, `{}`, `[2,4]<=[4,2]T(1,0)`, or the raw text.
  std::string ToString() const;

  // Same form and same contents (no expansion).
  bool operator==(const ReplicaGroups& other) const = default;

 private:
  Form form_ = Form::kExplicit;
  std::vector<std::vector<int64_t>> groups_;
  IotaReplicaGroupList iota_;
  std::string raw_;
};

// True if both expand to the same ordered list of ordered groups. Forms that
// do not expand compare equal only if they are textually identical.
bool ReplicaGroupsEqual(const ReplicaGroups& a, const ReplicaGroups& b);

}  // namespace hilo

#endif  // HILO_IR_REPLICA_GROUPS_H_
