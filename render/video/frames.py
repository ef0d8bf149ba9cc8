"""Handing Manim's frames to the encoder without making new 8 MB buffers for each one.

Manim copies the camera's pixels into a new array for each frame written, and its segment encoder (PyAV)
makes every frame with `VideoFrame.from_ndarray`, which copies those 8 MB (at 1080p) twice more, to a
bytes object and then row by row into a newly allocated picture: in the profile, 2.3 ms a frame for
Manim's copy and 5-6 ms for PyAV's (16 ms alone, when every buffer is new), about what x264 itself takes
to encode the frame (6 ms at our settings). Here Manim's one copy is made straight into the pixels of an
RGBA picture from a small pool, which the encoder converts to YUV as it is and hands back: one copy a
frame where there were three. (Where a picture's rows are padded, at widths whose rows are not a multiple
of 64 bytes, the copy goes into a kept array and the encoder copies that into a picture of its own.)

A held picture (Manim hands a still hold over as one frame to repeat, in a segment of its own) is
converted to YUV once and encoded once: its repeats are P frames that skip every macroblock (h264.py),
written when the segment ends (or encoded by x264 after all, should another frame follow them in the same
segment), each decoding to exactly the frame before it. x264 used to spend a whole frame's work on each
repeat, refining the held picture a little each time; encoded once, it is encoded at a finer quality
instead (`held_crf`), which ends better than the refinement did (see beats.ENCODER).
"""

from __future__ import annotations

import collections
from contextlib import contextmanager

from render.engine import encoder as segment
from render.engine.internals import installed
from render.video.h264 import SkipFrames


@contextmanager
def kept_frame_buffers(held_crf: str | None = None):
    """While rendering: frames reach Manim's segment encoders through kept buffers, a held picture's repeats as
    skip frames (see the module's note); `held_crf`: x264's CRF for a segment that is one held picture."""
    import av
    import numpy as np
    from manim.renderer.cairo_renderer import CairoRenderer
    from manim.scene import video_segment_encoder

    encoder_class = video_segment_encoder.VideoSegmentEncoder
    original_finish = encoder_class.finish
    # The renderer's copy of each frame is made straight into an RGBA picture the encoder converts as it is
    # (a pool, each picture handed back once converted); where a picture's rows are padded (not the one
    # C-contiguous array Manim takes), into a kept array the encoder copies into its own picture.
    pool = Pictures(av, np)
    returned: collections.deque = collections.deque()  # kept arrays the encoder has copied

    def get_frame(renderer):
        pixels = renderer.camera.pixel_array
        taken = pool.take(pixels)
        if taken is not None:
            return taken
        while returned:  # (pop and append are atomic: the encoders' threads hand arrays back)
            frame = returned.pop()
            if frame.shape == pixels.shape and frame.dtype == pixels.dtype:
                np.copyto(frame, pixels)
                return frame
        return pixels.copy()

    def write_frame(encoder, pixels, *, repeat: int = 1) -> None:
        segment.validate(encoder, pixels, repeat)
        own = segment.state(encoder)
        pooled = pool.picture_of(pixels)
        if pooled is not None:
            picture = pooled
        else:
            height, width = pixels.shape[:2]
            if own.picture is None:
                # The conversion to YUV makes a new picture of each frame, so this one is free to fill again.
                own.picture = av.VideoFrame(width, height, "rgba")
                plane = own.picture.planes[0]
                own.rows = np.frombuffer(plane, np.uint8).reshape(height, plane.line_size)[:, : width * 4]
            picture = own.picture
            np.copyto(own.rows, pixels.reshape(height, width * 4))
            returned.append(pixels)
        try:
            # As the stream's own encode would convert it (its threads, so the same pixels), once for all repeats.
            context = segment.codec_context(encoder)
            converted = picture.reformat(context.width, context.height, context.format, threads=context.thread_count)
            if pooled is not None:
                pool.give_back(pixels)
            encode_held(encoder)  # another frame follows them: x264 encodes them after all
            if repeat > 1 and segment.at_start(encoder) and held_crf:
                # A segment that starts with a hold is one (a wait): its picture is encoded once, so at a finer
                # quality (x264 opens the stream at its first frame, taking the options then).
                context.options = {**context.options, "crf": held_crf}
            encode(encoder, converted)
            if repeat > 1 and encoder_skip_frames(encoder) is not None:
                own.held = (converted, repeat - 1)
            else:
                for _ in range(repeat - 1):
                    encode(encoder, converted)
        except BaseException as error:
            raise segment.failure(encoder, "encode", error) from error

    def finish(encoder) -> None:
        own = segment.state(encoder)
        held = own.held
        if held is None or segment.is_closed(encoder):
            original_finish(encoder)
            return
        # Manim's finish, with the held repeats written between x264's last packets and the close.
        own.held = None
        segment.mark_closed(encoder)
        try:
            try:
                write_skip_frames(encoder, held[1])
            finally:
                segment.close_file(encoder)
        except Exception as error:
            raise segment.failure(encoder, "finish", error) from error

    with installed((encoder_class, "write_frame", write_frame), (encoder_class, "finish", finish),
                   (CairoRenderer, "get_frame", get_frame)):
        yield


class Pictures:
    """RGBA pictures, each lent to the renderer as the array over its pixels and given back once converted."""

    def __init__(self, av, np):
        self.av, self.np = av, np
        self.free: collections.deque = collections.deque()  # arrays given back (by the encoders' threads)
        self.pictures: dict[int, object] = {}                 # an array's address -> its picture

    def take(self, pixels):
        """An array over a free picture's pixels, holding a copy of `pixels`; None where a picture's rows are padded."""
        np = self.np
        while self.free:
            array = self.free.pop()
            if array.shape == pixels.shape:
                np.copyto(array, pixels)
                return array
        height, width = pixels.shape[:2]
        picture = self.av.VideoFrame(width, height, "rgba")
        plane = picture.planes[0]
        if plane.line_size != width * 4 or pixels.shape[2:] != (4,) or pixels.dtype != np.uint8:
            return None
        array = np.frombuffer(plane, np.uint8).reshape(height, width, 4)
        self.pictures[array.ctypes.data] = picture
        np.copyto(array, pixels)
        return array

    def picture_of(self, pixels):
        """The picture `pixels` is the array over, if one of ours."""
        picture = self.pictures.get(pixels.ctypes.data)
        return picture if picture is not None and pixels.base is not None else None

    def give_back(self, array) -> None:
        self.free.append(array)


def encode(encoder, converted) -> None:
    """One frame through x264, at the encoder's next time; its packets muxed, and counted since the last IDR."""
    converted.pts = segment.next_time(encoder)
    converted.time_base = segment.time_base(encoder)
    mux(encoder, segment.packets_of(encoder, converted))


def mux(encoder, packets) -> None:
    own = segment.state(encoder)
    for packet in packets:
        own.since_key = 0 if packet.is_keyframe else own.since_key + 1
        segment.mux(encoder, packet)


def encode_held(encoder) -> None:
    own = segment.state(encoder)
    held = own.held
    if held is not None:
        own.held = None
        for _ in range(held[1]):
            encode(encoder, held[0])


def encoder_skip_frames(encoder) -> SkipFrames | None:
    own = segment.state(encoder)
    if not own.skip_frames_known:
        own.skip_frames = SkipFrames.for_stream(segment.codec_context(encoder).extradata)
        own.skip_frames_known = True
    return own.skip_frames


def write_skip_frames(encoder, count: int) -> None:
    """The held picture's last `count` repeats, as frames that copy the one before: x264 is drained first, so
    they follow its last frame, and the stream's frame numbers go on from there."""
    import av

    mux(encoder, segment.packets_of(encoder, None))
    own = segment.state(encoder)
    time_base = segment.time_base(encoder)
    for _ in range(count):
        packet = av.Packet(own.skip_frames.frame(own.since_key + 1))
        packet.pts = packet.dts = segment.next_time(encoder)
        packet.duration = 1
        packet.time_base = time_base
        packet.stream = segment.stream(encoder)
        mux(encoder, [packet])
