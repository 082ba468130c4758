"""Which algorithm an accelerated convolution takes: the rules measured in docs/performance.md."""
from __future__ import annotations

from . import numba_loops
from .direct import direct_possible
from .kn2row import kn2row_usable
from .winograd import WINO_MIN_CHANNELS, winograd_shape


def special_method(x, w, strides, dilation, group, out_size) -> str | None:
    """"kn2row", "winograd" or None (im2col + GEMM) for a non-1x1 convolution, by the rules measured in
    docs/performance.md (fifth round: every method on 264 layer shapes). For the 3x3 float32 layers that compiled
    Winograd transforms can take, :func:`_method_3x3`; otherwise kn2row where the input has at least twice as many
    channels as the output (and 16 or more: DenseNet's 128 -> 32, U-Net's 32 -> 16 and 16 -> 8), and without numba
    Winograd with its transforms as GEMMs for 64+ channels both ways and outputs of 8x8 or more."""
    o, kh, kw, c = w.shape
    kn2row = kn2row_usable(x, w, strides, dilation, group)
    winograd = winograd_shape(x, w, strides, dilation, group)
    if winograd and numba_loops.winograd_transforms() is not None:
        return method_3x3(c, o, out_size[0] * out_size[1], kn2row, direct_possible(x, w, group, out_size))
    if kn2row and c >= max(16, 2 * o):
        return "kn2row"
    if winograd and c >= WINO_MIN_CHANNELS and o >= WINO_MIN_CHANNELS and out_size[0] * out_size[1] >= 64:
        return "winograd"
    return None


def method_3x3(c: int, o: int, pixels: int, kn2row: bool, direct: bool = False) -> str | None:
    """The fastest method measured for a 3x3 stride-1 float32 layer of C -> O channels and ``pixels`` output pixels
    (each rule's range: time relative to im2col + GEMM, docs/performance.md fifth round; 264 shapes, 8 to 512
    channels each way):

    * outputs under 100 pixels (7x7): from 8 input channels where O < 16 C, kn2row for O <= 64 (0.46-0.99;
      Winograd's 2x2 tiles waste too much there: 0.82-1.33), Winograd for more (eighth round, against im2col into
      the register tiles that now take such 49-row products at any width: Winograd 0.65-1.1, kn2row 0.9-1.3; whole
      models with the convolutions bound to runners: ResNet-18-half 0.95-0.97, inception_v2 0.97, ResNet-50 1.0);
    * under 400 pixels (14x14): Winograd for 64+ channels both ways (0.44-0.74), else kn2row where O < 4 C or O <=
      64 (0.30-0.95), else Winograd from 16 channels (0.75-0.98; kn2row 1.06-1.88 there);
    * larger: kn2row for O <= 16 with C >= 3 O (0.26-0.91; Winograd 0.53-1.03), else Winograd from 16 channels both
      ways with O < 16 C (0.49-1.04, O >= 4 C included; 16 input channels only from 50x50 outputs: 0.79-0.91 there,
      0.95-1.08 at 28x28; 1.1-1.45 at O = 16-32 C), else kn2row where C >= max(16, 2 O); 8 input channels: im2col.
    Winograd never for O >= 16 C.

    Where the direct convolution in register tiles can run (``direct``: :func:`_direct_possible`; the None path is
    then that, not im2col), outputs of 400 pixels or more take it for 16 <= O <= 64 with C <= 32, and for O <= 16
    with 16 <= C <= 4 O from 3000 pixels (56x56) on (Winograd and kn2row 1.1-1.6x its time there: seventh round,
    the sweep re-run with the direct path); and kn2row then for O <= 24 with C >= 4 O (Winograd 1.1-1.4x)."""
    wide = o >= 16 * c  # many more output than input channels: Winograd's and kn2row's larger GEMMs do not pay
    if pixels < 100:
        if c < 8 or wide:
            return None
        return "winograd" if o > 64 else ("kn2row" if kn2row else None)
    if pixels < 400:
        if c >= 64 and o >= 64:
            return "winograd"
        if kn2row and c >= 8 and (o < 4 * c or o <= 64):
            return "kn2row"
        return "winograd" if c >= 16 and o >= 16 and not wide else None
    if direct:
        if (16 <= o <= 64 and c <= 32) or (o <= 16 and 16 <= c <= 4 * o and pixels >= 3000):
            return None
        if kn2row and o <= 24 and c >= 4 * o:
            return "kn2row"
    if kn2row and o <= 16 and c >= 3 * o:
        return "kn2row"
    if o >= 16 and (c >= 24 or (c >= 16 and pixels >= 2500)) and not wide:
        return "winograd"
    return "kn2row" if kn2row and c >= max(16, 2 * o) else None


__all__ = ["method_3x3", "special_method"]
