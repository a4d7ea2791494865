# Sourced by run.sh, long.sh and rate.sh. fuzz/Cargo.toml uses nightly
# cargo's profile rustflags (`cargo-features`), so every cargo command on
# this crate runs on nightly: rustup installs it when it is missing (the
# minimal profile: rustc, cargo, std), and `toolchain` holds the `+nightly`
# argument for `cargo`.
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
toolchain=(+nightly)
