# A STAND-IN for nixpkgs' lib, NOT nixpkgs' lib: only the ten functions
# nix/lib.nix uses, written here from their documented behaviour so that
# nix/tests/eval.nix can run on a machine with Nix but no copy of nixpkgs
# (the machines this project is developed on cannot fetch nixpkgs).
# .ci/nix-check says which lib it evaluated against; with a real nixpkgs lib
# (AGENT_SANDBOX_NIXPKGS_LIB, or `checks.lib-eval` in the flake) this file is
# not used.
{
  isStandIn = true;
  filterAttrs =
    pred: set:
    builtins.listToAttrs (
      builtins.concatMap (
        name:
        let
          v = set.${name};
        in
        if pred name v then
          [
            {
              inherit name;
              value = v;
            }
          ]
        else
          [ ]
      ) (builtins.attrNames set)
    );
  mapAttrs = builtins.mapAttrs;
  mapAttrsToList = f: set: map (name: f name set.${name}) (builtins.attrNames set);
  concatMap = builtins.concatMap;
  unique = builtins.foldl' (acc: x: if builtins.elem x acc then acc else acc ++ [ x ]) [ ];
  hasPrefix =
    prefix: s: builtins.substring 0 (builtins.stringLength prefix) s == prefix;
  concatStringsSep = builtins.concatStringsSep;
  optional = cond: x: if cond then [ x ] else [ ];
  optionalAttrs = cond: set: if cond then set else { };
  elem = builtins.elem;
}
