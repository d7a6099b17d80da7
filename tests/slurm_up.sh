#!/usr/bin/env bash
# Start a throwaway single-node Slurm (munged, slurmctld, slurmd) without systemd, every file in $RUN.
#   usage: RUN=$(mktemp -d) bash tests/slurm_up.sh; export SLURM_CONF=$RUN/slurm.conf
# Root only (munged runs as the `munge` user, the fake GPUs are character devices made with mknod).
# Ports: $SLURMCTLD_PORT / $SLURMD_PORT (default 6817 / 6818), so two clusters can run side by side.
# The node advertises 32 CPUs, 64 GB and 8 fake GPUs (gres gpu:8, character devices in $RUN) whatever the
# machine has (SlurmdParameters=config_overrides), so `sbatch --test-only` accepts the GPU scripts' own
# #SBATCH requests and the CPU chain's small jobs can overlap; nothing enforces the limits (no cgroups).
# Stop: kill the PIDs in $RUN/run/slurmd.pid, $RUN/run/slurmctld.pid, $RUN/munge/munged.pid and wait
# until each has exited (tests/test_slurm.py does this in a finalizer).
set -euo pipefail
RUN=${RUN:?set RUN to an empty directory}
NODE=$(hostname -s)
CTLD_PORT=${SLURMCTLD_PORT:-6817}; SLURMD_PORT=${SLURMD_PORT:-6818}
chmod 0755 "$RUN"                                   # munged (user munge) must reach its socket dir
mkdir -p "$RUN"/{state,spool,log,run,munge}
chown munge:munge "$RUN/munge"; chmod 0755 "$RUN/munge"   # socket dir must be world-executable
mungekey -c -k "$RUN/munge/munge.key"
chown munge:munge "$RUN/munge/munge.key"; chmod 0400 "$RUN/munge/munge.key"
runuser -u munge -- munged --key-file="$RUN/munge/munge.key" --socket="$RUN/munge/munge.sock" \
  --pid-file="$RUN/munge/munged.pid" --log-file="$RUN/munge/munged.log" --seed-file="$RUN/munge/munged.seed"
for i in $(seq 0 7); do [ -e "$RUN/fakegpu$i" ] || mknod "$RUN/fakegpu$i" c 1 3; done   # /dev/null-like devices
cat > "$RUN/slurm.conf" <<CONF
ClusterName=envsynth-ci
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$RUN/munge/munge.sock
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldPidFile=$RUN/run/slurmctld.pid
SlurmdPidFile=$RUN/run/slurmd.pid
SlurmdSpoolDir=$RUN/spool
StateSaveLocation=$RUN/state
SlurmctldLogFile=$RUN/log/slurmctld.log
SlurmdLogFile=$RUN/log/slurmd.log
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$RUN/log/jobcomp.txt
MinJobAge=3600
DependencyParameters=kill_invalid_depend
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=32 RealMemory=64000 Gres=gpu:8 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP
CONF
cat > "$RUN/gres.conf" <<CONF
AutoDetect=off
NodeName=$NODE Name=gpu File=$RUN/fakegpu[0-7]
CONF
export SLURM_CONF="$RUN/slurm.conf"
slurmctld          # both daemonize and write their PID files
slurmd
for _ in $(seq 1 120); do sinfo -h -o %T 2>/dev/null | grep -q idle && exit 0; sleep 0.25; done
sinfo -N -o "%N %T %E" >&2 || true; tail -20 "$RUN/log/slurmctld.log" "$RUN/log/slurmd.log" >&2; exit 1
