# The e2e test binary (`go test -c ./e2e`), prebuilt for the VM tests: they
# run it as an ordinary user with AGENT_SANDBOX_E2E_BIN pointing at the
# installed agent-sandbox, so the suite tests what the module installed.
{ agent-sandbox }:

agent-sandbox.overrideAttrs (old: {
  pname = "agent-sandbox-e2e-tests";
  buildPhase = ''
    runHook preBuild
    go test -c -o agent-sandbox-e2e.test ./e2e
    runHook postBuild
  '';
  doCheck = false;
  installPhase = ''
    runHook preInstall
    install -Dm755 agent-sandbox-e2e.test $out/bin/agent-sandbox-e2e.test
    runHook postInstall
  '';
  postInstall = "";
  meta = old.meta // {
    mainProgram = "agent-sandbox-e2e.test";
  };
})
