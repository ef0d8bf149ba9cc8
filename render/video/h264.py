"""A held picture's repeats as H.264 frames that skip every macroblock: made, not encoded.

A third of the film's frames repeat the one before (a still hold between two moves), and x264 spends as
long on a repeat as on a new picture (at our settings: converting it to YUV and analysing every
macroblock, only to find nothing changed). A P frame whose every macroblock is skipped copies its
reference exactly, so after x264 has encoded a held picture once, each repeat can be written as such a
frame: a slice header and one number (how many macroblocks to skip), a dozen bytes, made in microseconds.

Only what x264 writes at our settings is supported (CAVLC, no B frames, so picture order type 2, no
weighted prediction, one slice group); for anything else `SkipFrames.for_stream` returns None and the
repeats are encoded as before. The frames follow the stream's own numbering: frame_num carries on from
the frames x264 wrote since its last IDR frame, and each is a reference frame marked by the sliding
window, as x264's own P frames are. Nothing may be encoded after them in the same stream (x264 would
number its next frame as if they were not there): the encoder writes them last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

START_CODE = b"\x00\x00\x00\x01"
NAL_SLICE, NAL_SPS, NAL_PPS = 1, 7, 8
NAL_REF_IDC = 2  # a reference picture, as x264 marks its P frames
P_SLICE = 5      # "P, and every slice of the picture is P"
HIGH_PROFILES = {100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135}


class Unsupported(ValueError):
    """The stream uses something these frames are not written for."""


class BitReader:
    """Reads an RBSP (emulation prevention removed) bit by bit, as H.264's syntax asks."""

    def __init__(self, data: bytes):
        self.data, self.position = data, 0

    def u(self, bits: int) -> int:
        value = 0
        for _ in range(bits):
            byte = self.data[self.position >> 3]
            value = (value << 1) | ((byte >> (7 - (self.position & 7))) & 1)
            self.position += 1
        return value

    def ue(self) -> int:
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
            if zeros > 31:
                raise Unsupported("an exp-Golomb code longer than 32 bits")
        return (1 << zeros) - 1 + self.u(zeros)

    def se(self) -> int:
        code = self.ue()
        return (code + 1) // 2 if code % 2 else -(code // 2)


class BitWriter:
    def __init__(self):
        self.bits: list[int] = []

    def u(self, bits: int, value: int) -> None:
        self.bits += [(value >> shift) & 1 for shift in range(bits - 1, -1, -1)]

    def ue(self, value: int) -> None:
        code = value + 1
        self.u(code.bit_length() * 2 - 1, code)

    def se(self, value: int) -> None:
        self.ue(2 * value - 1 if value > 0 else -2 * value)

    def rbsp(self) -> bytes:
        """The bits with the RBSP's stop bit and alignment."""
        bits = self.bits + [1] + [0] * (-(len(self.bits) + 1) % 8)
        return bytes(int("".join(map(str, bits[index:index + 8])), 2) for index in range(0, len(bits), 8))


def unescape(nal: bytes) -> bytes:
    """A NAL unit's payload with its emulation prevention bytes (00 00 03) removed."""
    return nal.replace(b"\x00\x00\x03", b"\x00\x00")


def escape(rbsp: bytes) -> bytes:
    """An RBSP with emulation prevention bytes added: no 00 00 0x (x <= 3) in a NAL unit."""
    out, zeros = bytearray(), 0
    for byte in rbsp:
        if zeros >= 2 and byte <= 3:
            out.append(3)
            zeros = 0
        out.append(byte)
        zeros = zeros + 1 if byte == 0 else 0
    return bytes(out)


def nal_units(data: bytes) -> list[bytes]:
    """The NAL units of Annex B bytes (start-code separated) or of an avcC record."""
    if data[:1] == b"\x01":  # avcC: its parameter sets, each with a 16-bit length
        units, position = [], 5
        for _ in range(2):  # the SPS, then the PPS
            count = data[position] & (0x1F if not units else 0xFF)
            position += 1
            for _ in range(count):
                length = int.from_bytes(data[position:position + 2], "big")
                units.append(data[position + 2:position + 2 + length])
                position += 2 + length
        return units
    return [unit.rstrip(b"\x00") for unit in re.split(b"\x00\x00\x01", data) if unit.strip(b"\x00")]


@dataclass(frozen=True)
class StreamParameters:
    """What a slice header depends on, from the stream's sequence and picture parameter sets."""

    macroblocks: int
    log2_max_frame_num: int
    pps_id: int
    deblocking_control: bool
    redundant_pic_cnt: bool

    @classmethod
    def parse(cls, extradata: bytes) -> StreamParameters:
        units = nal_units(extradata)
        sps = next((unit for unit in units if unit and unit[0] & 0x1F == NAL_SPS), None)
        pps = next((unit for unit in units if unit and unit[0] & 0x1F == NAL_PPS), None)
        if sps is None or pps is None:
            raise Unsupported("no sequence or picture parameter set in the stream's header")
        bits = BitReader(unescape(sps[1:]))
        profile = bits.u(8)
        bits.u(16)  # constraint flags, level
        bits.ue()   # seq_parameter_set_id
        if profile in HIGH_PROFILES:
            if bits.ue() == 3:  # chroma_format_idc
                bits.u(1)
            bits.ue(), bits.ue()  # bit depths
            bits.u(1)
            if bits.u(1):
                raise Unsupported("scaling matrices")
        log2_max_frame_num = bits.ue() + 4
        poc_type = bits.ue()
        if poc_type != 2:  # 2: output order is decoding order (no B frames), nothing to count in a slice
            raise Unsupported(f"picture order count type {poc_type}")
        bits.ue()  # max_num_ref_frames
        bits.u(1)  # gaps_in_frame_num_value_allowed_flag
        width_mbs = bits.ue() + 1
        height_map_units = bits.ue() + 1
        if not bits.u(1):  # frame_mbs_only_flag
            raise Unsupported("interlaced coding")
        bits = BitReader(unescape(pps[1:]))
        pps_id = bits.ue()
        bits.ue()  # seq_parameter_set_id
        if bits.u(1):
            raise Unsupported("CABAC")
        if bits.u(1):
            raise Unsupported("bottom field picture order")
        if bits.ue():
            raise Unsupported("slice groups")
        bits.ue(), bits.ue()  # default reference counts
        if bits.u(1) or bits.u(2):
            raise Unsupported("weighted prediction")
        bits.se(), bits.se(), bits.se()  # initial QP, QS, chroma offset
        deblocking_control = bool(bits.u(1))
        bits.u(1)  # constrained_intra_pred_flag
        redundant = bool(bits.u(1))
        return cls(width_mbs * height_map_units, log2_max_frame_num, pps_id, deblocking_control, redundant)


class SkipFrames:
    """P frames that repeat the picture before them, for one stream."""

    def __init__(self, parameters: StreamParameters):
        self.parameters = parameters

    @classmethod
    def for_stream(cls, extradata: bytes | None) -> SkipFrames | None:
        """For a stream with this header (its SPS and PPS), or None where these frames are not written for it."""
        if not extradata:
            return None
        try:
            return cls(StreamParameters.parse(bytes(extradata)))
        except (Unsupported, IndexError):
            return None

    def frame(self, number: int) -> bytes:
        """The Annex B bytes of a P frame that copies the frame before it, `number` frames after the stream's
        last IDR frame (every frame between them a reference frame, as x264 writes them without B frames)."""
        p = self.parameters
        bits = BitWriter()
        bits.ue(0)                 # first_mb_in_slice
        bits.ue(P_SLICE)
        bits.ue(p.pps_id)
        bits.u(p.log2_max_frame_num, number % (1 << p.log2_max_frame_num))  # frame_num: one per reference frame
        if p.redundant_pic_cnt:
            bits.ue(0)
        bits.u(1, 0)               # num_ref_idx_active_override_flag
        bits.u(1, 0)               # ref_pic_list_modification_flag_l0
        bits.u(1, 0)               # adaptive_ref_pic_marking_mode_flag: the sliding window
        bits.se(0)                 # slice_qp_delta
        if p.deblocking_control:
            bits.ue(1)             # disable_deblocking_filter_idc: nothing to filter in a copy
        bits.ue(p.macroblocks)     # mb_skip_run: every macroblock
        header = bytes([(NAL_REF_IDC << 5) | NAL_SLICE])
        return START_CODE + header + escape(bits.rbsp())
