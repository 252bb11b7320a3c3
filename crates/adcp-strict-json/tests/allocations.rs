//! Memory stays bounded by the member names of the objects on the current
//! path: peak live heap bytes during `check`, measured with a counting
//! allocator.
//!
//! A binary of its own, not a module of `tests/it`: it installs its counting
//! allocator as the `#[global_allocator]`, which is process-wide (one per
//! binary), so every test sharing the binary would run on it too.
// A counting global allocator needs `unsafe impl GlobalAlloc`; it only
// forwards to the system allocator.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point
#![allow(unsafe_code)]

use adcp_strict_json::{check, Limits};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grow(delta: isize) {
    // `try_with`: the allocator can run while thread locals are torn down.
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + delta);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grow(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        grow(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grow(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Peak heap bytes allocated (above the level at entry) while checking.
fn peak_during_check(json: &[u8]) -> usize {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let result = check(json, &Limits::new(usize::MAX).with_max_depth(usize::MAX));
    let peak = PEAK.with(Cell::get) - base;
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(LIVE.with(Cell::get), base, "check leaked");
    usize::try_from(peak).unwrap()
}

#[test]
fn documents_without_objects_allocate_almost_nothing() {
    let numbers = format!("[{}0]", "123456.789e-3,".repeat(100_000));
    assert!(
        peak_during_check(numbers.as_bytes()) <= 64,
        "{}",
        peak_during_check(numbers.as_bytes())
    );
    let strings = format!("[{}\"\"]", "\"caf\\u00e9 \\ud83d\\ude00 plain text\",".repeat(50_000));
    assert!(peak_during_check(strings.as_bytes()) <= 64);
    let huge_string = format!("\"{}\"", "x".repeat(4 << 20));
    assert_eq!(peak_during_check(huge_string.as_bytes()), 0);
    // 100 000 nested arrays: one bit each.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(peak_during_check(deep.as_bytes()) <= 100_000 / 8 * 2 + 64);
}

#[test]
fn sibling_objects_do_not_accumulate() {
    let object = format!(
        "{{{}}}",
        (0..10)
            .map(|i| format!("\"member_name_{i}\":{i}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let one = peak_during_check(object.as_bytes());
    let many = format!("[{}]", vec![object.as_str(); 20_000].join(","));
    let peak = peak_during_check(many.as_bytes());
    assert!(many.len() > 3_000_000);
    assert!(peak <= one + 64, "{peak} bytes for 20 000 objects vs {one} for one");
    assert!(one < 2048, "{one}");
}

#[test]
fn names_on_the_path_bound_memory() {
    // One wide object: memory grows with its names (hash index included),
    // within a small constant factor of the name bytes.
    let n = 50_000;
    let wide = format!(
        "{{{}}}",
        (0..n).map(|i| format!("\"k{i}\":[{i}]")).collect::<Vec<_>>().join(",")
    );
    let name_bytes: usize = (0..n).map(|i| format!("k{i}").len()).sum();
    let peak = peak_during_check(wide.as_bytes());
    assert!(
        peak <= 3 * wide.len(),
        "{peak} bytes for a {} byte document",
        wide.len()
    );
    assert!(
        peak <= name_bytes + n * 48,
        "{peak} bytes for {n} names of {name_bytes} bytes"
    );
    // The densest case: short distinct names, `"abc":0,` (8 bytes each).
    let alphabet: Vec<char> = ('!'..='~').filter(|c| *c != '"' && *c != '\\').collect();
    let dense: Vec<String> = (0..n)
        .map(|i| {
            let k = alphabet.len();
            let name: String = [i % k, i / k % k, i / k / k % k].iter().map(|&j| alphabet[j]).collect();
            format!("\"{name}\":0")
        })
        .collect();
    let dense = format!("{{{}}}", dense.join(","));
    let peak = peak_during_check(dense.as_bytes());
    assert!(
        peak <= 6 * dense.len(),
        "{peak} bytes for a {} byte document",
        dense.len()
    );
    // Repeated names are not stored again.
    let repeated = format!("{{{}}}", vec!["\"same\":0"; 50_000].join(","));
    let repeat_peak = {
        let base = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(base));
        let err = check(repeated.as_bytes(), &Limits::new(usize::MAX)).unwrap_err();
        assert_eq!(err.duplicate_keys().unwrap().total(), 1);
        drop(err);
        PEAK.with(Cell::get) - base
    };
    assert!(repeat_peak <= 512, "{repeat_peak}");
}
