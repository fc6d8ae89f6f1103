// The cost of one empty poll of a ring of pre-posted receives: MPI_Test on the ring's head (what
// mpi/transport.hpp does) against MPI_Testsome over the whole ring, for a few ring sizes. Nothing
// arrives (a job of one rank), so this is the price every idle poll of a waiting loop pays.
// usage: scripts/mpirun-lab -np 1 -- build/mpi/mpi_poll_cost [ITERATIONS]
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long iters = argc > 1 ? std::atol(argv[1]) : 2000000;
  std::printf("ring  MPI_Test(head) ns/poll  MPI_Testsome(all) ns/poll\n");
  for (int ring : {16, 64, 256, 1024}) {
    std::vector<char> buf(static_cast<std::size_t>(ring) * 64);
    std::vector<MPI_Request> req(static_cast<std::size_t>(ring));
    std::vector<int> idx(static_cast<std::size_t>(ring));
    for (int i = 0; i < ring; ++i)
      MPI_Irecv(&buf[static_cast<std::size_t>(i) * 64], 64, MPI_BYTE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD,
                &req[static_cast<std::size_t>(i)]);
    double best_test = 1e300, best_some = 1e300;
    for (int rep = 0; rep < 5; ++rep) {
      int flag = 0, out = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (long k = 0; k < iters; ++k) MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);
      auto t1 = std::chrono::steady_clock::now();
      for (long k = 0; k < iters; ++k) MPI_Testsome(ring, req.data(), &out, idx.data(), MPI_STATUSES_IGNORE);
      auto t2 = std::chrono::steady_clock::now();
      best_test =
          std::min(best_test, std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters));
      best_some =
          std::min(best_some, std::chrono::duration<double, std::nano>(t2 - t1).count() / static_cast<double>(iters));
    }
    std::printf("%4d  %23.1f  %25.1f\n", ring, best_test, best_some);
    for (auto& r : req) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }
  MPI_Finalize();
  return 0;
}
