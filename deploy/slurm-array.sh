#!/bin/bash
# A sweep split over a Slurm job array: task K of N runs `compaction-sim sweep --shard K/N`
# and writes parts/shard-K/run under the shared folder given to --chdir (holding the
# transcripts and grid.toml). Each shard gets a folder of its own because a run clears stale
# build folders beside its --out, and it cannot see the processes of other nodes.
# compaction-sim must be on PATH on the nodes (the release binary, or the image of the
# top-level Dockerfile through apptainer). Submit, then merge once every task has finished:
#   jobid=$(sbatch --parsable deploy/slurm-array.sh)
#   sbatch --dependency=afterok:$jobid --chdir=/data --wrap 'compaction-sim merge parts/shard-*/run'
# tests/cli/deploy.rs runs this script with the binary's argument parser for every task, so
# it cannot drift from the CLI.
#SBATCH --job-name=compaction-sweep
#SBATCH --array=1-16
#SBATCH --chdir=/data
#SBATCH --cpus-per-task=4
#SBATCH --mem=8G
set -euo pipefail
export RAYON_NUM_THREADS="${SLURM_CPUS_PER_TASK:-4}"
exec compaction-sim sweep transcripts --grid grid.toml --quiet \
    --shard "${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}" \
    --out "parts/shard-${SLURM_ARRAY_TASK_ID}/run" --force
