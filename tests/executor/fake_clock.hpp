// executor tests: the fake simulated-NCCL clock this test binary exports, and a way to move it.
#pragma once

namespace ccltune::executor::testing {

// Sets the value `simncclVirtualTimeUs()` returns from now on.
void SetFakeClockUs(double us);

}  // namespace ccltune::executor::testing
