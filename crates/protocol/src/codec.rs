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

/// Whether an I/O error from [`codec`] means the peer announced an oversized frame:
/// the codec's own error type, which it raises for nothing else.
pub fn is_frame_too_large(err: &std::io::Error) -> bool {
    err.get_ref()
        .is_some_and(|inner| inner.is::<tokio_util::codec::LengthDelimitedCodecError>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use tokio_util::codec::Decoder;

    #[test]
    fn an_oversized_frame_is_told_from_other_errors() {
        let mut buf = BytesMut::from(&((MAX_FRAME_LEN + 1) as u32).to_be_bytes()[..]);
        let e = codec().decode(&mut buf).expect_err("too large");
        assert!(is_frame_too_large(&e), "{e}");
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(!is_frame_too_large(&reset));
        let other = std::io::Error::new(std::io::ErrorKind::InvalidData, "frame size too big");
        assert!(
            !is_frame_too_large(&other),
            "decided on the type, not the text"
        );
    }
}
