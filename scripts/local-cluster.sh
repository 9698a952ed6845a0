#!/usr/bin/env bash
# A Slurm cluster and, where scripts/local-postgres.sh is present, a
# PostgreSQL cluster on this machine, each in a temporary directory
# (docs/cluster.md):
#
#   scripts/local-cluster.sh up     # last lines: export SLURM_CONF=..., then the database URL
#   scripts/local-cluster.sh down   # uses $SLURM_CONF and local-postgres.sh's own record
#
# `up` prints `export SLURM_CONF=...` and then, when PostgreSQL was
# started, its URL as the very last line; without local-postgres.sh it
# says so on stderr and the sweeps' store is an SQLite file (--db PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pg=$here/local-postgres.sh

case "${1:-}" in
up)
    slurm_line=$(bash "$here/local-slurm.sh" up | tail -n 1)
    case "$slurm_line" in
    "export SLURM_CONF="*) ;;
    *)
        echo "local-cluster.sh: Slurm did not start" >&2
        exit 1
        ;;
    esac
    echo "$slurm_line"
    if [ -f "$pg" ]; then
        if ! url=$(bash "$pg" up | tail -n 1) || [ -z "$url" ]; then
            echo "local-cluster.sh: PostgreSQL did not start; stopping Slurm" >&2
            eval "$slurm_line"
            bash "$here/local-slurm.sh" down || true
            exit 1
        fi
        echo "$url"
    else
        echo "local-cluster.sh: no scripts/local-postgres.sh; no PostgreSQL (use --db PATH)" >&2
    fi
    ;;
down)
    rc=0
    if [ -f "$pg" ]; then bash "$pg" down || rc=1; fi
    bash "$here/local-slurm.sh" down "${2:-}" || rc=1
    exit $rc
    ;;
*)
    echo "usage: local-cluster.sh up|down [SLURM_DIR]" >&2
    exit 2
    ;;
esac
