package plan

import "testing"

func TestOpenExample(t *testing.T) {
	top, err := Open("../../examples/logs-by-level.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Routes) != 3 || top.Default.Name != "main" || top.Inputs[0].Schema == nil {
		t.Fatalf("unexpected topology: %+v", top)
	}
	if got := top.Fields; len(got) != 2 || got[0] != "level" || got[1] != "service" {
		t.Fatalf("fields = %v", got)
	}
}
