#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, from Debian's packages, for
# tests/test_slurm_local.py (docs/slurm-local.md):
#
#   tools/slurm/start-local-cluster.sh          # install if needed, start, wait until idle
#   tools/slurm/start-local-cluster.sh --stop   # stop slurmd, slurmctld and munged
#   tools/slurm/start-local-cluster.sh --status # print the daemons and the node's state
#
# Installs slurmctld, slurmd, slurm-client and munge (apt-get, Debian 12's SLURM 22.05),
# writes a munge key (if the package made none) and /etc/slurm/slurm.conf (one node,
# `localhost`, the machine's CPUs, a partition `debug`, no accounting database), and
# starts munged, slurmctld and slurmd as background daemons (no systemd needed). Idempotent:
# a second call with the cluster up and the same configuration changes nothing. The daemons
# talk to 127.0.0.1 only (controller and node); slurmctld and slurmd listen on ports 6817 and
# 6818 of every interface (SLURM has no bind address), munge-authenticated.
#
# Needs root (apt-get, /etc, daemons). Debian or Ubuntu only.
set -euo pipefail

CONF_DIR=/etc/slurm
CONF="$CONF_DIR/slurm.conf"
LOG_DIR=/var/log/slurm
CTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid
MUNGE_PID=/run/munge/munged.pid
NODE=localhost
PARTITION=debug
WAIT_SECONDS="${SLURM_LOCAL_WAIT:-60}"
PACKAGES=(slurmctld slurmd slurm-client munge)

log() { printf '[slurm-local] %s\n' "$*"; }
die() { printf '[slurm-local] error: %s\n' "$*" >&2; exit 1; }

# The process id in a pid file, if that process is alive.
alive_pid() {
    local file=$1 pid
    [[ -r $file ]] || return 1
    pid=$(tr -dc '0-9' < "$file")
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && printf '%s\n' "$pid"
}

stop_daemon() {
    local name=$1 file=$2 pid i
    if pid=$(alive_pid "$file"); then
        kill "$pid"
        for i in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -9 "$pid" 2>/dev/null || true
        fi
        log "stopped $name (pid $pid)"
    else
        log "$name is not running"
    fi
    rm -f "$file"
}

node_state() {
    sinfo --noheader --nodes="$NODE" --format=%T 2>/dev/null | head -n1 | tr -d '[:space:]'
}

status() {
    local name file pid
    for name in munged:$MUNGE_PID slurmctld:$CTLD_PID slurmd:$SLURMD_PID; do
        file=${name#*:}
        if pid=$(alive_pid "$file"); then log "${name%%:*}: running (pid $pid)"; else log "${name%%:*}: not running"; fi
    done
    if command -v sinfo >/dev/null; then
        log "node $NODE: $(node_state || true)"
    fi
}

[[ $(id -u) -eq 0 ]] || die "run as root (apt-get, /etc/slurm and the daemons need it)"

case "${1:-}" in
    --stop)
        stop_daemon slurmd "$SLURMD_PID"
        stop_daemon slurmctld "$CTLD_PID"
        stop_daemon munged "$MUNGE_PID"
        exit 0
        ;;
    --status)
        status
        exit 0
        ;;
    "" | --start) ;;
    -h | --help)
        sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) die "unknown option '$1' (use --start, --stop, --status or --help)" ;;
esac

t0=$SECONDS

# ------------------------------------------------------------------ packages
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    command -v apt-get >/dev/null || die "no apt-get: this script installs Debian's packages (${missing[*]})"
    export DEBIAN_FRONTEND=noninteractive
    # apt-get update once, when the package lists do not know the packages yet
    if ! apt-cache show "${missing[@]}" >/dev/null 2>&1; then
        log "apt-get update"
        apt-get update -qq
    fi
    log "installing ${missing[*]}"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    log "installed in $((SECONDS - t0)) s"
else
    log "packages already installed: ${PACKAGES[*]}"
fi
t_install=$((SECONDS - t0))
log "slurmctld $(dpkg-query -W -f='${Version}' slurmctld), munge $(dpkg-query -W -f='${Version}' munge)"

# ------------------------------------------------------------------ munge
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
if [[ ! -s /etc/munge/munge.key ]]; then
    if command -v mungekey >/dev/null; then
        mungekey --create --keyfile=/etc/munge/munge.key
    else
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    log "wrote a new munge key"
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
if pid=$(alive_pid "$MUNGE_PID"); then
    log "munged already running (pid $pid)"
else
    runuser -u munge -- /usr/sbin/munged --pid-file="$MUNGE_PID"
    log "started munged (pid $(alive_pid "$MUNGE_PID" || echo '?'))"
fi
for i in $(seq 1 20); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
    ((i < 20)) || die "munge does not work (see /var/log/munge/munged.log)"
    sleep 0.5
done

# ------------------------------------------------------------------ slurm.conf
cpus=$(nproc)
mem_total_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
# what slurmd sees, less a quarter for the system: a node whose RealMemory exceeds the
# memory slurmd measures is drained
real_mem=$((mem_total_mb * 3 / 4))
install -d -m 0755 "$CONF_DIR" "$LOG_DIR" /var/spool/slurmctld /var/spool/slurmd
conf_new=$(mktemp)
trap 'rm -f "$conf_new"' EXIT
cat > "$conf_new" <<EOF
# Written by tools/slurm/start-local-cluster.sh: a one-node cluster on localhost.
ClusterName=local
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
SchedulerType=sched/backfill
ReturnToService=2
# refuse at sbatch a job no node can run (more CPUs or memory than the node has) rather
# than leave it pending for ever (Reason=PartitionConfig)
EnforcePartLimits=ALL
# Finished jobs stay visible to squeue for 10 minutes: there is no accounting database
# (no sacct), and the Snakemake SLURM executor polls squeue (slurm_status_command: squeue)
# only when MinJobAge is at least 120 s.
MinJobAge=600
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real_mem State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
restart=0
if [[ -f $CONF ]] && cmp -s "$conf_new" "$CONF"; then
    log "$CONF unchanged"
else
    [[ -f $CONF ]] && cp "$CONF" "$CONF.bak"
    install -m 0644 "$conf_new" "$CONF"
    log "wrote $CONF (CPUs=$cpus RealMemory=$real_mem MB, partition $PARTITION)"
    restart=1
fi

# ------------------------------------------------------------------ daemons
if ((restart)); then
    # a changed configuration: daemons still running read the old one
    alive_pid "$SLURMD_PID" >/dev/null && stop_daemon slurmd "$SLURMD_PID"
    alive_pid "$CTLD_PID" >/dev/null && stop_daemon slurmctld "$CTLD_PID"
fi
if pid=$(alive_pid "$CTLD_PID"); then
    log "slurmctld already running (pid $pid)"
else
    /usr/sbin/slurmctld
    log "started slurmctld (log $LOG_DIR/slurmctld.log)"
fi
if pid=$(alive_pid "$SLURMD_PID"); then
    log "slurmd already running (pid $pid)"
else
    /usr/sbin/slurmd -N "$NODE"
    log "started slurmd (log $LOG_DIR/slurmd.log)"
fi

# ------------------------------------------------------------------ wait until idle
deadline=$((SECONDS + WAIT_SECONDS))
state=""
resumed=0
while ((SECONDS < deadline)); do
    state=$(node_state || true)
    case "$state" in
        idle | mixed | allocated) break ;;
        down* | drain* | drained*)
            # a node left down or drained by an earlier run: return it to service once
            if ((!resumed)); then
                scontrol update nodename="$NODE" state=resume 2>/dev/null || true
                resumed=1
            fi
            ;;
    esac
    sleep 1
done
case "$state" in
    idle | mixed | allocated) ;;
    *)
        {
            echo "--- sinfo"
            sinfo -N -l 2>&1 || true
            echo "--- scontrol show node $NODE"
            scontrol show node "$NODE" 2>&1 || true
            echo "--- $LOG_DIR/slurmctld.log (last lines)"
            tail -n 20 "$LOG_DIR/slurmctld.log" 2>&1 || true
            echo "--- $LOG_DIR/slurmd.log (last lines)"
            tail -n 20 "$LOG_DIR/slurmd.log" 2>&1 || true
        } >&2
        die "node $NODE is not idle after ${WAIT_SECONDS} s (state: '${state:-no answer}')"
        ;;
esac

log "node $NODE is $state: $(sinfo --noheader --format='partition %P, %D node, %c CPUs, %m MB')"
log "ready in $((SECONDS - t0)) s (packages: ${t_install} s); stop with: $0 --stop"
