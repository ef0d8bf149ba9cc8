"""Handing Manim's frames to the encoder without making new 8 MB buffers for each one.

Manim copies the camera's pixels into a new array for each frame written, and its segment encoder (PyAV)
makes every frame with `VideoFrame.from_ndarray`, which copies those 8 MB (at 1080p) twice more, to a
bytes object and then row by row into a newly allocated picture: in the profile, 2.3 ms a frame for
Manim's copy and 5-6 ms for PyAV's (16 ms alone, when every buffer is new), about what x264 itself takes
to encode the frame (6 ms at our settings). Here a frame's array comes from a few kept ones, handed
back once the encoder has taken the frame, and each encoder copies it into one RGBA picture it keeps (the
encoder's conversion to YUV makes a new picture of each frame, so that one is free to fill again). The
pixels, and the video, are the same, byte for byte.
"""

from __future__ import annotations

import collections
from contextlib import contextmanager
from fractions import Fraction


@contextmanager
def kept_frame_buffers():
    """While rendering: frames reach Manim's segment encoders through kept buffers (see the module's note)."""
    import av
    import numpy as np
    from manim.renderer.cairo_renderer import CairoRenderer
    from manim.scene import video_segment_encoder

    encoder_class = video_segment_encoder.VideoSegmentEncoder
    original_write, original_get = encoder_class.write_frame, CairoRenderer.get_frame
    # Arrays the encoder has finished with. Only an array that went to an encoder comes back here: one the
    # renderer keeps (its background, a still) never does.
    returned: collections.deque = collections.deque()

    def get_frame(renderer):
        pixels = renderer.camera.pixel_array
        while returned:  # (pop and append are atomic: the encoders' threads hand arrays back)
            frame = returned.pop()
            if frame.shape == pixels.shape and frame.dtype == pixels.dtype:
                np.copyto(frame, pixels)
                return frame
        return pixels.copy()

    def write_frame(encoder, pixels, *, repeat: int = 1) -> None:
        encoder._validate_frame(pixels, repeat)
        height, width = pixels.shape[:2]
        picture = getattr(encoder, "_picture", None)
        if picture is None:
            # The encoder's conversion to YUV makes a new picture of each frame, so this one is free to fill again.
            picture = encoder._picture = av.VideoFrame(width, height, "rgba")
            plane = picture.planes[0]
            encoder._rows = np.frombuffer(plane, np.uint8).reshape(height, plane.line_size)[:, : width * 4]
        np.copyto(encoder._rows, pixels.reshape(height, width * 4))
        time_base = Fraction(encoder.spec.frame_rate.denominator, encoder.spec.frame_rate.numerator)
        try:
            for _ in range(repeat):
                picture.pts = encoder._next_pts
                picture.time_base = time_base
                encoder._next_pts += 1
                for packet in encoder._stream.encode(picture):
                    encoder._container.mux(packet)
        except BaseException as error:
            raise encoder._operation_error("encode", error) from error
        returned.append(pixels)

    encoder_class.write_frame, CairoRenderer.get_frame = write_frame, get_frame
    try:
        yield
    finally:
        encoder_class.write_frame, CairoRenderer.get_frame = original_write, original_get

