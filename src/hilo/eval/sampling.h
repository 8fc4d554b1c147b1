// Sampling along independent dimensions (issue 17, item 5): what lets the
// changed cone's regions of real models run in bounded memory and time.
//
// A region pair (cone.h) whose arrays are too large is shrunk along an
// *axis*: a dimension of a region input that every instruction of both
// sides treats independently and uniformly, e.g. the token rows of an
// activation that a norm, a dot, a convert and the collective-matmul kernel
// carry through row by row. Row i of every value on the axis is then the
// same function of row i of the region inputs that carry it (and of all of
// the inputs that do not), so comparing the two sides on k random rows is
// the same test as comparing them on k of the rows of full-size random
// inputs. The axis may be a factor of a dimension: an all-gather along it
// concatenates the members' blocks (the gathered dimension is [G, rows]), a
// reshape may merge it with its neighbours ([4096, 1024] -> [4194304] keeps
// the 4096 rows as the outer factor). Everything that does not treat the
// axis so refuses it: reductions and dot contractions over it, iota along
// it, constants, slices, pads, concatenation, reversal, gathers, sorts and
// windows along it, collectives that split it, opaque custom-calls and
// control flow. Soundness: docs/interpreter.md ("Soundness").
#ifndef HILO_EVAL_SAMPLING_H_
#define HILO_EVAL_SAMPLING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {
namespace eval {

struct SampledAxis {
  // "dim 0 of region input %multiply.47 bf16[4096,1024,32]"
  std::string where;
  int64_t size = 0;  // indices along the axis
  int64_t kept = 0;  // indices sampled
};

// Shrinks axes of the region pair (entry parameters numbered alike on both
// sides, ROOT a tuple of the region outputs in the same order) in place, the
// largest first, each to `samples` indices, until `fits(before, after)` is
// OK. Returns the axes sampled (none when the pair fits as it is). When no
// further axis can be sampled and it still does not fit: the status of
// `fits`, with why the largest remaining dimension could not be sampled.
// The modules are left valid either way (every sampled axis is consistent).
absl::StatusOr<std::vector<SampledAxis>> SampleRegion(
    HloModule* before, HloModule* after, int64_t samples,
    const std::function<absl::Status(const HloModule&, const HloModule&)>& fits);

}  // namespace eval
}  // namespace hilo

#endif  // HILO_EVAL_SAMPLING_H_
