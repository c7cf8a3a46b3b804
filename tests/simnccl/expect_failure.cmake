# Runs PROG under MPIRUN in MODE and passes only if the run fails and its output contains EXPECT.
# Usage: cmake -DMPIRUN="mpirun|-np|4" -DPROG=... -DMODE=... -DEXPECT=... -P expect_failure.cmake
string(REPLACE "|" ";" MPIRUN "${MPIRUN}")
execute_process(COMMAND ${MPIRUN} ${PROG} ${MODE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
message("${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "expected the run to fail, but mpirun exited 0")
endif()
string(FIND "${out}${err}" "${EXPECT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "run failed (rc=${rc}) but its output lacks '${EXPECT}'")
endif()
message("ok: run failed (rc=${rc}) with '${EXPECT}'")
