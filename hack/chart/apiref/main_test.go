package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tinyCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: example.dev
  names: {kind: Thing, plural: things, shortNames: [th]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            x-kubernetes-validations:
            - {rule: "self.size > 0", message: "size must be | positive"}
            properties:
              size: {type: integer, format: int32, minimum: 1, maximum: 9, description: "Size\n  of it."}
              mode: {type: string, default: Fast, enum: [Fast, Slow]}
              ports:
                type: array
                maxItems: 4
                items:
                  type: object
                  properties:
                    port: {type: integer}
`

// TestThePageSaysWhatTheAPIServerEnforces: each field's row carries its
// path, type, whether it is required, its default, allowed values and
// bounds, and the rules across fields are listed; a pipe in a message does
// not split the table.
func TestThePageSaysWhatTheAPIServerEnforces(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "things.yaml"), []byte(tinyCRD), 0o644); err != nil {
		t.Fatal(err)
	}
	page, err := render(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Thing (example.dev/v1)",
		"short names `th`",
		"- Refused unless: size must be \\| positive",
		"| `.spec.size` | integer (int32) | yes | Size of it. (value 1..9) |",
		"| `.spec.mode` | string |  | (default `Fast`; one of `Fast`, `Slow`) |",
		"| `.spec.ports` | list of object |  | (items ≤ 4) |",
		"| `.spec.ports[].port` | integer |  |  |",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}

func TestAnEmptyDirectoryIsAnError(t *testing.T) {
	if _, err := render(t.TempDir()); err == nil || !strings.Contains(err.Error(), "make generate") {
		t.Fatalf("render of no CRDs: %v; want an error saying to run make generate", err)
	}
}
