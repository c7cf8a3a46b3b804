// The per-process runtime object: settings, the device, and the parts it owns (see runtime.hpp).
#include "src/runtime.hpp"

#include <cstdlib>

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
