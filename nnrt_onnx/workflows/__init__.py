"""What the command line does, as library functions: loading and running models (inference), parity checking
against onnxruntime (parity), describing models (describe) and the generated op documentation (opdocs)."""
