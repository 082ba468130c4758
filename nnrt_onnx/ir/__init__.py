"""The neutral intermediate representation both converters stand on: the graph of NNRt operations (graph), the
ONNX mapping rows (rows), the node metadata of exact round trips (metadata), conversion problems (issues),
attribute transforms (transforms), constant folding (fold) and the graph passes (passes)."""
