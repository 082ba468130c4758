"""The one way the workflows (``check``, ``run`` of an ``.onnx`` file) convert an ONNX model: as ``convert`` does.

Data given for an input does not pin that input's dynamic dims: the model is converted with only what the user
pinned explicitly (``--input-shape``) and bound (``--constant-input``), exactly as ``nnrt-onnx convert`` would
convert it, and that model runs on the data. A ``check`` that pinned every dim from its data certified another
model than the one users run (a dynamic-batch fault passed ``check`` that way).

Only when that conversion is refused (something needs a static shape, or a value that is constant only once the
shapes are known) is the model converted again with the dims of the data given -- *specialised* -- and the result
says so, with the first reason the unspecialised conversion gave.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.issues import DYNAMIC_SHAPE
from .model_inputs import ModelInputs, override_static_dims
from .model_inputs import import_options as import_options_for


@dataclass
class Conversion:
    """A converted model and how it was converted."""

    result: object  # onnx_import.ImportResult
    options: dict  # the input_shapes / constant_inputs it was converted with
    specialised: dict[str, list[int]]  # the inputs whose dims were pinned from the data given ({}: as convert)
    unspecialised_refusal: str | None  # why the conversion as ``convert`` does it was refused (None: it was not)

    def note(self) -> str | None:
        """One line for reports, when the model had to be specialised."""
        if not self.specialised:
            return None
        pinned = ", ".join(f"{name}={'x'.join(str(d) for d in dims)}" for name, dims in self.specialised.items())
        return (f"converted with dims pinned from the inputs given ({pinned}): without them the conversion is "
                f"refused -- {self.unspecialised_refusal}")


def convert_as_convert(model, inputs: ModelInputs, **import_options) -> Conversion:
    """Convert ``model`` (a path or ModelProto; ``structure`` for the declared inputs) the way ``convert`` does; see
    the module doc. Raises ConversionError when neither conversion works (the specialised one's, when it was tried)."""
    from ..onnx_import import ConversionError, from_onnx, load_onnx, load_structure

    if inputs.override_static and inputs.shapes:  # the model as if declared with those dims (a copy, weights too)
        model = override_static_dims(model if hasattr(model, "graph") else load_onnx(str(model)), inputs.shapes)
    structure = load_structure(str(model)) if not hasattr(model, "graph") else model
    exact = import_options_for(structure, inputs)  # (validates the data's shapes against the model's dims)
    as_convert = import_options_for(structure, ModelInputs({}, inputs.shapes, inputs.constants))
    source = str(model) if not hasattr(model, "graph") else model
    try:
        return Conversion(from_onnx(source, **as_convert, **import_options), as_convert, {}, None)
    except ConversionError as refusal:
        specialised = {name: dims for name, dims in exact["input_shapes"].items()
                       if as_convert["input_shapes"].get(name) != dims}
        if not specialised:
            raise
        result = from_onnx(source, **exact, **import_options)
        reasons = sorted(refusal.issues, key=lambda issue: (not issue.is_root, issue.reason != DYNAMIC_SHAPE))
        return Conversion(result, exact, specialised, str(reasons[0]))


__all__ = ["Conversion", "convert_as_convert"]
