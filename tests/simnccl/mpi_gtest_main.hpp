// main() of the simulated cluster's GoogleTest programs that run under mpirun: every rank runs every test (rank 0
// prints), on a world communicator made first; the exit code is the worst over ranks.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>
#include <nccl.h>

namespace simnccl_test {

inline int RunMpiTests(int argc, char** argv, int* rank, int* size, ncclComm_t* world) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  ::testing::InitGoogleTest(&argc, argv);
  if (*rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  ncclUniqueId id;
  if (*rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  if (ncclCommInitRank(world, *size, id, *rank) != ncclSuccess) MPI_Abort(MPI_COMM_WORLD, 1);
  int rc = RUN_ALL_TESTS();
  MPI_Barrier(MPI_COMM_WORLD);
  ncclCommDestroy(*world);
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

}  // namespace simnccl_test
