#!/usr/bin/env bash
# A real Slurm cluster on this machine, for the tests and for trying
# `ntprof sweep --executor slurm` (docs/cluster.md#slurm):
#
#   eval "$(scripts/local-slurm.sh up | tail -n 1)"   # exports SLURM_CONF
#   ntprof sweep models/tiny-mlp.xml --vary batch=1,2 --executor slurm --wait
#   scripts/local-slurm.sh down                      # uses $SLURM_CONF
#
# `up` makes a temporary directory holding everything: a fresh munge key
# and a munged with its own socket, pid file and log; a slurm.conf naming
# one node, localhost, with this machine's CPUs and memory, in one
# partition `local`; slurmctld's state, slurmd's spool, their logs and pid
# files. It starts munged, slurmctld and slurmd (each with -f that
# slurm.conf), waits until sinfo shows the node idle and prints
# `export SLURM_CONF=DIR/slurm.conf` as its last line. `down [DIR]` stops
# the three daemons (by the pids in their pid files) and removes DIR
# (default: the folder of $SLURM_CONF; only a folder this script made).
#
# Accounting: there is no slurmdbd, so AccountingStorageType is
# accounting_storage/none and `sacct` has nothing to show. Finished jobs
# stay in slurmctld's memory for an hour (MinJobAge=3600), where squeue
# --states=all and scontrol show them with their state and reason, and
# jobcomp/filetxt appends each finished job to DIR/jobcomp.log.
#
# slurmd runs jobs as their submitting user, which needs root: as another
# user `up` stops with a message saying so.
#
# NTP_SLURM_CPUS=N declares the node with N CPUs instead of this machine's
# count, so that N tasks of an array run at once with --shared (the tests
# use it to keep a 50-task array short on a 2-core machine; never for
# figures).
set -euo pipefail

me=local-slurm.sh
die() {
    echo "$me: $*" >&2
    exit 1
}

need() {
    for b in "$@"; do
        command -v "$b" >/dev/null 2>&1 || die "'$b' not found; install slurm-wlm and munge (scripts/deps.sh)"
    done
}

# A TCP port nothing listens on, from the range above the usual ones.
free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 20000))
        if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    die "no free TCP port found"
}

stop_pidfile() {
    local f=$1 pid
    [ -f "$f" ] || return 0
    pid=$(cat "$f" 2>/dev/null || true)
    [ -n "$pid" ] || return 0
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}

down() {
    local dir=${1:-}
    if [ -z "$dir" ] && [ -n "${SLURM_CONF:-}" ]; then dir=$(dirname "$SLURM_CONF"); fi
    [ -n "$dir" ] || die "down: which cluster? give its directory or set SLURM_CONF"
    [ -f "$dir/.ntprof-local-slurm" ] || die "down: $dir was not made by $me; not touching it"
    # Jobs first (slurmd's steps die with it), then the daemons.
    stop_pidfile "$dir/slurmd.pid"
    stop_pidfile "$dir/slurmctld.pid"
    stop_pidfile "$dir/munged.pid"
    rm -rf "$dir"
    echo "$me: stopped and removed $dir" >&2
}

up() {
    need munged mungekey slurmctld slurmd sinfo scontrol sbatch squeue
    [ "$(id -u)" = 0 ] || die "slurmd must run as root to start jobs as their user (this is uid $(id -u)); run as root, or use a real cluster"
    local base=${TMPDIR:-/tmp}
    local dir
    dir=$(mktemp -d "$base/ntprof-slurm.XXXXXX")
    touch "$dir/.ntprof-local-slurm"
    # Whatever fails from here on takes the half-built cluster down.
    trap 'echo "$me: starting failed; logs:" >&2; tail -n 5 "$dir"/*.log >&2 2>/dev/null || true; down "$dir"' ERR
    chmod 700 "$dir"
    mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
    chmod 700 "$dir/munge"

    # munge: its own key, socket, pid, seed and log.
    mungekey -c -k "$dir/munge/munge.key" >/dev/null 2>&1 ||
        dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 2>/dev/null
    chmod 400 "$dir/munge/munge.key"
    local sock=$dir/munge/munge.socket
    munged --force --socket="$sock" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
        --seed-file="$dir/munge/munged.seed" 2>"$dir/munged.err" ||
        die "munged did not start: $(cat "$dir/munged.err")"

    # The node as this machine is: CPUs and memory (MiB, less a margin
    # slurmd would otherwise find short and drain the node for).
    local cpus mem_kib mem
    cpus=${NTP_SLURM_CPUS:-$(nproc --all)}
    mem_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
    mem=$((mem_kib / 1024 * 9 / 10))
    local ctl_port d_port
    ctl_port=$(free_port)
    d_port=$(free_port)
    [ "$d_port" != "$ctl_port" ] || d_port=$((ctl_port + 1))

    cat >"$dir/slurm.conf" <<EOF
# Written by scripts/local-slurm.sh: a one-node cluster on localhost.
ClusterName=ntprof-local
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=sched_min_interval=0
MpiDefault=none
ReturnToService=2
# The node is declared as written here, even with more CPUs than it has
# (NTP_SLURM_CPUS).
SlurmdParameters=config_overrides
# No slurmdbd: accounting_storage/none (sacct shows nothing); finished jobs
# stay in slurmctld's memory an hour (squeue --states=all, scontrol) and
# are appended to jobcomp.log.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
MinJobAge=3600
MaxArraySize=10001
MaxJobCount=100000
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    export SLURM_CONF=$dir/slurm.conf
    # -i: ignore any saved state (there is none; a fresh cluster).
    slurmctld -i -f "$SLURM_CONF" 2>"$dir/slurmctld.err" ||
        die "slurmctld did not start: $(cat "$dir/slurmctld.err") $(tail -n 3 "$dir/slurmctld.log" 2>/dev/null)"
    slurmd -f "$SLURM_CONF" -N localhost 2>"$dir/slurmd.err" ||
        die "slurmd did not start: $(cat "$dir/slurmd.err") $(tail -n 3 "$dir/slurmd.log" 2>/dev/null)"

    local state=""
    for _ in $(seq 1 150); do
        state=$(sinfo -h -N -n localhost -o '%T' 2>/dev/null || true)
        [ "$state" = idle ] && break
        case "$state" in inval* | drain* | down*) break ;; esac
        sleep 0.2
    done
    if [ "$state" != idle ]; then
        echo "$me: the node is not idle after 30 s (sinfo: '${state:-no answer}'); logs:" >&2
        tail -n 5 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 2>/dev/null || true
        trap - ERR
        down "$dir"
        exit 1
    fi
    trap - ERR
    echo "$me: cluster ntprof-local up in $dir: node localhost ($cpus CPUs, $mem MiB), partition local, slurmctld on port $ctl_port" >&2
    echo "export SLURM_CONF=$SLURM_CONF"
}

case "${1:-}" in
up) up ;;
down) down "${2:-}" ;;
*)
    echo "usage: $me up|down [DIR]" >&2
    exit 2
    ;;
esac
