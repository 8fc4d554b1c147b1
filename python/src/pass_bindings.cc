// run_passes, list_passes: the pass registry hilo-opt uses, on a Module.
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "errors.h"
#include "hilo/pass/hlo_pass_pipeline.h"
#include "hilo/pass/pass_options.h"
#include "hilo/pass/pass_registry.h"
#include "hilo/passes/register_passes.h"
#include "nlohmann/json.hpp"
#include "views.h"

namespace hilo::python {
namespace {

const PassRegistry& Registry() {
  static const PassRegistry* const registry = [] {
    auto* r = new PassRegistry();
    RegisterBuiltinPasses(*r);
    return r;
  }();
  if (!registry->status().ok()) RaiseStatus(ErrorKind::kHlo, registry->status());
  return *registry;
}

// A report value as Python objects. Recursive, but over JSON the passes
// build (a few levels: report, pipeline, pass details), never over input.
py::object JsonToPython(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(value.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(value.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(value.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(value.get<double>());
    case nlohmann::json::value_t::string:
      // Pass details may quote module text: invalid UTF-8 is replaced, as
      // hilo-opt's --report does.
      return py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(
          value.get_ref<const std::string&>().data(),
          static_cast<Py_ssize_t>(value.get_ref<const std::string&>().size()), "replace"));
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const nlohmann::json& element : value) out.append(JsonToPython(element));
      return out;
    }
    case nlohmann::json::value_t::object:
    case nlohmann::json::value_t::binary: {
      py::dict out;
      if (value.is_object()) {
        for (const auto& [key, element] : value.items()) out[py::str(key)] = JsonToPython(element);
      }
      return out;
    }
  }
  return py::none();
}

// The keyword arguments of run_passes, as hilo-opt's pass flags
// (pass_options.h); an unknown one is a TypeError naming the valid ones.
template <typename T>
T OptionValue(const std::string& key, const py::handle& value) {
  // bool options take only True/False; the int option any int, not a bool.
  const bool ok = std::is_same_v<T, bool> ? py::isinstance<py::bool_>(value)
                                          : py::isinstance<py::int_>(value) &&
                                                !py::isinstance<py::bool_>(value);
  if (!ok) {
    throw py::type_error(absl::StrCat("pass option '", key, "' must be ",
                                      std::is_same_v<T, bool> ? "a bool" : "an int", ", not ",
                                      py::str(py::type::of(value).attr("__name__")).cast<std::string>()));
  }
  return py::cast<T>(value);
}

PassOptions ToPassOptions(const py::dict& kwargs) {
  PassOptions options;
  for (const auto& [key_object, value] : kwargs) {
    const std::string key = py::cast<std::string>(key_object);
    if (key == "collective_matmul_nxd") {
      options.collective_matmul_nxd = OptionValue<bool>(key, value);
    } else if (key == "collective_permute_aggressive") {
      options.collective_permute_aggressive = OptionValue<bool>(key, value);
    } else if (key == "sb_to_sb_threshold_mb") {
      options.sb_to_sb_threshold_mb = OptionValue<int64_t>(key, value);
    } else if (key == "collective_matmul_strict") {
      options.collective_matmul_strict = OptionValue<bool>(key, value);
    } else if (key == "unique_channel_ids_skip_send_recv") {
      options.unique_channel_ids_skip_send_recv = OptionValue<bool>(key, value);
    } else if (key == "force_stream_id_injection") {
      options.force_stream_id_injection = OptionValue<bool>(key, value);
    } else {
      throw py::type_error(absl::StrCat(
          "run_passes() got an unexpected pass option '", key,
          "'; valid: collective_matmul_nxd, collective_permute_aggressive, "
          "sb_to_sb_threshold_mb, collective_matmul_strict, unique_channel_ids_skip_send_recv, "
          "force_stream_id_injection"));
    }
  }
  return options;
}

// What the C++ side returns; hilo.run_passes wraps it in a PassReport.
struct PassRun {
  bool changed = false;
  nlohmann::json entries = nlohmann::json::array();
  std::vector<std::string> explanations;
};

py::dict PassRunDict(const PassRun& run) {
  py::dict out;
  out["changed"] = run.changed;
  out["passes"] = JsonToPython(run.entries);
  out["explanations"] = py::cast(run.explanations);
  return out;
}

// Builds the pipeline of `names` (errors before anything runs leave the
// module untouched), verifies the module if needed, runs the passes without
// the GIL. The report entries are hilo-opt --report's: each pass's entry
// with "module" added.
py::dict RunPasses(ModuleHandle& handle, const std::vector<std::string>& names, bool verify,
                   bool explain, const py::dict& kwargs) {
  PassOptions options = ToPassOptions(kwargs);
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> pipeline =
      Registry().BuildPipeline(names, options);
  if (!pipeline.ok()) RaiseStatus(ErrorKind::kPass, pipeline.status());
  if (verify) EnsureVerified(handle);
  (*pipeline)->set_verification(verify ? HloPassPipeline::Verification::kAtEnd
                                        : HloPassPipeline::Verification::kNone);
  (*pipeline)->set_collect_explanations(explain);

  PassRun run;
  const std::string module_name = handle.module->name();
  (*pipeline)->set_observer([&](const HloPassInterface&, const nlohmann::json& entry) {
    nlohmann::json with_module = entry;
    with_module["module"] = module_name;
    run.entries.push_back(std::move(with_module));
  });
  absl::StatusOr<bool> changed;
  {
    WriteGuard guard(handle);
    {
      py::gil_scoped_release release;
      changed = (*pipeline)->Run(handle.module.get());
    }
    guard.set_changed(!changed.ok() || *changed);
  }
  if (changed.ok() && verify) {
    handle.verified_generation = static_cast<int64_t>(handle.generation);
  }
  if (explain) run.explanations = (*pipeline)->Explanations();
  if (!changed.ok()) {
    run.changed = true;  // unknown: what ran before the failure may have changed it
    py::dict extra;
    extra["report"] = PassRunDict(run);
    RaiseStatus(ErrorKind::kPass, changed.status(), &handle, extra);
  }
  run.changed = *changed;
  return PassRunDict(run);
}

py::dict ListPasses() {
  const PassRegistry& registry = Registry();
  py::dict pipelines;
  for (const std::string& name : registry.PipelineNames()) {
    pipelines[py::str(name)] = py::str(registry.PipelineDescription(name));
  }
  py::dict out;
  out["passes"] = py::cast(registry.PassNames());
  out["pipelines"] = pipelines;
  return out;
}

}  // namespace

void RegisterPasses(py::module_& m) {
  m.def("_run_passes", &RunPasses, py::arg("module"), py::arg("passes"), py::arg("verify"),
        py::arg("explain"), py::arg("options"));
  m.def("_list_passes", &ListPasses);
}

}  // namespace hilo::python
