#include "hilo/pass/pass_registry.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hilo/pass/pass_name.h"

namespace hilo {

bool PassRegistry::NameTaken(absl::string_view name) const {
  return RegisteredName(name).has_value();
}

std::optional<std::string> PassRegistry::RegisteredName(absl::string_view name) const {
  auto it = normalized_.find(NormalizePassName(name));
  if (it == normalized_.end()) return std::nullopt;
  return it->second;
}

void PassRegistry::RecordError(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
}

void PassRegistry::RegisterPass(std::string name, PassFactory factory) {
  RegisterPass(std::move(name), "", std::move(factory));
}

void PassRegistry::RegisterPass(std::string name, std::string description, PassFactory factory) {
  if (name.empty() || !factory) {
    RecordError(absl::InvalidArgumentError(
        absl::StrCat("pass registration '", name, "' needs a name and a factory")));
    return;
  }
  if (NameTaken(name)) {
    RecordError(absl::AlreadyExistsError(absl::StrCat("pass name '", name,
                                                      "' is registered twice")));
    return;
  }
  normalized_.emplace(NormalizePassName(name), name);
  passes_.emplace(std::move(name), Pass{std::move(factory), std::move(description)});
}

void PassRegistry::RegisterPipeline(std::string name, std::vector<std::string> pass_names) {
  if (name.empty()) {
    RecordError(absl::InvalidArgumentError("a pipeline registration needs a name"));
    return;
  }
  if (NameTaken(name)) {
    RecordError(absl::AlreadyExistsError(absl::StrCat("pass name '", name,
                                                      "' is registered twice")));
    return;
  }
  normalized_.emplace(NormalizePassName(name), name);
  pipelines_.emplace(std::move(name), Pipeline{std::move(pass_names), "", nullptr});
}

void PassRegistry::RegisterPipelineBuilder(std::string name, std::string description,
                                           PipelineBuilder builder) {
  if (name.empty() || !builder) {
    RecordError(absl::InvalidArgumentError(
        absl::StrCat("pipeline registration '", name, "' needs a name and a builder")));
    return;
  }
  if (NameTaken(name)) {
    RecordError(absl::AlreadyExistsError(absl::StrCat("pass name '", name,
                                                      "' is registered twice")));
    return;
  }
  normalized_.emplace(NormalizePassName(name), name);
  pipelines_.emplace(std::move(name), Pipeline{{}, std::move(description), std::move(builder)});
}

bool PassRegistry::HasPass(absl::string_view name) const {
  std::optional<std::string> registered = RegisteredName(name);
  return registered.has_value() && passes_.find(*registered) != passes_.end();
}

bool PassRegistry::HasPipeline(absl::string_view name) const {
  std::optional<std::string> registered = RegisteredName(name);
  return registered.has_value() && pipelines_.find(*registered) != pipelines_.end();
}

std::vector<std::string> PassRegistry::PassNames() const {
  std::vector<std::string> names;
  names.reserve(passes_.size());
  for (const auto& [name, pass] : passes_) names.push_back(name);
  return names;
}

std::vector<std::string> PassRegistry::PipelineNames() const {
  std::vector<std::string> names;
  names.reserve(pipelines_.size());
  for (const auto& [name, pipeline] : pipelines_) names.push_back(name);
  return names;
}

std::string PassRegistry::PassDescription(absl::string_view name) const {
  auto it = passes_.find(RegisteredName(name).value_or(""));
  return it == passes_.end() ? "" : it->second.description;
}

std::string PassRegistry::PipelineDescription(absl::string_view name) const {
  auto it = pipelines_.find(RegisteredName(name).value_or(""));
  if (it == pipelines_.end()) return "";
  if (it->second.builder) return it->second.description;
  return absl::StrJoin(it->second.pass_names, ",");
}

absl::Status PassRegistry::UnknownNameError(absl::string_view name) const {
  std::string message = absl::StrCat("unknown pass '", name, "'; ");
  std::vector<std::string> known = PassNames();
  for (std::string& pipeline : PipelineNames()) known.push_back(std::move(pipeline));
  if (std::optional<std::string> suggestion = SuggestPassName(name, known)) {
    absl::StrAppend(&message, "did you mean '", *suggestion, "'? ");
  }
  absl::StrAppend(&message, "valid passes: ", absl::StrJoin(PassNames(), ", "));
  if (!pipelines_.empty()) {
    absl::StrAppend(&message, "; pipelines: ", absl::StrJoin(PipelineNames(), ", "));
  }
  return absl::NotFoundError(message);
}

absl::StatusOr<std::unique_ptr<HloPassInterface>> PassRegistry::CreatePass(
    absl::string_view name, const PassOptions& options) const {
  auto it = passes_.find(RegisteredName(name).value_or(""));
  if (it == passes_.end()) return UnknownNameError(name);
  std::unique_ptr<HloPassInterface> pass = it->second.factory(options);
  if (pass == nullptr) {
    return absl::InternalError(absl::StrCat("the factory of pass '", name, "' returned null"));
  }
  return pass;
}

absl::Status PassRegistry::AddToPipeline(absl::string_view name, const PassOptions& options,
                                         HloPassPipeline* pipeline) const {
  if (HasPass(name)) {
    absl::StatusOr<std::unique_ptr<HloPassInterface>> pass = CreatePass(name, options);
    if (!pass.ok()) return pass.status();
    pipeline->AddPass(*std::move(pass));
    return absl::OkStatus();
  }
  auto it = pipelines_.find(RegisteredName(name).value_or(""));
  if (it == pipelines_.end()) return UnknownNameError(name);
  if (it->second.builder) {
    absl::Status status = it->second.builder(*this, options, pipeline);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("pipeline '", name, "': ", status.message()));
    }
    return absl::OkStatus();
  }
  // List pipelines name passes only, so expansion can not loop.
  for (const std::string& pass_name : it->second.pass_names) {
    absl::StatusOr<std::unique_ptr<HloPassInterface>> pass = CreatePass(pass_name, options);
    if (!pass.ok()) {
      return absl::Status(pass.status().code(),
                          absl::StrCat("pipeline '", name, "': ", pass.status().message()));
    }
    pipeline->AddPass(*std::move(pass));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HloPassPipeline>> PassRegistry::BuildPipeline(
    absl::Span<const std::string> names, const PassOptions& options) const {
  if (!status_.ok()) {
    return absl::InternalError(absl::StrCat("pass registry: ", status_.message()));
  }
  auto pipeline = std::make_unique<HloPassPipeline>();
  for (const std::string& name : names) {
    absl::Status status = AddToPipeline(name, options, pipeline.get());
    if (!status.ok()) return status;
  }
  return pipeline;
}

}  // namespace hilo
