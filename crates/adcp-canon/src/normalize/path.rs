//! Lossy path rules (2, 3 and 4) applied to an already canonical path.

use std::borrow::Cow;

use super::options::DirectoryIndex;

/// Rule 4: lowercases ASCII letters, leaving the two hex digits of every
/// percent-escape untouched (they are uppercase in canonical form).
pub(crate) fn lowercase(path: &str) -> Cow<'_, str> {
    let needs = {
        let mut escape = 0u8;
        path.bytes().any(|b| {
            if escape > 0 {
                escape -= 1;
                false
            } else if b == b'%' {
                escape = 2;
                false
            } else {
                b.is_ascii_uppercase()
            }
        })
    };
    if !needs {
        return Cow::Borrowed(path);
    }
    let mut out = String::with_capacity(path.len());
    let mut escape = 0u8;
    for c in path.chars() {
        if escape > 0 {
            escape -= 1;
            out.push(c);
        } else if c == '%' {
            escape = 2;
            out.push(c);
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    Cow::Owned(out)
}

/// Rule 3: drops the last segment when it is a directory index name,
/// keeping the `/` before it (`/a/index.html` becomes `/a/`).
pub(crate) fn remove_directory_index<'a>(path: &'a str, index: &DirectoryIndex, ignore_ascii_case: bool) -> &'a str {
    let Some(slash) = path.rfind('/') else {
        return path;
    };
    let (dir, last) = path.split_at(slash + 1);
    if !last.is_empty() && index.is_index(last, ignore_ascii_case) {
        dir
    } else {
        path
    }
}

/// Rule 2 (directory half): appends `/` when the last segment is non-empty
/// and has no `.` (`/a/b` becomes `/a/b/`, `/a/b.html` is kept).
pub(crate) fn add_directory_slash(path: &str) -> Cow<'_, str> {
    let last = path.rsplit('/').next().unwrap_or("");
    if last.is_empty() || last.contains('.') {
        Cow::Borrowed(path)
    } else {
        let mut out = String::with_capacity(path.len() + 1);
        out.push_str(path);
        out.push('/');
        Cow::Owned(out)
    }
}
