#!/usr/bin/env bash
# The device check, one command on a machine with an NVIDIA GPU: installs the pinned `gpu` extra (JAX's CUDA
# plugin) into the project's venv, then grades every lesson's reference and samples sandboxed on the GPU and on
# this host's CPU, and prints scores, receipts and measured tables side by side (format: README, "Accelerators").
# Usage: bench/device_check.sh [gpu|tpu]      (GRADER_DEVICE_CHECK_OUT=folder keeps the results there)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/grader ] || make .venv/bin/grader
[ "${1:-gpu}" != gpu ] || .venv/bin/pip install --quiet -e '.[gpu]'
exec .venv/bin/python bench/device_check.py "${1:-gpu}"
