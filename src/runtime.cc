// The per-process runtime object: settings, the device, and the parts it owns (see runtime.hpp).
#include "src/runtime.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "src/log.hpp"
#include "src/nccl_api.hpp"

namespace ccltune {

Runtime& Runtime::Get() {
  // Never destroyed: NCCL may call the plugin or the interposer from its threads during exit.
  static Runtime* rt = new Runtime();
  return *rt;
}

Runtime::Runtime() : plugin_(*this), calls_(*this), lifecycle_(*this), exporter_(*this) {
  settings_ = Settings::FromEnv(+[](const char* n) -> const char* { return getenv(n); });
  ConfigureLog(settings_.debug, settings_.debug_subsys);
  for (const std::string& w : settings_.warnings) CCLTUNE_WARN(kInit, "%s", w);
  nccl_env_limits_algo_ = getenv("NCCL_ALGO") != nullptr || getenv("NCCL_PROTO") != nullptr;
  active_ = !settings_.disable && RealNcclFound();
  if (!settings_.disable && !RealNcclFound()) {
    CCLTUNE_WARN(kInit, "no NCCL found in this process; ccltune passes every call through");
  }
  if (active_) atexit(+[] { Runtime::Get().exporter().AtExit(); });
}

config_table::TraceWriter* Runtime::trace() {
  if (settings_.trace_path.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(trace_mu_);
  if (!trace_tried_) {
    trace_tried_ = true;
    std::string path;
    for (size_t i = 0; i < settings_.trace_path.size(); ++i) {
      const char c = settings_.trace_path[i];
      const char next = i + 1 < settings_.trace_path.size() ? settings_.trace_path[i + 1] : '\0';
      if (c == '%' && next == 'p') {
        path += std::to_string(getpid());
        ++i;
      } else if (c == '%' && next == 'h') {
        char host[256] = {};
        gethostname(host, sizeof(host) - 1);
        path += host;
        ++i;
      } else {
        path += c;
      }
    }
    auto w = config_table::TraceWriter::Open(path);
    if (w.ok()) {
      trace_ = std::move(*w);
    } else {
      CCLTUNE_WARN(kInit, "CCLTUNE_TRACE: %s; no tuning trace", w.status().message());
    }
  }
  return trace_.get();
}

executor::Device* Runtime::OpenDeviceOnce() {
  std::lock_guard<std::mutex> lock(device_mu_);
  if (!device_tried_) {
    device_tried_ = true;
    auto dev = executor::OpenDevice();
    if (dev.ok()) {
      device_ = std::move(*dev);
      device_ptr_.store(device_.get(), std::memory_order_release);
    } else {
      device_error_ = std::string(dev.status().message());
    }
  }
  return device_.get();
}

}  // namespace ccltune
