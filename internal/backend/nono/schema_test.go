package nono

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestSchemaMissing: nono 0.74's schema (reference/nono-0.74, or
// AGENT_SANDBOX_NONO_SCHEMA, e.g. `nono profile schema` of the nono .ci/run
// builds) declares every key agent-sandbox writes; the same schema with
// network.open_port and top-level workdir removed is caught, naming them.
func TestSchemaMissing(t *testing.T) {
	data, err := os.ReadFile(schemaPath(t))
	if err != nil {
		t.Fatal(err)
	}
	missing, err := SchemaMissing(data)
	if err != nil || len(missing) != 0 {
		t.Fatalf("SchemaMissing(%s) = %q, %v; want none", schemaPath(t), missing, err)
	}

	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	delete(s["properties"].(map[string]any), "workdir")
	net := resolveSchema(s, s["properties"].(map[string]any)["network"].(map[string]any))
	delete(net["properties"].(map[string]any), "open_port")
	broken, _ := json.Marshal(s)
	missing, err = SchemaMissing(broken)
	if err != nil || !slices.Equal(missing, []string{"network.open_port", "workdir"}) {
		t.Errorf("SchemaMissing(schema without workdir and network.open_port) = %q, %v", missing, err)
	}

	if _, err := SchemaMissing([]byte(`{"type": "object"}`)); err == nil {
		t.Error("a schema without properties was accepted")
	}
	if _, err := SchemaMissing([]byte(`nono 0.78.0`)); err == nil {
		t.Error("output that is not JSON was accepted")
	}
}
