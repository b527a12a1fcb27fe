# checks.nono-schema: every nono profile agent-sandbox generates for the
# rendered agent folders (`--dry-run --json --sandbox-backend nono`, field
# `profile`), plus the built-in shell agent's, is validated against the JSON
# schema that the flake's own nono prints (`nono profile schema`), and then
# loaded by that nono (`nono profile validate`).
{
  lib,
  runCommand,
  agent-sandbox,
  nono,
  profiles,
  bash,
  jq,
  python3,
}:
let
  py = python3.withPackages (p: [ p.jsonschema ]);
  validate = builtins.toFile "validate-nono-profile.py" ''
    import json, sys
    import jsonschema
    schema = json.load(open(sys.argv[1]))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(json.load(open(sys.argv[2]))), key=str)
    for e in errors:
        print(f"{sys.argv[2]}: {'/'.join(map(str, e.absolute_path))}: {e.message}", file=sys.stderr)
    sys.exit(1 if errors else 0)
  '';
  folders = map (n: "${profiles}/${n}") profiles.names ++ [ "shell" ];
in
runCommand "agent-sandbox-nono-schema"
  {
    nativeBuildInputs = [
      agent-sandbox
      nono
      jq
      py
    ];
  }
  ''
    export HOME="$TMPDIR/home" SHELL=${bash}/bin/bash NONO_NO_UPDATE_CHECK=1
    mkdir -p "$HOME" "$TMPDIR/work" "$out"
    nono profile schema > "$out/nono-profile.schema.json"
    n=0
    for folder in ${lib.escapeShellArgs folders}; do
      id=$(basename "$folder")
      (cd "$TMPDIR/work" && agent-sandbox --dry-run --json --sandbox-backend nono "$folder") > "$TMPDIR/plan.json"
      jq -e '.profile' "$TMPDIR/plan.json" > "$out/$id.json"
      python3 ${validate} "$out/nono-profile.schema.json" "$out/$id.json"
      nono profile validate "$out/$id.json"
      n=$((n + 1))
    done
    echo "$n passed, 0 failed"
  ''
