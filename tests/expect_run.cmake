# Runs CMD (a list) and checks its outcome, for negative controls and one-line-message checks:
# with EXPECT_FAIL=1 it passes only if CMD fails, otherwise only if CMD succeeds; either way the
# output must contain EXPECT.
# Usage: cmake "-DCMD=mpirun;-np;4;prog;args" -DEXPECT=text [-DEXPECT_FAIL=1] -P expect_run.cmake
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 170)
if(EXPECT_FAIL AND rc EQUAL 0)
  message(FATAL_ERROR "expected a failure, but the run succeeded:\n${out}\n${err}")
elseif(NOT EXPECT_FAIL AND NOT rc EQUAL 0)
  message(FATAL_ERROR "the run failed (${rc}):\n${out}\n${err}")
endif()
string(FIND "${out}${err}" "${EXPECT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "the run (exit ${rc}) lacks '${EXPECT}':\n${out}\n${err}")
endif()
message(STATUS "as expected (exit ${rc}): '${EXPECT}'")
