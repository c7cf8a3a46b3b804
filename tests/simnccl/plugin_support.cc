// Plugin library name resolution and logging shared by the simulated NCCL's plugin loaders (plugin_support.hpp).
#include "plugin_support.hpp"

#include <dlfcn.h>
#include <strings.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace simnccl {

std::vector<std::optional<std::string>> PluginLibCandidates(const std::string& prefix, const char* name) {
  std::vector<std::optional<std::string>> out;
  const std::string value = name ? name : "";
  if (value.empty()) {
    out.emplace_back(prefix + ".so");
    return out;
  }
  // NCCL compares only the value's own length: "s", "Static" and "STATIC_PLUGIN" all name the program.
  if (strncasecmp(value.c_str(), "STATIC_PLUGIN", value.size()) == 0) {
    out.emplace_back(std::nullopt);
  } else {
    out.emplace_back(value);
  }
  const bool libraryName =
      value.rfind("lib", 0) == 0 && value.size() >= 3 && value.compare(value.size() - 3, 3, ".so") == 0;
  if (value.find('/') == std::string::npos && !libraryName) out.emplace_back(prefix + "-" + value + ".so");
  return out;
}

void* OpenPluginLib(const std::string& prefix, const char* name, std::string* tried) {
  tried->clear();
  for (const auto& candidate : PluginLibCandidates(prefix, name)) {
    if (!tried->empty()) *tried += " or ";
    *tried += candidate ? *candidate : std::string("the program itself");
    if (void* lib = dlopen(candidate ? candidate->c_str() : nullptr, RTLD_NOW | RTLD_LOCAL)) return lib;
  }
  return nullptr;
}

void PluginLog(ncclDebugLogLevel level, unsigned long, const char* file, int line, const char* fmt, ...) {
  if (level > NCCL_LOG_WARN && !std::getenv("SIMNCCL_DEBUG")) return;
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "simnccl: plugin %s:%d: ", file ? file : "?", line);
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
}

}  // namespace simnccl
