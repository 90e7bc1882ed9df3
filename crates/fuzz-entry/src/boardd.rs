//! boardd's reading of a client connection: the length-delimited codec, the
//! hello, then each frame's envelope and request, as `server::connection`
//! reads them, until the connection would be closed.

use boardd::server::{Decoded, decode, refusal};
use bytes::BytesMut;
use teamboard_protocol::codec::{codec, is_frame_too_large};
use teamboard_protocol::frame::RawClientFrame;
use tokio_util::codec::Decoder as _;

/// The bytes a client sends on one connection.
pub fn boardd_frame(data: &[u8]) {
    let mut codec = codec();
    let mut buf = BytesMut::from(data);
    let mut said_hello = false;
    loop {
        // The reader asks for frames while bytes come, then once more at the
        // end of the stream (`decode_eof`), as `FramedRead` does.
        let frame = match codec.decode(&mut buf) {
            Ok(Some(frame)) => frame,
            Ok(None) => match codec.decode_eof(&mut buf) {
                Ok(Some(frame)) => frame,
                Ok(None) => return,
                Err(e) => {
                    let _ = is_frame_too_large(&e);
                    return;
                }
            },
            Err(e) => {
                let _ = is_frame_too_large(&e);
                return;
            }
        };
        if said_hello {
            if let Decoded::Fatal(_) = decode(&frame) {
                return;
            }
            continue;
        }
        // The handshake's reading of the first frame.
        match serde_json::from_slice::<RawClientFrame>(&frame) {
            Ok(RawClientFrame::Hello(hello)) if refusal(&hello).is_none() => said_hello = true,
            _ => return,
        }
    }
}
