// Package archtest holds the test of the import rules docs/ARCHITECTURE.md
// states (TestImportRules): only internal/backends imports the backend
// engines, the backend interface imports no plan, the view does not import
// launch, the kernel library and safefs are leaves, the decision (cli,
// posture, spec, sandboxfile) is pure. It has no code of its own.
package archtest
