//! Length-delimited JSON frames.

use crate::MAX_FRAME_LEN;
use tokio_util::codec::LengthDelimitedCodec;

/// A codec for 4-byte big-endian length-prefixed frames of at most [`MAX_FRAME_LEN`]
/// bytes. Both sides use it; the payload of each frame is one JSON document.
pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .big_endian()
        .max_frame_length(MAX_FRAME_LEN)
        .new_codec()
}

/// Whether an I/O error from [`codec`] means the peer announced an oversized frame.
pub fn is_frame_too_large(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::InvalidData && err.to_string().contains("frame size too big")
}
