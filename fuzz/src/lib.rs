//! What every ckpt fuzz target shares: its entry points for libFuzzer, with
//! the project's default libFuzzer flags built in, so that the plain
//! `cargo fuzz run TARGET` runs as measured (fuzz/README.md, "Defaults
//! built into the targets").
//!
//! libfuzzer-sys's `fuzz_target!` defines `LLVMFuzzerInitialize` itself and
//! gives its init block no access to the command line; [`fuzz_entry!`]
//! defines the same two functions (`LLVMFuzzerInitialize`, which installs
//! libfuzzer-sys's abort-on-panic hook as `fuzz_target!` does, and
//! `rust_fuzzer_test_input`, which libfuzzer-sys's `LLVMFuzzerTestOneInput`
//! calls), and its `LLVMFuzzerInitialize` also puts [`DEFAULT_FLAGS`] in
//! front of the user's arguments. libFuzzer parses the command line after
//! `LLVMFuzzerInitialize` returns, and a later flag overrides an earlier
//! one, so every default is overridden by the same flag given on the
//! command line (`-entropic=1` restores libFuzzer's own default). It also
//! defines `__asan_default_options`, ASan's hook for default run-time
//! options ([`ASAN_DEFAULT_OPTIONS`]; `ASAN_OPTIONS` overrides them), and
//! owns the gate of libFuzzer's comparison tracing
//! ([`__sancov_should_track`], [`TRACE_COMPARES_ENV`]).

use std::ffi::{c_char, c_int, CString};
use std::sync::atomic::{AtomicU64, Ordering};

/// The gate of the comparison hooks: while it is 0, no instrumented
/// comparison calls libFuzzer.
///
/// cargo-fuzz compiles every crate with
/// `-Cllvm-args=-sanitizer-coverage-trace-compares`: each comparison the
/// program executes calls a libFuzzer hook (`__sanitizer_cov_trace_cmp8`
/// and its kin) that records the operands for comparison-guided mutations.
/// In `system_events` those calls were 62 % of an execution's instructions
/// (callgrind, fuzz/FIGURES-2026-12-06b.md). `fuzz/Cargo.toml` adds
/// `-Cllvm-args=-sanitizer-coverage-gated-trace-callbacks` to the release
/// profile: LLVM then calls each hook only when this variable is not 0 (one
/// load per function, one test and branch per comparison). LLVM creates
/// it, 0, in every instrumented module as a weak, hidden definition, and
/// the linker keeps one. This definition is there so that Rust code can
/// name it: in a gated build LLVM turns it into one more such weak copy
/// (initialised to 0), so every module reads the one [`initialize`] sets;
/// in a build without the gate (`--dev`) it stays an ordinary static that
/// nothing reads. Its layout is the `u64` LLVM's code loads. With the gate,
/// cargo-fuzz's `--no-trace-compares` would leave LLVM nothing to gate, and
/// its coverage pass then instruments nothing at all (no coverage
/// counters): `fuzz/build.rs` refuses that build.
#[no_mangle]
pub static __sancov_should_track: AtomicU64 = AtomicU64::new(0);

/// Environment variable that turns comparison tracing back on: when it is
/// `1`, [`initialize`] sets [`__sancov_should_track`] before the first
/// input, and every comparison calls libFuzzer's hook as in a plain
/// cargo-fuzz build. libFuzzer's `-use_value_profile=1`, whose features
/// are those hooks' operands, opens the gate as well ([`wants_trace_compares`]).
/// Measured against the gate closed on these targets in
/// fuzz/FIGURES-2026-12-06c.md.
pub const TRACE_COMPARES_ENV: &str = "CKPT_FUZZ_TRACE_COMPARES";

/// Whether the comparison hooks' gate opens: [`TRACE_COMPARES_ENV`]'s
/// value is exactly `1`, or the command line (`args`, as libFuzzer gets
/// it) has `-use_value_profile=1`, which without the hooks would add no
/// feature at all.
#[must_use]
pub fn wants_trace_compares(value: Option<&std::ffi::OsStr>, args: &[CString]) -> bool {
    value.is_some_and(|v| v == "1") || args.iter().any(|a| a.as_bytes() == b"-use_value_profile=1")
}

/// libFuzzer flags put before the user's: each measured on these targets
/// (fuzz/FIGURES-2026-12-03.md).
///
/// * `-entropic=0`: libFuzzer's entropic power schedule updates a
///   frequency table for every feature of every execution (a linear scan
///   of its 100 rarest features for each); on `system_events` that was
///   39 % of all samples of a 20 s `perf record` (18 % on
///   `coordinator_events`). Side by side, 60 s from the seeds: 1.35x the
///   executions of `system_events` without a sanitizer and 1.15-1.87x
///   under ASan on every story target, even on `coordinator_events` and
///   0.86-0.90x on `task_events` without a sanitizer; edges within 2 of
///   the default or more in every pair.
pub const DEFAULT_FLAGS: &[&str] = &["-entropic=0"];

/// AddressSanitizer's run-time options for every target, which ASan reads
/// at start-up before `ASAN_OPTIONS` (so any option set there wins):
/// `malloc_context_size=1`, one frame recorded for each allocation and free
/// where ASan's default records up to 30 (0 means 1 to ASan). Recording
/// them unwound the stack and stored it in ASan's stack depot on every
/// allocation, about a tenth of a `system_events` execution under ASan
/// (fuzz/FIGURES-2026-12-06.md, fuzz/FIGURES-2026-12-06b.md).
/// Every access is still checked and every error still reported with the
/// stack where it happened; what a heap-use-after-free or double-free
/// report loses is where the memory was allocated and freed. To see that,
/// run the crashing input again with `ASAN_OPTIONS=malloc_context_size=30`
/// (libFuzzer replays an input exactly). A target without ASan never reads
/// this.
pub const ASAN_DEFAULT_OPTIONS: &std::ffi::CStr = c"malloc_context_size=1";

/// The arguments libFuzzer parses: `argv[0]`, [`DEFAULT_FLAGS`], then the
/// user's arguments in their order (so the user's win).
#[must_use]
pub fn with_defaults(args: &[CString]) -> Vec<CString> {
    let mut out = Vec::with_capacity(args.len() + DEFAULT_FLAGS.len());
    out.extend(args.first().cloned());
    out.extend(
        DEFAULT_FLAGS
            .iter()
            .map(|f| CString::new(*f).unwrap_or_default()),
    );
    out.extend(args.iter().skip(1).cloned());
    out
}

/// The body of the targets' `LLVMFuzzerInitialize`: libfuzzer-sys's own
/// initialization (the panic hook that aborts, so that libFuzzer reports a
/// panic as a crash), the comparison hooks' gate opened if
/// [`wants_trace_compares`], then the command line with
/// [`DEFAULT_FLAGS`] in front. The new argument vector is leaked on purpose: libFuzzer keeps
/// pointers into it for the whole run.
///
/// # Safety
/// `argc` and `argv` must be the pointers libFuzzer passes to
/// `LLVMFuzzerInitialize`: `*argv` points to `*argc` valid C strings
/// followed by a null pointer.
pub unsafe fn initialize(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    libfuzzer_sys::initialize(argc as *const isize, argv as *const *const *const u8);
    let no_args = argc.is_null() || argv.is_null() || (*argv).is_null();
    let n = if no_args {
        0
    } else {
        usize::try_from(*argc).unwrap_or(0)
    };
    let args: Vec<CString> = (0..n)
        .map(|i| std::ffi::CStr::from_ptr(*(*argv).add(i)).to_owned())
        .collect();
    let env = std::env::var_os(TRACE_COMPARES_ENV);
    if wants_trace_compares(env.as_deref(), &args) {
        __sancov_should_track.store(1, Ordering::Relaxed);
    }
    if no_args {
        return 0;
    }
    let all = with_defaults(&args);
    let Ok(count) = c_int::try_from(all.len()) else {
        return 0;
    };
    let mut ptrs: Vec<*mut c_char> = all.into_iter().map(CString::into_raw).collect();
    ptrs.push(std::ptr::null_mut());
    *argc = count;
    *argv = Box::leak(ptrs.into_boxed_slice()).as_mut_ptr();
    0
}

/// Defines a fuzz target's entry points for libFuzzer: `$run` (a
/// `fn(&[u8])`) on every input, with [`initialize`]'s defaults, and ASan's
/// default options ([`ASAN_DEFAULT_OPTIONS`]).
#[macro_export]
macro_rules! fuzz_entry {
    ($run:path) => {
        /// libFuzzer's initialization hook: see `ckpt_fuzz::initialize`.
        ///
        /// # Safety
        /// Called by libFuzzer only, with its own `argc` and `argv`.
        #[no_mangle]
        pub unsafe extern "C" fn LLVMFuzzerInitialize(
            argc: *mut ::std::ffi::c_int,
            argv: *mut *mut *mut ::std::ffi::c_char,
        ) -> ::std::ffi::c_int {
            $crate::initialize(argc, argv)
        }

        /// ASan's hook for default run-time options (ASan's own is a weak
        /// symbol that returns none): `ckpt_fuzz::ASAN_DEFAULT_OPTIONS`.
        #[no_mangle]
        pub extern "C" fn __asan_default_options() -> *const ::std::ffi::c_char {
            $crate::ASAN_DEFAULT_OPTIONS.as_ptr()
        }

        /// Called by libfuzzer-sys's `LLVMFuzzerTestOneInput` on each input
        /// (as `fuzz_target!` defines it: with `RUST_LIBFUZZER_DEBUG_PATH`
        /// set, `cargo fuzz fmt` asks for the input's rendering instead).
        #[no_mangle]
        #[allow(improper_ctypes_definitions)]
        pub extern "C" fn rust_fuzzer_test_input(bytes: &[u8]) -> i32 {
            if let Some(path) = ::libfuzzer_sys::rust_libfuzzer_debug_path() {
                use ::std::io::Write as _;
                let mut file = ::std::fs::File::create(path)
                    .expect("failed to create `RUST_LIBFUZZER_DEBUG_PATH` file");
                writeln!(&mut file, "{:?}", bytes)
                    .expect("failed to write to `RUST_LIBFUZZER_DEBUG_PATH` file");
                return 0;
            }
            $run(bytes);
            0
        }
    };
}
