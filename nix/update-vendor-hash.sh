#!/usr/bin/env bash
# Recompute nix/vendor-hash (buildGoModule's vendorHash) from go.mod/go.sum:
# the NAR hash of the tree `go mod vendor` writes. Needs go and nix.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go mod vendor -o "$tmp/vendor"
nix --extra-experimental-features nix-command hash path "$tmp/vendor" > nix/vendor-hash
cat nix/vendor-hash
