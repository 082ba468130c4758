#!/usr/bin/env bash
# Run tests on an emulated CPU: qemu-x86_64 (Debian package qemu-user) presents the given CPU model to Python,
# numpy and onnxruntime, whose kernels dispatch on CPUID. Default: Haswell (AVX2 without AVX-512/VNNI), where
# onnxruntime's u8s8 integer kernels saturate int16 sums. Slow (about 20x): by default only the tests whose
# expectations could depend on the CPU (quantized/integer ops, parity, onnxruntime oracles of quantized models).
#   tools/emulated_cpu.sh                      # the quantized/integer subset on Haswell
#   CPU=Skylake-Server tools/emulated_cpu.sh   # the same on an AVX-512 model
#   tools/emulated_cpu.sh tests/test_parity.py # any pytest arguments
set -euo pipefail
cd "$(dirname "$0")/.."
command -v qemu-x86_64 >/dev/null || { echo "qemu-x86_64 not found (apt-get install qemu-user)" >&2; exit 2; }
python="$(command -v python)"
cpu="${CPU:-Haswell}"
if [ "$#" -eq 0 ]; then
  set -- -q -p no:cacheprovider -k "quant or integer or qlinear or QLinear or Integer or dynamic_quantize or parity"
fi
exec qemu-x86_64 -cpu "$cpu" "$python" -m pytest "$@" 2> >(grep -v "TCG doesn't support" >&2)
