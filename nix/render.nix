# Rendering agent folders into the store, shared by the NixOS module and
# packages.agent-profiles. The decisions (which keys, which placeholders, what
# is an error) are in lib.nix; this file only turns them into derivations.
{
  lib,
  formats,
  replaceVarsWith,
  linkFarm,
  runCommand,
}:
let
  asLib = import ./lib.nix { inherit lib; };
  toml = formats.toml { };
  json = formats.json { };

  # The files of a template folder: agent.toml, plus the sandbox files it has.
  templateFiles =
    dir:
    [ "agent.toml" ]
    ++ builtins.filter (rel: builtins.pathExists (dir + "/${rel}")) [
      "sandbox/nono.json"
      "sandbox/sbx.json"
    ];
in
rec {
  # linkFarm entries of one folder rendered from a template directory with
  # @placeholders@: each file through replaceVarsWith, given only the
  # replacements whose names occur in that file.
  templateEntries =
    name: dir: replacements:
    map (rel: {
      name = "${name}/${rel}";
      path = replaceVarsWith {
        src = dir + "/${rel}";
        name = "${name}-${baseNameOf rel}";
        replacements = asLib.replacementsFor "${name}/${rel}" (builtins.readFile (dir + "/${rel}")) replacements;
      };
    }) (templateFiles dir);

  # linkFarm entries of one folder described by module options (lib.nix's
  # agentFiles): agent.toml through formats.toml, sandbox files through
  # formats.json.
  settingsEntries =
    name: agent:
    lib.mapAttrsToList (rel: f: {
      name = "${name}/${rel}";
      path = (if f.format == "toml" then toml else json).generate "${name}-${baseNameOf rel}" f.value;
    }) (asLib.agentFiles agent);

  # One module agent's entries: its profile template when set, its settings
  # otherwise.
  agentEntries =
    name: agent:
    if agent.profile != null then
      templateEntries name agent.profile (asLib.packageReplacements agent // agent.replacements)
    else
      settingsEntries name agent;

  # The folders as one store path: <farm>/<name>/agent.toml, ...
  farm = drvName: entries: linkFarm drvName entries;

  # Runs `agent-sandbox doctor --folders-only --json` on exactly these folders
  # of the farm; the build fails when a check fails (a missing or stale store
  # path, an unknown key, an illegal grant). Its output is doctor's JSON.
  doctorCheck =
    {
      drvName,
      agent-sandbox,
      folders,
      names,
    }:
    runCommand drvName { nativeBuildInputs = [ agent-sandbox ]; } ''
      export HOME="$TMPDIR/home"
      mkdir -p "$HOME"
      set -- ${lib.concatMapStringsSep " " (n: lib.escapeShellArg "${folders}/${n}") names}
      if ! agent-sandbox doctor --folders-only --json "$@" > "$out"; then
        agent-sandbox doctor --folders-only "$@" >&2 || true
        echo "agent-sandbox: error: ${folders}: doctor found a failing check in the rendered agent folders (above)" >&2
        exit 1
      fi
    '';
}
