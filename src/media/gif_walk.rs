//! Walks a GIF's block structure while its bytes stream by, with a few bytes of state, and
//! records every frame's rectangle.
//!
//! A GIF's logical screen says nothing about its frames: a 35-byte file can declare a 1×1 screen
//! and carry a 20000×20000 frame, which decoders allocate in full. Frames can sit anywhere in
//! the file, past any head the probe keeps, so they are found here, chunk by chunk, as the
//! `Sniffer` sees them. Data sub-blocks are skipped whole, never buffered.

/// What the walk found, for the probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GifFrames {
    /// Image descriptors seen.
    pub frames: u32,
    /// The smallest rectangle from (0, 0) holding the logical screen and every frame:
    /// what a decoder that draws frames onto a canvas may have to allocate.
    pub width: u32,
    pub height: u32,
    /// The block structure was broken (an unknown block where one must start).
    pub damaged: bool,
    /// The trailer (`;`) was reached.
    pub complete: bool,
}

impl GifFrames {
    /// Pixels of the rectangle holding the screen and every frame.
    pub fn canvas_pixels(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Collecting the 6-byte signature and the 7-byte logical screen descriptor.
    #[default]
    Header,
    /// Skipping `0` bytes (a colour table or a sub-block's data), then `1`.
    Skip(usize, Next),
    /// Where a block must start: `,` image, `!` extension, `;` trailer.
    Block,
    /// Collecting the 9 bytes after `,`.
    Descriptor,
    /// The extension's label byte.
    Label,
    /// The image data's LZW code size byte.
    CodeSize,
    /// A sub-block's length byte (0 ends the sequence).
    SubBlock,
    /// The trailer was seen, the signature was wrong, or the structure broke: nothing more to do.
    Stopped,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Block,
    CodeSize,
    SubBlock,
}

impl Next {
    fn state(self) -> State {
        match self {
            Next::Block => State::Block,
            Next::CodeSize => State::CodeSize,
            Next::SubBlock => State::SubBlock,
        }
    }
}

/// The walker. `frames()` is `None` until a whole GIF header went by.
#[derive(Clone, Debug, Default)]
pub struct GifWalker {
    state: State,
    buf: [u8; 13],
    filled: usize,
    found: Option<GifFrames>,
}

impl GifWalker {
    pub fn update(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            match self.state {
                State::Stopped => return,
                State::Header => {
                    if !self.collect(&mut chunk, 13) {
                        return;
                    }
                    self.header();
                }
                State::Descriptor => {
                    if !self.collect(&mut chunk, 9) {
                        return;
                    }
                    self.descriptor();
                }
                State::Skip(n, next) => {
                    let take = n.min(chunk.len());
                    chunk = &chunk[take..];
                    self.state = if take == n { next.state() } else { State::Skip(n - take, next) };
                }
                State::Block | State::Label | State::CodeSize | State::SubBlock => {
                    let byte = chunk[0];
                    chunk = &chunk[1..];
                    self.byte(byte);
                }
            }
        }
    }

    pub fn frames(&self) -> Option<GifFrames> {
        self.found
    }

    /// Appends bytes to `buf` until it holds `want`; true once it does.
    fn collect(&mut self, chunk: &mut &[u8], want: usize) -> bool {
        let take = (want - self.filled).min(chunk.len());
        self.buf[self.filled..self.filled + take].copy_from_slice(&chunk[..take]);
        self.filled += take;
        *chunk = &chunk[take..];
        if self.filled < want {
            return false;
        }
        self.filled = 0;
        true
    }

    fn header(&mut self) {
        let b = self.buf;
        if &b[..6] != b"GIF87a" && &b[..6] != b"GIF89a" {
            self.state = State::Stopped;
            return;
        }
        let width = u32::from(u16::from_le_bytes([b[6], b[7]]));
        let height = u32::from(u16::from_le_bytes([b[8], b[9]]));
        self.found = Some(GifFrames { width, height, ..GifFrames::default() });
        self.state = colour_table(b[10], Next::Block);
    }

    fn descriptor(&mut self) {
        let b = self.buf;
        let u16_at = |i: usize| u32::from(u16::from_le_bytes([b[i], b[i + 1]]));
        let (left, top, width, height) = (u16_at(0), u16_at(2), u16_at(4), u16_at(6));
        if let Some(found) = &mut self.found {
            found.frames = found.frames.saturating_add(1);
            found.width = found.width.max(left + width);
            found.height = found.height.max(top + height);
        }
        self.state = colour_table(b[8], Next::CodeSize);
    }

    fn byte(&mut self, byte: u8) {
        self.state = match (self.state, byte) {
            (State::Block, b',') => State::Descriptor,
            (State::Block, b'!') => State::Label,
            (State::Block, b';') => {
                self.mark(|f| f.complete = true);
                State::Stopped
            }
            (State::Block, _) => {
                self.mark(|f| f.damaged = true);
                State::Stopped
            }
            (State::Label | State::CodeSize, _) => State::SubBlock,
            (State::SubBlock, 0) => State::Block,
            (State::SubBlock, n) => State::Skip(usize::from(n), Next::SubBlock),
            (state, _) => state,
        };
    }

    fn mark(&mut self, f: impl FnOnce(&mut GifFrames)) {
        if let Some(found) = &mut self.found {
            f(found);
        }
    }
}

/// A colour table follows when the flags' top bit is set: 3 × 2^(size + 1) bytes.
fn colour_table(flags: u8, then: Next) -> State {
    if flags & 0x80 == 0 {
        return then.state();
    }
    State::Skip(3 << ((flags & 0x07) + 1), then)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A GIF with a `screen` logical screen and one frame per `(left, top, width, height)`,
    /// each with a one-byte data sub-block.
    pub(crate) fn gif(screen: (u16, u16), frames: &[(u16, u16, u16, u16)]) -> Vec<u8> {
        let mut b = b"GIF89a".to_vec();
        b.extend_from_slice(&screen.0.to_le_bytes());
        b.extend_from_slice(&screen.1.to_le_bytes());
        b.extend_from_slice(&[0x80, 0, 0]); // a global colour table of 2 entries
        b.extend_from_slice(&[0, 0, 0, 255, 255, 255]);
        // A graphic control extension, as animations carry.
        b.extend_from_slice(&[b'!', 0xF9, 4, 0, 10, 0, 0, 0]);
        for &(left, top, width, height) in frames {
            b.push(b',');
            for v in [left, top, width, height] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.push(0);
            b.extend_from_slice(&[2, 1, 0x44, 0]);
        }
        b.push(b';');
        b
    }

    fn walk(bytes: &[u8], chunk: usize) -> Option<GifFrames> {
        let mut w = GifWalker::default();
        for c in bytes.chunks(chunk) {
            w.update(c);
        }
        w.frames()
    }

    #[test]
    fn every_frame_widens_the_canvas_in_any_chunking() {
        let bytes = gif((1, 1), &[(0, 0, 1, 1), (10, 20, 20000, 20000)]);
        for chunk in [1, 2, 3, 7, 13, bytes.len()] {
            assert_eq!(
                walk(&bytes, chunk),
                Some(GifFrames { frames: 2, width: 20010, height: 20020, damaged: false, complete: true }),
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn a_broken_structure_and_other_formats_are_told_apart() {
        let mut bytes = gif((4, 4), &[(0, 0, 4, 4)]);
        let trailer = bytes.len() - 1;
        bytes[trailer] = b'x';
        assert!(walk(&bytes, 5).is_some_and(|f| f.damaged && !f.complete));
        assert_eq!(walk(b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 3), None);
    }
}
