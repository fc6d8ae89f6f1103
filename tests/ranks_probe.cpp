// The rank bootstrap under a real launcher (scripts/slurm-lab's srun, scripts/mpirun-lab's mpirun): every
// rank learns its rank and size from the launcher's environment, the members find rank 0 through the
// rendezvous file, and the job allgathers each rank's placement. Rank 0 checks that the ranks agree on the
// size, that every rank 0..N-1 answered once, from distinct processes, and prints the job. Exit 0 when so.
#include <cstdio>
#include <set>
#include <string>

#include "common/errors.hpp"
#include "common/ranks.hpp"

int main(int argc, char** argv) {
  using namespace logpb;
  const int want = argc > 1 ? std::atoi(argv[1]) : 0;  // the size the launcher was asked for (0: any)
  try {
    LaunchOptions lo;
    lo.timeout_s = 60;
    Ranks r = Ranks::from_launcher(lo);
    const auto all = r.allgather({{"placement", r.placement(-1)}, {"size_seen", r.size()}});
    r.barrier();
    if (r.rank() != 0) return 0;
    std::set<int> ranks;
    std::set<long> pids;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const auto& e = all[i];
      if (e.at("size_seen").get<int>() != r.size()) throw std::runtime_error("a rank saw another size");
      if (e.at("placement").at("rank").get<int>() != static_cast<int>(i))
        throw std::runtime_error("entries out of rank order");
      ranks.insert(e.at("placement").at("rank").get<int>());
      pids.insert(e.at("placement").at("pid").get<long>());
    }
    if (want && r.size() != want)
      throw std::runtime_error("size " + std::to_string(r.size()) + ", asked for " + std::to_string(want));
    if (static_cast<int>(ranks.size()) != r.size() || static_cast<int>(pids.size()) != r.size())
      throw std::runtime_error("ranks or processes are not distinct");
    std::printf("ranks-probe: launcher %s, size %d, ranks 0..%d agree, %zu distinct processes\n", r.launcher().c_str(),
                r.size(), r.size() - 1, pids.size());
    for (const auto& e : all) std::printf("  %s\n", e.at("placement").dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ranks-probe: %s\n", e.what());
    return 1;
  }
}
