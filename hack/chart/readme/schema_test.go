package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const schemaValues = `# -- Settings.
# @schema {required: true}
defaults:
  # -- How it wakes.
  # @schema {required: true, enum: [request, ask]}
  wake: request
  # -- How many.
  replicas: 2
  # -- On or off.
  enabled: false

# @schema {additionalProperties: true}
global:
  # -- A registry.
  imageRegistry: ""

# -- Extra environment.
# @schema
#   definition: env
#   type: array
#   items: {type: object, required: [name]}
extraEnv: []

# -- The other's environment.
# @schema {$ref: '#/definitions/env'}
otherEnv: []

# -- Labels.
labels: {}
`

// TestTheSchemaComesFromTheValuesComments: a map of documented keys is an
// object of exactly them; a key with no schema comment gets its default's
// type and its "# --" text; a schema comment replaces a leaf's schema and
// adds to an object's; required: true lands in the parent's list; a
// definition is filed once and referred to.
func TestTheSchemaComesFromTheValuesComments(t *testing.T) {
	b, err := Schema([]byte(schemaValues))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("the schema is not JSON: %v\n%s", err, b)
	}
	want := map[string]any{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"title":   "Napwake chart values",
		"type":    "object", "additionalProperties": false,
		"required": []any{"defaults"},
		"properties": map[string]any{
			"defaults": map[string]any{
				"type": "object", "additionalProperties": false, "description": "Settings.",
				"required": []any{"wake"},
				"properties": map[string]any{
					"wake":     map[string]any{"enum": []any{"request", "ask"}, "description": "How it wakes."},
					"replicas": map[string]any{"type": "integer", "description": "How many."},
					"enabled":  map[string]any{"type": "boolean", "description": "On or off."},
				},
			},
			"global": map[string]any{
				"type": "object", "additionalProperties": true,
				"properties": map[string]any{"imageRegistry": map[string]any{"type": "string", "description": "A registry."}},
			},
			"extraEnv": map[string]any{"$ref": "#/definitions/env"},
			"otherEnv": map[string]any{"$ref": "#/definitions/env"},
			"labels":   map[string]any{"type": "object", "description": "Labels."},
		},
		"definitions": map[string]any{
			"env": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []any{"name"}}, "description": "Extra environment."},
		},
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.MarshalIndent(got, "", "  ")
		t.Fatalf("schema:\n%s", gj)
	}
	// The order of values.yaml is kept, so the file reads as the values do.
	if strings.Index(string(b), `"defaults"`) > strings.Index(string(b), `"global"`) {
		t.Fatalf("keys out of values.yaml's order:\n%s", b)
	}
}

// TestASchemaCommentThatCannotBeReadNamesTheKey: a malformed schema comment,
// a $ref to a definition nobody files and a definition filed twice are
// errors naming the key, never a schema that silently allows anything.
func TestASchemaCommentThatCannotBeReadNamesTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, values, want string
	}{
		{"malformed", "# -- A.\n# @schema {type: [string\na: x\n", "a: its # @schema comment"},
		{"not a map", "# -- A.\n# @schema [string]\na: x\n", "want a map of JSON Schema keywords"},
		{"unknown definition", "# -- A.\n# @schema {$ref: '#/definitions/nope'}\na: []\n", "a: $ref to definitions/nope"},
		{"defined twice", "# -- A.\n# @schema {definition: d, type: array}\na: []\n# -- B.\n# @schema {definition: d, type: array}\nb: []\n", "b: definitions/d is defined twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Schema([]byte(tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Schema: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestTheSchemaCommentIsNotPartOfTheDescription: the README shows a key's
// "# --" text only.
func TestTheSchemaCommentIsNotPartOfTheDescription(t *testing.T) {
	vals, err := Values([]byte("# -- How it wakes.\n# @schema {enum: [request, ask]}\nwake: request\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 1 || vals[0].Description != "How it wakes." {
		t.Fatalf("values = %+v; want one, described \"How it wakes.\"", vals)
	}
}
