// PassRegistry: passes by name, and named pipelines, for `hilo-opt --passes=`.
//
// A pass is registered with a factory that builds it from the PassOptions
// (the hilo-opt flags). A named pipeline is either a fixed list of pass
// names or a builder that adds passes to an HloPassPipeline itself (for a
// pipeline whose passes depend on each other, e.g. one skipped when an
// earlier one found something). Names are unique across passes and
// pipelines, and every lookup treats `-` and `_` alike (pass_name.h): two
// names that differ only there count as the same name.
//
// Registration never fails loudly: registering a name twice, or a pipeline
// that lists an unknown pass, is recorded and returned by status() and by
// every BuildPipeline call, so a mistake in register_passes.cc surfaces as
// an error (and a unit test) instead of an abort.
#ifndef HILO_PASS_PASS_REGISTRY_H_
#define HILO_PASS_PASS_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hilo/pass/hlo_pass_interface.h"
#include "hilo/pass/hlo_pass_pipeline.h"
#include "hilo/pass/pass_options.h"

namespace hilo {

class PassRegistry {
 public:
  using PassFactory = std::function<std::unique_ptr<HloPassInterface>(const PassOptions&)>;
  using PipelineBuilder = std::function<absl::Status(
      const PassRegistry& registry, const PassOptions& options, HloPassPipeline* pipeline)>;

  // `description`: one line for --list-passes.
  void RegisterPass(std::string name, PassFactory factory);
  void RegisterPass(std::string name, std::string description, PassFactory factory);
  // A pipeline that expands to `pass_names`, in order (each a registered
  // pass; checked when the pipeline is built).
  void RegisterPipeline(std::string name, std::vector<std::string> pass_names);
  // A pipeline built by code; `description` is what --list-passes shows.
  void RegisterPipelineBuilder(std::string name, std::string description,
                               PipelineBuilder builder);

  // OK, or the first registration mistake.
  const absl::Status& status() const { return status_; }

  bool HasPass(absl::string_view name) const;
  bool HasPipeline(absl::string_view name) const;
  // Sorted names.
  std::vector<std::string> PassNames() const;
  std::vector<std::string> PipelineNames() const;
  // For --list-passes: the pass list of a list pipeline ("a,b,c"), or the
  // description of a builder pipeline.
  std::string PipelineDescription(absl::string_view name) const;
  // For --list-passes: the description a pass was registered with.
  std::string PassDescription(absl::string_view name) const;
  // The registered name (pass or pipeline) that `name` stands for, `-` and
  // `_` alike; nullopt if none.
  std::optional<std::string> RegisteredName(absl::string_view name) const;

  // A new instance of pass `name`; NotFound (listing the valid names) if it
  // is not a registered pass.
  absl::StatusOr<std::unique_ptr<HloPassInterface>> CreatePass(absl::string_view name,
                                                               const PassOptions& options) const;
  // Appends the passes `name` stands for (a pass or a pipeline) to `pipeline`.
  absl::Status AddToPipeline(absl::string_view name, const PassOptions& options,
                             HloPassPipeline* pipeline) const;
  // A pipeline of `names` in order, each a pass or a named pipeline.
  // NotFound for an unknown name: the message lists the valid passes and
  // pipelines.
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> BuildPipeline(
      absl::Span<const std::string> names, const PassOptions& options) const;

  // "unknown pass 'x'; valid passes: a, b; pipelines: p" as a NotFound
  // status, with "did you mean 'y'? " after the first ';' when a
  // registered name is close (SuggestPassName).
  absl::Status UnknownNameError(absl::string_view name) const;

 private:
  struct Pipeline {
    std::vector<std::string> pass_names;  // list pipeline
    std::string description;              // builder pipeline
    PipelineBuilder builder;              // set for builder pipelines
  };
  bool NameTaken(absl::string_view name) const;
  void RecordError(absl::Status status);

  struct Pass {
    PassFactory factory;
    std::string description;
  };
  std::map<std::string, Pass, std::less<>> passes_;
  std::map<std::string, Pipeline, std::less<>> pipelines_;
  // NormalizePassName(name) -> the registered name, for passes and pipelines.
  std::map<std::string, std::string, std::less<>> normalized_;
  absl::Status status_;
};

}  // namespace hilo

#endif  // HILO_PASS_PASS_REGISTRY_H_
