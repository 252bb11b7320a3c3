//! Step 5: `remove_dot_segments` (RFC 3986 §5.2.4), in place.
//!
//! Consecutive slashes are empty segments, not one boundary: `/a//b` stays
//! `/a//b`, and `/a//../b` pops the empty segment to give `/a/b`, exactly as
//! the RFC's buffer algorithm does. Runs after percent-encoding
//! normalization, so `%2E%2E` is a `..` segment (see the crate docs).

/// Rewrites the absolute path stored in `buf[start..]` in place.
///
/// `buf[start..]` must be empty or begin with `/`. Never grows the buffer
/// except to append the single `/` of an emptied path.
pub(crate) fn remove_dot_segments(buf: &mut Vec<u8>, start: usize) {
    if !has_dot_segment(&buf[start..]) {
        return;
    }
    let end = buf.len();
    // Invariant: `w <= r`, so the copy source is never overwritten before
    // it is read.
    let mut w = start;
    let mut r = start;
    while r < end {
        // buf[r] == b'/'; the segment is buf[r + 1 .. seg_end].
        let seg_start = r + 1;
        let seg_end = buf[seg_start..end]
            .iter()
            .position(|&b| b == b'/')
            .map_or(end, |p| seg_start + p);
        let is_last = seg_end == end;
        match &buf[seg_start..seg_end] {
            b"." => {}
            b".." => {
                // Drop the last output segment together with its `/`.
                if let Some(p) = buf[start..w].iter().rposition(|&b| b == b'/') {
                    w = start + p;
                }
            }
            _ => {
                buf.copy_within(r..seg_end, w);
                w += seg_end - r;
                r = seg_end;
                continue;
            }
        }
        if is_last {
            // A trailing `.` or `..` leaves the path ending in `/`.
            buf[w] = b'/';
            w += 1;
        }
        r = seg_end;
    }
    buf.truncate(w);
    if w == start {
        buf.push(b'/');
    }
}

/// Whether any segment is exactly `.` or `..`.
fn has_dot_segment(path: &[u8]) -> bool {
    path.split(|&b| b == b'/').any(|seg| seg == b"." || seg == b"..")
}

#[cfg(test)]
mod tests {
    use super::remove_dot_segments;

    fn run(path: &str) -> String {
        let mut buf = b"https://h".to_vec();
        let start = buf.len();
        buf.extend_from_slice(path.as_bytes());
        remove_dot_segments(&mut buf, start);
        String::from_utf8_lossy(&buf[start..]).into_owned()
    }

    #[test]
    fn rfc3986_examples_and_slash_preservation() {
        let cases = [
            ("/a/b/c/./../../g", "/a/g"),
            ("/mid/content=5/../6", "/mid/6"),
            ("/a/b/../c", "/a/c"),
            ("/adcp/./create_media_buy", "/adcp/create_media_buy"),
            ("/a//b", "/a//b"),
            ("/a/.//b", "/a//b"),
            ("/a//../b", "/a/b"),
            ("/a/b/..", "/a/"),
            ("/a/b/.", "/a/b/"),
            ("/..", "/"),
            ("/.", "/"),
            ("/../a", "/a"),
            ("/./a", "/a"),
            ("//..", "/"),
            ("/a/..", "/"),
            ("/", "/"),
            ("/a/", "/a/"),
            ("/...", "/..."),
            ("/.a/..b/", "/.a/..b/"),
            ("/a/../../../b", "/b"),
        ];
        for (input, want) in cases {
            assert_eq!(run(input), want, "{input}");
        }
    }
}
