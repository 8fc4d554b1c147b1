// GenerateTransformerModule: a synthetic tensor-parallel x FSDP transformer
// module in XLA's HLO text syntax, for benchmarks, pass tests and the
// interpreter. Used by the hilo-gen tool and by the benchmarks in bench/.
//
// The module is what a per-device (SPMD) dump of a Neuron FSDP + TP training
// step looks like, reduced to the collective skeleton the passes read:
//
//   for each layer L (x: bf16[B, S/T, H], the sequence-parallel activation)
//     w_in  = parameter bf16[NH/T, HD, H/F]           FSDP x TP sharded weight,
//                                                      stored transposed
//     (w_in_f, tok) = all-gather(w_in, tok) dims={2}   FSDP, token-threaded
//     w_in_t = all-gather(w_in_f) dims={0}             TP, by rows: a looped-einsum
//                                                      weight the kernel folds exactly
//     w_2d  = reshape(w_in_t)   bf16[NH*HD, H]
//     x_g   = all-gather(x) dims={1}                   TP, sequence gather
//     x_n   = multiply(x_g, x_g)                       (a norm)
//     x_2d  = reshape(x_n)      bf16[B*S, H]
//     h_t   = dot(w_2d, x_2d)   bf16[NH*HD, B*S]       h^T = W^T x^T, one contracting
//                                                      dim, metadata
//     h     = reshape(transpose(h_t))  bf16[B,S,NH,HD]
//     a     = multiply(tanh(h), h)
//     w_out = parameter bf16[NH/T, HD, H/F]
//     (w_out_f, tok) = all-gather(w_out, tok) dims={2} FSDP, token-threaded
//     w_out_t = all-gather(w_out_f) dims={0}           TP
//     y     = dot(a, w_out_t)   bf16[B,S,H]            two contracting dims, metadata
//     y_s   = reduce-scatter(y) dims={1}               TP
//     x     = add(x, y_s)
//   ROOT (x, tok)
//
// Devices are numbered 0..T*F-1, TP-major: the TP groups are the F runs of
// T consecutive ids, the FSDP groups the T sets of F ids with stride T.
// Every collective gets a distinct channel id (unless `channel_ids` says
// otherwise) and a `collective_type` frontend attribute (tp_all_gather,
// tp_reduce_scatter, fsdp_all_gather) as Neuron's frontend writes them.
// The output is deterministic.
#ifndef HILO_TOOLS_HILO_GEN_TRANSFORMER_GENERATOR_H_
#define HILO_TOOLS_HILO_GEN_TRANSFORMER_GENERATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace hilo::gen {

struct TransformerOptions {
  int64_t layers = 2;
  int64_t tp = 8;
  int64_t fsdp = 4;
  int64_t batch = 1;
  int64_t seq = 2048;
  int64_t hidden = 4096;
  int64_t heads = 32;
  int64_t head_dim = 128;
  bool iota_groups = false;  // `[4,8]<=[32]` instead of `{{0,1,..},..}`
  // "unique": one id per collective; "collide": every fourth collective
  // repeats the id before it; "none": no channel ids.
  std::string channel_ids = "unique";
  bool layouts = true;         // `{2,1,0}` after every array shape
  bool operand_shapes = true;  // `bf16[2]{0} %x` rather than `%x`
  std::string module_name;     // default tp_fsdp_transformer_L<layers>
};

// Instructions per layer and outside the layers.
inline constexpr int64_t kInstructionsPerLayer = 22;
inline constexpr int64_t kFixedInstructions = 6;

inline int64_t InstructionCount(int64_t layers) {
  return kFixedInstructions + kInstructionsPerLayer * layers;
}
// The smallest layer count (at least 1) giving at least `instructions`.
int64_t LayersForInstructionCount(int64_t instructions);

// The module text; an InvalidArgument error if the dimensions do not divide
// (seq and heads by tp, hidden by fsdp) or a count is not positive.
absl::StatusOr<std::string> GenerateTransformerModule(const TransformerOptions& options);

}  // namespace hilo::gen

#endif  // HILO_TOOLS_HILO_GEN_TRANSFORMER_GENERATOR_H_
