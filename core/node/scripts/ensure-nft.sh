#!/usr/bin/env bash
# The Jepsen-style test (core/node/tests/jepsen.rs) draws real partitions
# (an nftables drop rule inside a network namespace) when it runs as root
# with `ip` and `nft`. This installs Debian's nftables when the run is root,
# apt-get is there and `nft` is not. Without it (not root, no apt, no
# network) the test still runs every other fault and prints "partitions not
# drawn"; so a failure here does not fail CI.
set -u
if command -v nft >/dev/null 2>&1; then
    echo "nft: $(nft --version)"
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "nft: not installed, and this run cannot install it (not root or no apt-get): partitions not drawn"
    exit 0
fi
if DEBIAN_FRONTEND=noninteractive apt-get install -y -q nftables >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nftables >/dev/null 2>&1; }; then
    echo "nft: installed $(nft --version)"
else
    echo "nft: apt-get could not install nftables: partitions not drawn"
fi
exit 0
