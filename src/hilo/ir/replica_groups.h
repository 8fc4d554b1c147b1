// ReplicaGroups: the `replica_groups=` attribute of collectives, kept in the
// form it was written in (explicit list, iota, or the raw `mesh[...]` form)
// and expandable to explicit groups.
#ifndef HILO_IR_REPLICA_GROUPS_H_
#define HILO_IR_REPLICA_GROUPS_H_

#include <cstdint>
#include <memory>
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

// A value type. The contents are immutable and shared between copies: a
// module's collectives mostly repeat a handful of group lists, and the parser
// gives every collective written with the same text the same contents, so
// copies and comparisons of equal lists are cheap and stored once.
class ReplicaGroups {
 public:
  enum class Form { kExplicit, kIota, kRaw };

  ReplicaGroups() = default;  // explicit and empty: `{}`
  static ReplicaGroups Explicit(std::vector<std::vector<int64_t>> groups);
  static ReplicaGroups Iota(IotaReplicaGroupList iota);
  // A form this project does not interpret (e.g. `mesh[...]`), kept verbatim.
  static ReplicaGroups Raw(std::string text);

  Form form() const { return rep().form; }
  bool empty() const { return form() == Form::kExplicit && explicit_groups().empty(); }
  const std::vector<std::vector<int64_t>>& explicit_groups() const { return rep().groups; }
  const IotaReplicaGroupList& iota() const { return rep().iota; }
  const std::string& raw() const { return rep().raw; }
  // True if both share their contents (then they are equal).
  bool SharesContentsWith(const ReplicaGroups& other) const { return rep_ == other.rep_; }

  // The groups as explicit lists of ids, in order. Iota form is expanded
  // (an error if its numbers are inconsistent or too large); raw form is an error.
  absl::StatusOr<std::vector<std::vector<int64_t>>> Expand() const;

  // Text as XLA prints it, without the `replica_groups=` prefix:
  // `{{0,1},{2,3}}`, `{}`, `[2,4]<=[4,2]T(1,0)`, or the raw text.
  std::string ToString() const;

  // Same form and same contents (no expansion).
  bool operator==(const ReplicaGroups& other) const;

 private:
  struct Rep {
    Form form = Form::kExplicit;
    std::vector<std::vector<int64_t>> groups;
    IotaReplicaGroupList iota;
    std::string raw;
  };
  const Rep& rep() const;
  std::shared_ptr<const Rep> rep_;  // nullptr: explicit and empty
};

// True if both expand to the same ordered list of ordered groups. Forms that
// do not expand compare equal only if they are textually identical.
bool ReplicaGroupsEqual(const ReplicaGroups& a, const ReplicaGroups& b);

}  // namespace hilo

#endif  // HILO_IR_REPLICA_GROUPS_H_
