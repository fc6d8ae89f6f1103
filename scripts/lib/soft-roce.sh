# shellcheck shell=bash
# UCX's UD transport on software RoCE, for a UCX program logpbench does not start itself (Open MPI's pml ucx
# under scripts/mpirun-lab): the rule of soft_roce_ud_workaround in ucx/transport.cpp, which logpbench's own
# UCX transport applies. UCX's UD checks each packet's destination GID and, on rdma_rxe, drops every one
# (docs/results/lab-notes.md, "What failed, and why"): ud_verbs never connects, and UCP's wire-up over it
# ends in "ud_ep.c: Fatal: UD endpoint ...: unhandled timeout error".

# The software RDMA devices of this host (those with a sysfs `parent`: rxe, siw), space-separated, or nothing.
soft_rdma_devices() {
  local d out=()
  for d in /sys/class/infiniband/*; do
    [[ -e $d/parent ]] && out+=("${d##*/}")
  done
  echo "${out[*]-}"
}

# The setting that turns the check off where it must be, or nothing: where this host has a software RDMA
# device and neither the environment nor the ARGS given (mpirun's, e.g. -x UCX_UD_VERBS_ETH_DGID_CHECK=y)
# already name the check. usage: soft_roce_ud_setting [ARGS...]
soft_roce_ud_setting() {
  [[ -n ${UCX_UD_VERBS_ETH_DGID_CHECK+x} || -n ${UCX_UD_ETH_DGID_CHECK+x} ]] && return 0  # the user's
  local a
  for a in "$@"; do [[ $a == UCX_UD_*ETH_DGID_CHECK* ]] && return 0; done
  [[ -n $(soft_rdma_devices) ]] && echo "UCX_UD_VERBS_ETH_DGID_CHECK=n"
  return 0
}
