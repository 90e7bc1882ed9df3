//! Length-delimited JSON frames.

use crate::{MAX_FRAME_LEN, MAX_RESPONSE_LEN};
use tokio_util::codec::LengthDelimitedCodec;

/// A codec for 4-byte big-endian length-prefixed frames of at most [`MAX_FRAME_LEN`]
/// bytes: what boardd accepts from clients. The payload of each frame is one JSON
/// document.
pub fn codec() -> LengthDelimitedCodec {
    with_limit(MAX_FRAME_LEN)
}

/// The codec for frames from boardd, which may be up to [`MAX_RESPONSE_LEN`]: a
/// whole board listed at once is larger than any sane request.
pub fn response_codec() -> LengthDelimitedCodec {
    with_limit(MAX_RESPONSE_LEN)
}

fn with_limit(max: usize) -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .big_endian()
        .max_frame_length(max)
        .new_codec()
}

/// Whether an I/O error from [`codec`] means the peer announced an oversized frame.
pub fn is_frame_too_large(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::InvalidData && err.to_string().contains("frame size too big")
}
